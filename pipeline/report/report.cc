// Report JSON v1.1 <-> ModelReport, the compiler JSON, and atomic writes.
#include "pipeline/report/report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>

#include "pipeline/base/file_bytes.h"
#include "pipeline/core/json_limits.h"
#include "pipeline/plan/recommend.h"
#include "pipeline/report/atomic_file.h"
#include "pipeline/report/report_parts.h"
#include "pipeline/report/view.h"

namespace torq::pipeline {
namespace {

using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr const char* kVersion = "1.1";

int slot(Executor e) { return static_cast<int>(e); }

double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

// JSON has no NaN/Inf: NaN is written as null, infinities as "inf"/"-inf".
ojson json_num(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return nullptr;
  return v > 0 ? "inf" : "-inf";
}

// Keys report_to_json writes itself; anything else in a file is kept as an
// extra. An executor result's failure_report/error_class (errors) and
// max_diff/pcc (others) are written for one kind of status only: in a result
// of the other kind they are kept as extras too (the seed wrote a
// `difference`'s accuracy details into failure_report).
constexpr std::string_view kTopKeys[] = {"version", "model_name", "variant", "default_tolerance", "ops",
                                         "discovery_report", "has_critical_failures", "final_report_text"};
constexpr std::string_view kLayerKeys[] = {"executors", "_node_index", "op_type", "mlir_location",
                                           "recommended_executor", "pinned", "tolerance", "tolerance_used",
                                           "dedup_of"};
constexpr std::string_view kExecKeys[] = {"status", "tolerance_used", "timing", "outputs", "cached", "dedup_of",
                                          "worker_id", "job_id", "toolchain", "host_ms", "attempts", "chip"};
constexpr std::string_view kErrorKeys[] = {"failure_report", "error_class"};
constexpr std::string_view kMetricKeys[] = {"max_diff", "pcc"};

template <size_t N>
bool among(const std::string& key, const std::string_view (&keys)[N]) {
  return std::find(std::begin(keys), std::end(keys), key) != std::end(keys);
}

// The keys of object `j` that `known` rejects, with their JSON text, in
// file order.
template <typename Known>
ExtraFields unknown_keys(const ojson& j, Known known) {
  ExtraFields out;
  for (const auto& [key, value] : j.items())
    if (!known(key)) out.emplace_back(key, value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return out;
}

// Appends `extra` to object `j` after its keys, never over a key `j` has.
void append_extra(ojson& j, const ExtraFields& extra, const std::string& where) {
  for (const auto& [key, text] : extra) {
    if (j.contains(key)) continue;
    try {
      j[key] = ojson::parse(text);
    } catch (const nlohmann::json::parse_error&) {
      throw PipelineError(where + (where.empty() ? "" : ".") + key + ": kept field is not JSON text");
    }
  }
}

const std::string* find_extra(const ExtraFields& extra, const std::string& key) {
  for (const auto& [k, text] : extra)
    if (k == key) return &text;
  return nullptr;
}

bool is_line_col(const std::string& s) {
  const size_t colon = s.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != colon && !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// ---------------------------------------------------------------- writing

ojson tolerance_json(const Tolerance& t) {
  return {
      {"fp_avg_tol", json_num(t.fp_avg_tol)}, {"fp_max_tol", json_num(t.fp_max_tol)}, {"allowed_wrong", json_num(t.allowed_wrong)}};
}

ojson output_json(const OutputDiff& o) {
  return {{"name", o.name},
          {"max_abs", json_num(o.max_abs)},
          {"mean_abs", json_num(o.mean_abs)},
          {"rmse", json_num(o.rmse)},
          {"max_rel", json_num(o.max_rel)},
          {"pcc", json_num(o.pcc)},
          {"over_tol", o.over_tol},
          {"size", o.size},
          {"nan_mismatch", o.nan_mismatch}};
}

ojson exec_json(const ExecResult& r) {
  ojson j;
  j["status"] = status_name(r.status);
  j["tolerance_used"] = tolerance_json(r.tolerance_used);
  if (r.status == Status::kError) {
    j["failure_report"] = {{"type", r.error_class}, {"summary", r.error_message}};
    j["error_class"] = r.error_class;
  } else {
    j["max_diff"] = {{"max_rel_diff", json_num(r.max_rel)}, {"max_abs_diff", json_num(r.max_abs)}};
    j["pcc"] = json_num(r.pcc);
  }
  if (r.runtime_ms >= 0) j["timing"] = {{"runtime_ms", json_num(r.runtime_ms)}, {"runs", r.timing_runs}};
  if (!r.outputs.empty()) {
    ojson outs = ojson::array();
    for (const OutputDiff& o : r.outputs) outs.push_back(output_json(o));
    j["outputs"] = std::move(outs);
  }
  j["cached"] = r.cached;
  if (!r.dedup_of.empty()) j["dedup_of"] = r.dedup_of;
  if (!r.worker_id.empty()) j["worker_id"] = r.worker_id;
  if (!r.job_id.empty()) j["job_id"] = r.job_id;
  if (!r.toolchain.empty()) j["toolchain"] = r.toolchain;
  if (!r.chip.empty()) j["chip"] = r.chip;
  j["host_ms"] = json_num(r.host_ms);
  j["attempts"] = r.attempts;
  return j;
}

// "line:col", else the file's placeholder kept as is, else null.
ojson location_json(const LayerReport& l) {
  if (!l.info.mlir_location.empty()) return l.info.mlir_location;
  if (!l.mlir_placeholder.empty()) return l.mlir_placeholder;
  return nullptr;
}

}  // namespace

namespace report_parts {

ojson layer_json(const LayerReport& l) {
  ojson execs = ojson::object();
  for (Executor e : kExecutorPriority) {
    auto it = l.results.find(e);
    if (it == l.results.end()) continue;
    ojson ej = exec_json(it->second);
    auto extra = l.result_extra.find(e);
    if (extra != l.result_extra.end())
      append_extra(ej, extra->second, "ops." + l.info.id + ".executors." + executor_name(e));
    execs[executor_name(e)] = std::move(ej);
  }
  ojson j;
  j["executors"] = std::move(execs);
  // Omitted rather than null when unknown: the seed sorts ops by
  // .get("_node_index", inf) and cannot compare None with numbers.
  if (l.info.index >= 0) j["_node_index"] = l.info.index;
  j["op_type"] = l.info.op_type;
  j["mlir_location"] = location_json(l);
  j["recommended_executor"] = l.recommended ? ojson(executor_name(*l.recommended)) : ojson(nullptr);
  if (l.pinned) j["pinned"] = true;
  if (l.tolerance) j["tolerance"] = tolerance_json(*l.tolerance);
  if (!l.dedup_of.empty()) j["dedup_of"] = l.dedup_of;
  append_extra(j, l.extra, "ops." + l.info.id);
  return j;
}

ojson critical_failure_json(const LayerReport& l) {
  ojson details = ojson::object();
  for (Executor e : kExecutorPriority) {
    auto it = l.results.find(e);
    if (it == l.results.end()) continue;
    details[executor_name(e)] = {{"status", status_name(it->second.status)},
                                 {"report", {{"type", it->second.error_class}, {"summary", it->second.error_message}}}};
  }
  return {{"layer_id", l.info.id},
          {"node_index", l.info.index >= 0 ? ojson(l.info.index) : ojson(nullptr)},
          {"mlir_location", location_json(l)},
          {"error_details", std::move(details)}};
}

ojson summary_json(const ReportSummary& s) {
  ojson status_counts = ojson::object(), executor_counts = ojson::object(), timing = ojson::object();
  for (Executor e : kExecutorPriority) {
    const ExecutorSummary& x = s.executors[slot(e)];
    status_counts[executor_name(e)] = {{"success", x.success}, {"difference", x.difference}, {"error", x.error}};
    executor_counts[executor_name(e)] = x.recommended;
    if (x.layers_timed > 0)
      timing[executor_name(e)] = {{"total_runtime_ms", json_num(round3(x.total_runtime_ms))},
                                  {"layers_timed", x.layers_timed},
                                  {"avg_ms", json_num(round3(x.total_runtime_ms / x.layers_timed))},
                                  {"min_ms", json_num(round3(x.min_runtime_ms))},
                                  {"max_ms", json_num(round3(x.max_runtime_ms))},
                                  {"samples", x.layers_timed}};
  }
  executor_counts["none"] = s.recommended_none;
  return {{"total_layers", s.total_layers},
          {"status_counts", std::move(status_counts)},
          {"executor_counts", std::move(executor_counts)},
          {"timing_summary", std::move(timing)}};
}

ojson report_head(const ModelReport& r) {
  ojson j;
  j["version"] = kVersion;
  j["model_name"] = r.model_name;
  if (r.variant) {
    const VariantRecord& v = *r.variant;
    ojson vj = {{"model_sha256", v.model_sha256}, {"dtype", v.dtype}};
    if (!v.rounding.empty()) vj["bf16_rounding"] = v.rounding;
    if (!v.quantization.empty()) vj["quantization"] = v.quantization;
    vj["executors"] = v.executors;
    j["variant"] = std::move(vj);
  }
  j["default_tolerance"] = tolerance_json(r.default_tolerance);
  return j;
}

void report_tail(ojson& j, const ReportSummary& s, ojson critical, std::string final_text, const ExtraFields& extra) {
  j["discovery_report"] = {{"summary", summary_json(s)}, {"critical_failures", std::move(critical)}};
  j["has_critical_failures"] = !s.critical_failures.empty();
  j["final_report_text"] = std::move(final_text);
  append_extra(j, extra, "");
}

ojson compiler_head(const std::string& model_name) {
  return {{"model_name", model_name}, {"op_assignments", ojson::object()}};
}

void compiler_tail(ojson& j, const ExtraFields& report_extra) {
  // The seed's compiler JSON carries the report's full-model tolerance.
  if (const std::string* tol = find_extra(report_extra, "tolerance")) append_extra(j, {{"tolerance", *tol}}, "");
}

bool is_assignable(const LayerReport& l) { return l.recommended && is_line_col(l.info.mlir_location); }

}  // namespace report_parts

namespace {
using namespace report_parts;  // NOLINT(google-build-using-namespace): this file's own parts

// ---------------------------------------------------------------- reading

// Reads typed fields out of a parsed report; every failure names the file
// and the dotted field path.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw PipelineError(path_ + ": " + (field.empty() ? std::string() : field + ": ") + what);
  }

  const ojson& object(const ojson& j, const std::string& field) const {
    if (!j.is_object()) fail(field, std::string("expected an object, got ") + j.type_name());
    return j;
  }
  std::string str(const ojson& j, const std::string& field) const {
    if (!j.is_string()) fail(field, std::string("expected a string, got ") + j.type_name());
    return j.get<std::string>();
  }
  bool boolean(const ojson& j, const std::string& field) const {
    if (!j.is_boolean()) fail(field, std::string("expected true or false, got ") + j.type_name());
    return j.get<bool>();
  }
  // Numbers; null reads as NaN and "inf"/"-inf"/"nan" as themselves (what
  // json_num() writes).
  double number(const ojson& j, const std::string& field) const {
    if (j.is_number()) return j.get<double>();
    if (j.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (j.is_string()) {
      const std::string s = j.get<std::string>();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      fail(field, "expected a number, got string '" + s + "'");
    }
    fail(field, std::string("expected a number, got ") + j.type_name());
  }
  int64_t integer(const ojson& j, const std::string& field, int64_t lo, int64_t hi) const {
    if (!j.is_number_integer()) fail(field, std::string("expected an integer, got ") + j.type_name());
    if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(hi))
      fail(field, "integer " + j.dump() + " out of range");
    const int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) fail(field, "integer " + std::to_string(v) + " out of range");
    return v;
  }

  // A number within [lo, hi] (a tolerance, a fraction, a PCC); NaN and
  // the infinities are not.
  double bounded(const ojson& j, const std::string& field, double lo, double hi) const {
    const double v = number(j, field);
    if (!(v >= lo && v <= hi))
      fail(field, (std::isnan(v) ? std::string("nan") : j.dump()) + " out of range (expected " + num_text(lo) +
                      " .. " + num_text(hi) + ")");
    return v;
  }
  static std::string num_text(double v) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream s;
    s << v;
    return s.str();
  }

  Tolerance tolerance(const ojson& j, const std::string& field, const Tolerance& base) const {
    object(j, field);
    Tolerance t = base;
    const double inf = std::numeric_limits<double>::infinity();
    if (j.contains("fp_avg_tol")) t.fp_avg_tol = bounded(j["fp_avg_tol"], field + ".fp_avg_tol", 0, inf);
    if (j.contains("fp_max_tol")) t.fp_max_tol = bounded(j["fp_max_tol"], field + ".fp_max_tol", 0, inf);
    if (j.contains("allowed_wrong")) t.allowed_wrong = bounded(j["allowed_wrong"], field + ".allowed_wrong", 0, 1);
    return t;
  }

  // A PCC: within [-1, 1] (a little over for rounding), or unknown
  // (null, "nan").
  double pcc(const ojson& j, const std::string& field) const {
    const double v = number(j, field);
    if (std::isnan(v)) return v;
    constexpr double kSlack = 1e-6;
    if (!(v >= -1 - kSlack && v <= 1 + kSlack))
      fail(field, j.dump() + " out of range (a PCC is within -1 .. 1)");
    return v;
  }

  OutputDiff output(const ojson& j, const std::string& field) const {
    object(j, field);
    OutputDiff o;
    if (j.contains("name")) o.name = str(j["name"], field + ".name");
    auto d = [&](const char* key, double& dst) {
      if (j.contains(key)) dst = number(j[key], field + "." + key);
    };
    auto i = [&](const char* key, int64_t& dst) {
      if (j.contains(key)) dst = integer(j[key], field + "." + key, 0, std::numeric_limits<int64_t>::max());
    };
    d("max_abs", o.max_abs);
    d("mean_abs", o.mean_abs);
    d("rmse", o.rmse);
    d("max_rel", o.max_rel);
    if (j.contains("pcc")) o.pcc = pcc(j["pcc"], field + ".pcc");
    i("over_tol", o.over_tol);
    i("size", o.size);
    i("nan_mismatch", o.nan_mismatch);
    return o;
  }

  ExecResult exec(const ojson& j, Executor e, const std::string& field, const Tolerance& def) const {
    object(j, field);
    ExecResult r;
    r.executor = e;
    if (!j.contains("status")) fail(field, "missing 'status'");
    const std::string st = str(j["status"], field + ".status");
    auto status = status_from_name(st);
    if (!status) fail(field + ".status", "unknown status '" + st + "' (expected success, difference or error)");
    r.status = *status;
    if (r.status != Status::kError) {
      // Metrics the file does not give (the seed recorded max_diff only for
      // differences, never a PCC) are unknown, not zero.
      r.max_rel = r.max_abs = r.pcc = std::numeric_limits<double>::quiet_NaN();
    }
    r.tolerance_used = def;
    if (j.contains("tolerance_used")) r.tolerance_used = tolerance(j["tolerance_used"], field + ".tolerance_used", def);
    if (j.contains("max_diff") && !j["max_diff"].is_null()) {
      const ojson& md = object(j["max_diff"], field + ".max_diff");
      if (md.contains("max_rel_diff")) r.max_rel = number(md["max_rel_diff"], field + ".max_diff.max_rel_diff");
      if (md.contains("max_abs_diff")) r.max_abs = number(md["max_abs_diff"], field + ".max_diff.max_abs_diff");
    }
    if (j.contains("failure_report") && !j["failure_report"].is_null()) {
      const ojson& fr = object(j["failure_report"], field + ".failure_report");
      // The seed also wrote failure_report for `difference` (accuracy
      // details); only an error's report is its error class and message.
      if (r.status == Status::kError) {
        if (fr.contains("type")) r.error_class = str(fr["type"], field + ".failure_report.type");
        if (fr.contains("summary")) r.error_message = str(fr["summary"], field + ".failure_report.summary");
      }
    }
    if (j.contains("error_class") && r.status == Status::kError)
      r.error_class = str(j["error_class"], field + ".error_class");
    if (j.contains("timing") && !j["timing"].is_null()) {
      const ojson& t = object(j["timing"], field + ".timing");
      if (t.contains("runtime_ms")) r.runtime_ms = number(t["runtime_ms"], field + ".timing.runtime_ms");
      if (std::isnan(r.runtime_ms)) r.runtime_ms = -1;
      if (t.contains("runs"))
        r.timing_runs = static_cast<uint32_t>(integer(t["runs"], field + ".timing.runs", 0, UINT32_MAX));
    }
    if (j.contains("pcc")) r.pcc = pcc(j["pcc"], field + ".pcc");
    if (j.contains("outputs")) {
      const ojson& outs = j["outputs"];
      if (!outs.is_array()) fail(field + ".outputs", std::string("expected an array, got ") + outs.type_name());
      for (size_t k = 0; k < outs.size(); ++k)
        r.outputs.push_back(output(outs[k], field + ".outputs[" + std::to_string(k) + "]"));
    }
    if (j.contains("cached")) r.cached = boolean(j["cached"], field + ".cached");
    if (j.contains("dedup_of")) r.dedup_of = str(j["dedup_of"], field + ".dedup_of");
    if (j.contains("worker_id")) r.worker_id = str(j["worker_id"], field + ".worker_id");
    if (j.contains("job_id")) r.job_id = str(j["job_id"], field + ".job_id");
    if (j.contains("toolchain")) r.toolchain = str(j["toolchain"], field + ".toolchain");
    if (j.contains("chip")) r.chip = str(j["chip"], field + ".chip");
    if (j.contains("host_ms")) r.host_ms = number(j["host_ms"], field + ".host_ms");
    if (j.contains("attempts"))
      r.attempts = static_cast<uint32_t>(integer(j["attempts"], field + ".attempts", 0, UINT32_MAX));
    return r;
  }

  // Returns the layer and whether it carried a _node_index.
  std::pair<LayerReport, bool> layer(const std::string& id, const ojson& j, const Tolerance& def) const {
    const std::string field = "ops." + id;
    object(j, field);
    LayerReport l;
    l.info.id = id;
    l.info.index = -1;
    bool has_index = false;
    if (j.contains("_node_index") && !j["_node_index"].is_null()) {
      l.info.index = static_cast<int>(integer(j["_node_index"], field + "._node_index", 0, INT32_MAX));
      has_index = true;
    }
    if (j.contains("op_type")) {
      l.info.op_type = str(j["op_type"], field + ".op_type");
    } else {
      l.info.op_type = id.substr(0, id.find('_'));  // the seed's ids are <OpType>_<output>
    }
    location(j, field, l);
    if (j.contains("executors") && !j["executors"].is_null()) executors(j["executors"], field + ".executors", def, l);
    if (j.contains("recommended_executor") && !j["recommended_executor"].is_null()) {
      const std::string rec = str(j["recommended_executor"], field + ".recommended_executor");
      if (rec != "null") {  // the seed's `edit --executor null` wrote the string
        auto e = executor_from_name(rec);
        if (!e)
          fail(field + ".recommended_executor", "unknown executor '" + rec + "' (expected nss, css, host or null)");
        l.recommended = *e;
      }
    }
    if (j.contains("pinned") && !j["pinned"].is_null()) {
      if (!j["pinned"].is_boolean()) fail(field + ".pinned", "must be true or false");
      l.pinned = j["pinned"].get<bool>() && l.recommended.has_value();
    }
    if (j.contains("tolerance") && !j["tolerance"].is_null()) {
      l.tolerance = tolerance(j["tolerance"], field + ".tolerance", def);
    } else if (j.contains("tolerance_used") && !j["tolerance_used"].is_null()) {
      // The seed's `edit --tolerance-*` stored the override here.
      l.tolerance = tolerance(j["tolerance_used"], field + ".tolerance_used", def);
    }
    if (j.contains("dedup_of") && !j["dedup_of"].is_null()) l.dedup_of = str(j["dedup_of"], field + ".dedup_of");
    l.extra = unknown_keys(j, [](const std::string& k) { return among(k, kLayerKeys); });
    return {std::move(l), has_index};
  }

  // The seed could leave a bare op type here until the full-model import
  // ran: only a line:col is a location; anything else is kept as written.
  void location(const ojson& j, const std::string& field, LayerReport& l) const {
    if (!j.contains("mlir_location") || j["mlir_location"].is_null()) return;
    const std::string loc = str(j["mlir_location"], field + ".mlir_location");
    (is_line_col(loc) ? l.info.mlir_location : l.mlir_placeholder) = loc;
  }

  // Every executor's result, and the keys of each that are not read.
  void executors(const ojson& j, const std::string& field, const Tolerance& def, LayerReport& l) const {
    for (const auto& [name, value] : object(j, field).items()) {
      auto e = executor_from_name(name);
      if (!e) fail(field + "." + name, "unknown executor '" + name + "' (expected nss, css or host)");
      const ExecResult& r = l.results[*e] = exec(value, *e, field + "." + name, def);
      const bool error = r.status == Status::kError;
      ExtraFields extra = unknown_keys(value, [error](const std::string& k) {
        return among(k, kExecKeys) || among(k, error ? kErrorKeys : kMetricKeys);
      });
      if (!extra.empty()) l.result_extra[*e] = std::move(extra);
    }
  }

 private:
  std::string path_;
};

// "line 3, column 5: syntax error ..." out of a nlohmann parse_error.
std::string parse_error_detail(const std::string& what) {
  const std::string marker = "parse error at ";
  const size_t pos = what.find(marker);
  if (pos != std::string::npos) return what.substr(pos + marker.size());
  const size_t bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

std::string model_name_from_path(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  const std::string ext = ".json", prefix = "torq_gen_config_";
  if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0)
    name.resize(name.size() - ext.size());
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  return name;
}

[[noreturn]] void throw_errno(const std::string& path, const std::string& what, int err) {
  throw PipelineError(path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

void summarize_layer(ReportSummary& s, const LayerReport& l) {
  ++s.total_layers;
  for (const auto& [e, res] : l.results) {
    ExecutorSummary& x = s.executors[slot(e)];
    switch (res.status) {
      case Status::kSuccess:
        ++x.success;
        break;
      case Status::kDifference:
        ++x.difference;
        break;
      case Status::kError:
        ++x.error;
        break;
    }
    if (res.runtime_ms >= 0) {
      x.min_runtime_ms = x.layers_timed == 0 ? res.runtime_ms : std::min(x.min_runtime_ms, res.runtime_ms);
      x.max_runtime_ms = x.layers_timed == 0 ? res.runtime_ms : std::max(x.max_runtime_ms, res.runtime_ms);
      x.total_runtime_ms += res.runtime_ms;
      ++x.layers_timed;
    }
  }
  if (l.recommended) {
    ++s.executors[slot(*l.recommended)].recommended;
  } else {
    ++s.recommended_none;
  }
  if (is_critical_failure(l)) s.critical_failures.push_back(l.info.id);
}

ReportSummary summarize(const ModelReport& r) {
  ReportSummary s;
  for (const LayerReport& l : r.layers) summarize_layer(s, l);
  return s;
}

nlohmann::ordered_json report_to_json(const ModelReport& r) {
  ojson j = report_head(r);
  ojson ops = ojson::object();
  std::vector<const LayerReport*> order;
  for (const LayerReport& l : r.layers) order.push_back(&l);
  std::stable_sort(order.begin(), order.end(), [](const LayerReport* a, const LayerReport* b) {
    const int64_t ia = a->info.index < 0 ? INT64_MAX : a->info.index;
    const int64_t ib = b->info.index < 0 ? INT64_MAX : b->info.index;
    return ia < ib;
  });
  ojson critical = ojson::array();
  for (const LayerReport* l : order) {
    ops[l->info.id] = layer_json(*l);
    if (is_critical_failure(*l)) critical.push_back(critical_failure_json(*l));
  }
  j["ops"] = std::move(ops);
  report_tail(j, summarize(r), std::move(critical), render_final_report(r), r.extra);
  return j;
}

std::string variant_text(const VariantRecord& v) {
  std::string t = v.dtype.empty() ? std::string("fp32") : v.dtype;
  if (!v.rounding.empty()) t += " (" + v.rounding + ")";
  if (!v.quantization.empty()) t += " (" + v.quantization + ")";
  return t + " on " + (v.executors.empty() ? std::string("sim") : v.executors);
}

std::string variant_mismatch(const VariantRecord& was, const VariantRecord& now, const std::string& path) {
  std::string why;
  if (was.model_sha256 != now.model_sha256)
    why = "another model file (sha256 " + was.model_sha256.substr(0, 12) + "..., this one " +
          now.model_sha256.substr(0, 12) + "...)";
  else if (was.dtype != now.dtype)
    why = "the " + was.dtype + " variant; this one is " + now.dtype +
          (was.dtype == "bf16" ? " (add --auto-convert-bf16)"
           : now.dtype == "bf16" ? " (drop --auto-convert-bf16)"
           : was.dtype == "int8" ? " (add --quantize)" : " (drop --quantize)");
  else if (was.rounding != now.rounding)
    why = "bf16 with --bf16-rounding " + was.rounding + "; this one asks for " + now.rounding;
  else if (was.quantization != now.quantization)
    why = "int8 quantized as " + was.quantization + "; this one as " + now.quantization;
  else if (was.executors != now.executors)
    why = "executors " + was.executors + "; this one runs " + now.executors + " (--backend/--toolchain/--targets)";
  if (why.empty()) return "";
  return path + " was made from " + why + ". Results of two variants never share a report: use another "
         "--output-dir, or --recompute-cache to replace it";
}

ModelReport report_from_json(const std::string& text, const std::string& path) {
  const Reader rd(path);
  if (std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); }))
    rd.fail("", "empty file, expected a torq-gen-config report JSON");
  check_json_depth(text, path);
  ojson j;
  try {
    j = ojson::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const std::string what = e.what();
    // Truncation: the parser ran off the end (mid-value, mid-string, ...).
    if (what.find("unexpected end of input") != std::string::npos || e.byte >= text.size())
      rd.fail("", "truncated JSON (" + parse_error_detail(what) + ")");
    rd.fail("", "not valid JSON: " + parse_error_detail(what));
  } catch (const nlohmann::json::exception& e) {  // a number out of range (1e400), ...
    rd.fail("", std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object())
    rd.fail("", std::string("not a torq-gen-config report: the top level is ") + j.type_name() +
                    ", expected an object with 'ops'");
  if (!j.contains("ops")) {
    if (j.contains("op_assignments"))
      rd.fail("", "this is a compiler JSON (op_assignments), not a torq-gen-config report (ops)");
    rd.fail("", "not a torq-gen-config report: no 'ops' object");
  }
  if (j.contains("version")) {
    const std::string v = rd.str(j["version"], "version");
    if (v.rfind("1.", 0) != 0) rd.fail("version", "unsupported report version '" + v + "' (this tool reads 1.x)");
  }
  ModelReport r;
  r.model_name = j.contains("model_name") && !j["model_name"].is_null() ? rd.str(j["model_name"], "model_name")
                                                                        : model_name_from_path(path);
  if (j.contains("variant") && !j["variant"].is_null()) {
    const ojson& v = rd.object(j["variant"], "variant");
    VariantRecord vr;
    auto text = [&](const char* key, std::string* out) {
      if (v.contains(key) && !v[key].is_null()) *out = rd.str(v[key], std::string("variant.") + key);
    };
    text("model_sha256", &vr.model_sha256);
    text("dtype", &vr.dtype);
    text("bf16_rounding", &vr.rounding);
    text("quantization", &vr.quantization);
    text("executors", &vr.executors);
    r.variant = vr;
  }
  if (j.contains("default_tolerance") && !j["default_tolerance"].is_null())
    r.default_tolerance = rd.tolerance(j["default_tolerance"], "default_tolerance", Tolerance{});
  const ojson& ops = rd.object(j["ops"], "ops");
  std::vector<std::pair<LayerReport, bool>> layers;
  for (const auto& [id, value] : ops.items()) layers.push_back(rd.layer(id, value, r.default_tolerance));
  // Layers are ordered by _node_index: a file has it on every layer (ours,
  // the real tool's) or on none (ordered as written); some with and some
  // without cannot be placed.
  const auto indexed = std::count_if(layers.begin(), layers.end(), [](const auto& l) { return l.second; });
  if (indexed > 0 && indexed < static_cast<std::ptrdiff_t>(layers.size()))
    for (const auto& [l, has_index] : layers)
      if (!has_index)
        rd.fail("ops." + l.info.id, "no _node_index, while " + std::to_string(indexed) + " of the " +
                                        std::to_string(layers.size()) + " layers have one (layers are ordered by it)");
  std::stable_sort(layers.begin(), layers.end(), [](const auto& a, const auto& b) {
    const int64_t ia = a.second ? a.first.info.index : INT64_MAX;
    const int64_t ib = b.second ? b.first.info.index : INT64_MAX;
    return ia < ib;
  });
  for (auto& [l, has_index] : layers) r.layers.push_back(std::move(l));
  r.extra = unknown_keys(j, [](const std::string& k) { return among(k, kTopKeys); });
  return r;
}

ModelReport read_report_file(const std::string& path) {
  if (const std::string why = base::not_a_regular_file(path); !why.empty())
    throw PipelineError(path + ": cannot open: " + why);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_errno(path, "cannot open", errno);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw_errno(path, "cannot read", errno);
  return report_from_json(ss.str(), path);
}

nlohmann::ordered_json compiler_json(const ModelReport& r) {
  ojson j = compiler_head(r.model_name);
  for (const LayerReport& l : r.layers)
    if (is_assignable(l)) j["op_assignments"][l.info.mlir_location] = {{"executor", executor_name(*l.recommended)}};
  compiler_tail(j, r.extra);
  return j;
}

std::string report_path(const std::string& output_dir, const std::string& model_name) {
  const std::string file = "torq_gen_config_" + model_name + ".json";
  return output_dir.empty() ? file : (fs::path(output_dir) / file).string();
}

std::string compiler_path(const std::string& output_dir, const std::string& model_name) {
  const std::string file = "torq_gen_config_" + model_name + "_compiler.json";
  return output_dir.empty() ? file : (fs::path(output_dir) / file).string();
}

std::string compiler_path_for(const std::string& report_path) {
  const fs::path p(report_path);
  return (p.parent_path() / (p.stem().string() + "_compiler" + p.extension().string())).string();
}

void write_json_atomic(const std::string& path, const nlohmann::ordered_json& json) {
  AtomicFile f(path);
  f.write(json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  f.write("\n");
  f.commit();
}

void write_report_files(const ModelReport& r, const std::string& output_dir) {
  if (!output_dir.empty()) prepare_output_dir(output_dir);
  write_json_atomic(report_path(output_dir, r.model_name), report_to_json(r));
  write_json_atomic(compiler_path(output_dir, r.model_name), compiler_json(r));
}

void write_report_files_at(const ModelReport& r, const std::string& report_path) {
  write_json_atomic(report_path, report_to_json(r));
  write_json_atomic(compiler_path_for(report_path), compiler_json(r));
}

}  // namespace torq::pipeline
