#include "pipeline/types.h"

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

}  // namespace torq::pipeline
