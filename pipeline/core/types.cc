#include "pipeline/core/types.h"

#include <algorithm>

namespace torq::pipeline {

const char* executor_name(Executor e) {
  switch (e) {
    case Executor::kNss: return "nss";
    case Executor::kCss: return "css";
    case Executor::kHost: return "host";
  }
  return "host";
}

std::optional<Executor> executor_from_name(const std::string& name) {
  for (Executor e : kExecutorPriority)
    if (name == executor_name(e)) return e;
  return std::nullopt;
}

std::vector<Executor> parse_executor_list(const std::string& csv) {
  std::vector<Executor> out;
  size_t start = 0;
  while (start <= csv.size()) {
    size_t end = csv.find(',', start);
    if (end == std::string::npos) end = csv.size();
    const std::string item = csv.substr(start, end - start);
    if (!item.empty()) {
      auto e = executor_from_name(item);
      if (!e) throw PipelineError("unknown executor '" + item + "' (expected nss, css or host)");
      out.push_back(*e);
    }
    start = end + 1;
  }
  return out;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::kSuccess: return "success";
    case Status::kDifference: return "difference";
    case Status::kError: return "error";
  }
  return "error";
}

std::optional<Status> status_from_name(const std::string& name) {
  for (Status s : {Status::kSuccess, Status::kDifference, Status::kError})
    if (name == status_name(s)) return s;
  return std::nullopt;
}


double ExecResult::EndToEnd::pcc() const {
  double w = -1;
  for (const auto& o : outputs) w = w < 0 ? o.pcc : std::min(w, o.pcc);
  return w;
}
double ExecResult::EndToEnd::max_abs() const {
  double w = -1;
  for (const auto& o : outputs) w = std::max(w, o.max_abs);
  return w;
}
double ExecResult::EndToEnd::max_rel() const {
  double w = -1;
  for (const auto& o : outputs) w = std::max(w, o.max_rel);
  return w;
}
bool ExecResult::EndToEnd::operator==(const EndToEnd& o) const {
  if (reference != o.reference || error != o.error || outputs.size() != o.outputs.size()) return false;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputDiff &a = outputs[i], &b = o.outputs[i];
    if (a.name != b.name || a.max_abs != b.max_abs || a.mean_abs != b.mean_abs || a.rmse != b.rmse ||
        a.max_rel != b.max_rel || a.pcc != b.pcc || a.over_tol != b.over_tol || a.size != b.size ||
        a.nan_mismatch != b.nan_mismatch)
      return false;
  }
  return true;
}

}  // namespace torq::pipeline
