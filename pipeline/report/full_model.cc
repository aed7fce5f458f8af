#include "pipeline/report/full_model.h"

#include <cmath>
#include <cstdio>

namespace torq::pipeline {

using json = nlohmann::ordered_json;

namespace {

std::string num(double v, const char* f = "%.6g") {
  if (std::isnan(v)) return "nan";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

json finite(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

int64_t elements(const ExecResult& r) {
  int64_t n = 0;
  for (const auto& o : r.outputs) n += o.size;
  return n;
}
int64_t over_tol(const ExecResult& r) {
  int64_t n = 0;
  for (const auto& o : r.outputs) n += o.over_tol;
  return n;
}

json metrics_json(const ExecResult& r) {
  json m;
  m["pcc"] = finite(r.pcc);
  m["max_abs_diff"] = finite(r.max_abs);
  m["max_rel_diff"] = finite(r.max_rel);
  m["elements_over_tolerance"] = over_tol(r);
  m["elements"] = elements(r);
  json outs = json::array();
  for (const auto& o : r.outputs)
    outs.push_back({{"name", o.name}, {"pcc", finite(o.pcc)}, {"max_abs_diff", finite(o.max_abs)},
                    {"max_rel_diff", finite(o.max_rel)}, {"over_tolerance", o.over_tol}, {"size", o.size}});
  m["outputs"] = outs;
  return m;
}

// The end-to-end comparison (against the fp32 original), figures as
// metrics_json's, or the reason there are none.
json e2e_json(const ExecResult::EndToEnd& e) {
  json m;
  m["reference"] = e.reference;
  if (!e.error.empty()) {
    m["error"] = e.error;
    return m;
  }
  ExecResult as;
  as.outputs = e.outputs;
  as.pcc = e.pcc();
  as.max_abs = e.max_abs();
  as.max_rel = e.max_rel();
  const json figures = metrics_json(as);
  for (auto it = figures.begin(); it != figures.end(); ++it) m[it.key()] = it.value();
  return m;
}

std::string layer_name(const FullModelRun& run, uint32_t model_index) {
  const size_t i = model_index - run.range.first;
  return i < run.layers.size() ? run.layers[i].id : std::to_string(model_index);
}

std::string rule_text(const FullModelRule& r) {
  if (r.max_relative_diff)
    return "relaxed tolerance max_relative_diff " + num(*r.max_relative_diff) + ", max_absolute_diff " +
           num(*r.max_absolute_diff) + (r.source.empty() ? "" : " (" + r.source + ")");
  return "rel > fp_max_tol " + num(r.tolerance.fp_max_tol) + " on at most " +
         num(r.tolerance.allowed_wrong * 100) + "% of elements";
}

}  // namespace

void read_relaxed_tolerance(const json& report, const std::string& path, FullModelRule* rule) {
  if (!report.is_object() || !report.contains("tolerance") || report["tolerance"].is_null()) return;
  const json& t = report["tolerance"];
  auto get = [&](const char* k) {
    if (!t.is_object() || !t.contains(k) || !t[k].is_number())
      throw PipelineError(path + ": tolerance." + k + ": expected a number (the relaxed full-model tolerance)");
    return t[k].get<double>();
  };
  rule->max_relative_diff = get("max_relative_diff");
  rule->max_absolute_diff = get("max_absolute_diff");
  rule->source = path + ": tolerance";
}

bool full_model_passes(const ExecResult& r, const FullModelRule& rule) {
  if (r.status == Status::kError) return false;
  if (rule.max_relative_diff)
    return r.max_rel <= *rule.max_relative_diff && r.max_abs <= *rule.max_absolute_diff;
  for (const auto& o : r.outputs) {
    if (o.nan_mismatch > 0) return false;
    if (o.size > 0 && static_cast<double>(o.over_tol) / static_cast<double>(o.size) > rule.tolerance.allowed_wrong)
      return false;
  }
  return true;
}

json full_model_json(const FullModelRun& run) {
  const ExecResult& r = run.result;
  json j;
  j["passed"] = run.passed;
  j["status"] = status_name(r.status);
  if (r.status == Status::kError) {
    j["error_class"] = r.error_class;
    j["error_message"] = r.error_message;
  }
  j["layers"] = run.layers.size();
  json counts = {{"nss", 0}, {"css", 0}, {"host", 0}};
  json sim = {{"nss", 0.0}, {"css", 0.0}, {"host", 0.0}};
  json decided = json::array();
  for (size_t i = 0; i < r.placed.size(); ++i) {
    const char* e = executor_name(r.placed[i]);
    counts[e] = counts[e].get<int>() + 1;
    sim[e] = sim[e].get<double>() + r.layer_ms[i];
    if (i < run.decided.size() && run.decided[i] && i < run.layers.size())
      decided.push_back({{"layer", run.layers[i].id}, {"executor", e}});
  }
  sim["total"] = r.runtime_ms >= 0 ? r.runtime_ms : 0.0;
  // A run the real tools made compiles the whole range once with the
  // assignment as an executor map: where each op went is the compiler's and
  // is not reported back, so no per-executor count or time is claimed.
  const bool by_compiler = r.placed.empty() && r.status != Status::kError && !run.layers.empty();
  j["placement"] = by_compiler ? "compiler" : "per_layer";
  j["executor_counts"] = counts;
  j["compiler_decided"] = decided;
  j["metrics"] = metrics_json(r);
  if (r.e2e) {
    // Beside the executors' error against the converted model's own
    // reference: what the converted model costs against its fp32 original.
    j["metrics"]["reference"] = "this (converted) model on the fp32 host reference";
    j["end_to_end"] = e2e_json(*r.e2e);
  }
  j["rule"] = rule_text(run.rule);
  j["simulated_time_ms"] = sim;
  j["worker"] = r.worker_id;
  j["toolchain"] = r.toolchain;
  j["cached"] = r.cached;
  if (run.failing) {
    const uint32_t base = run.range.first;
    j["first_failing_range"] = {{"first_node", run.failing->first - base},
                                {"last_node", run.failing->last - base},
                                {"first_layer", layer_name(run, run.failing->first)},
                                {"last_layer", layer_name(run, run.failing->last)},
                                {"layers", run.failing->last - run.failing->first + 1},
                                {"status", status_name(run.failing_result.status)},
                                {"metrics", metrics_json(run.failing_result)},
                                {"bisect_runs", run.bisect_runs}};
    if (run.failing_result.status == Status::kError)
      j["first_failing_range"]["error_message"] = run.failing_result.error_message;
  } else if (!run.bisect_note.empty()) {
    j["bisect"] = run.bisect_note;
  }
  return j;
}

std::string full_model_text(const FullModelRun& run) {
  const ExecResult& r = run.result;
  std::string s = "--- Full Model Comparison ---\n";
  if (r.status == Status::kError) {
    s += "  Error: " + r.error_class + ": " + r.error_message + "\n";
  } else {
    const int64_t n = elements(r), bad = over_tol(r);
    s += "  Max relative difference: " + num(r.max_rel) + "\n";
    s += "  Max absolute difference: " + num(r.max_abs) + "\n";
    s += "  Number of differences: " + std::to_string(bad) + " out of " + std::to_string(n) + " [" +
         num(n ? 100.0 * static_cast<double>(bad) / static_cast<double>(n) : 0, "%.2f") + "%]\n";
    s += "  PCC: " + num(r.pcc, "%.6f") + "\n";
    if (r.e2e) {
      s += "  (above: against this converted model on the fp32 host reference)\n";
      if (!r.e2e->error.empty())
        s += "  End to end, against the " + r.e2e->reference + ": " + r.e2e->error + "\n";
      else
        s += "  End to end, against the " + r.e2e->reference + ": PCC " + num(r.e2e->pcc(), "%.6f") +
             ", max abs " + num(r.e2e->max_abs()) + ", max rel " + num(r.e2e->max_rel()) + "\n";
    }
  }
  const json j = full_model_json(run);
  if (j["placement"] == "compiler")
    s += "  Executors: placed by the compiler from the executor map (one compile of " +
         std::to_string(run.layers.size()) + " ops)\n";
  else
    s += "  Executors: nss " + j["executor_counts"]["nss"].dump() + ", css " + j["executor_counts"]["css"].dump() +
         ", host " + j["executor_counts"]["host"].dump() + " (of " + std::to_string(run.layers.size()) + " ops)\n";
  if (!j["compiler_decided"].empty()) {
    s += "  Placed by the compiler (no assignment):";
    for (const auto& d : j["compiler_decided"])
      s += " " + d["layer"].get<std::string>() + "->" + d["executor"].get<std::string>();
    s += "\n";
  }
  const json& t = j["simulated_time_ms"];
  if (j["placement"] == "compiler")
    s += "  Run time (ms): " + num(t["total"].get<double>(), "%.3f") + "\n";
  else
    s += "  Simulated time (ms): nss " + num(t["nss"].get<double>(), "%.3f") + ", css " +
         num(t["css"].get<double>(), "%.3f") + ", host " + num(t["host"].get<double>(), "%.3f") + ", total " +
         num(t["total"].get<double>(), "%.3f") + "\n";
  s += "  Rule: " + rule_text(run.rule) + "\n";
  s += std::string("  Result: ") + (run.passed ? "PASSED" : "FAILED") + "\n";
  if (run.failing) {
    const auto& f = j["first_failing_range"];
    s += "  First failing range: layers " + f["first_node"].dump() + ".." + f["last_node"].dump() + " (" +
         f["first_layer"].get<std::string>() + " .. " + f["last_layer"].get<std::string>() + ", " +
         f["layers"].dump() + " ops): " +
         (run.failing_result.status == Status::kError
              ? run.failing_result.error_message
              : "max rel " + num(run.failing_result.max_rel) + ", max abs " + num(run.failing_result.max_abs) +
                    ", PCC " + num(run.failing_result.pcc, "%.6f")) +
         " [" + std::to_string(run.bisect_runs) + " bisect runs]\n";
  } else if (!run.bisect_note.empty()) {
    s += "  Bisect: " + run.bisect_note + "\n";
  }
  return s;
}

void attach_full_model(json* report, const FullModelRun& run) {
  (*report)["full_model"] = full_model_json(run);
  std::string text = report->contains("final_report_text") && (*report)["final_report_text"].is_string()
                         ? (*report)["final_report_text"].get<std::string>()
                         : std::string();
  const std::string head = "--- Full Model Comparison ---";
  if (size_t at = text.find(head); at != std::string::npos) {
    size_t end = text.find("\n\n", at);
    text.erase(at, end == std::string::npos ? std::string::npos : end + 2 - at);
  }
  const std::string block = full_model_text(run) + "\n";
  size_t at = text.find("Per-Layer Status");
  if (at == std::string::npos) {
    if (!text.empty() && text.back() != '\n') text += "\n";
    text += (text.empty() ? "" : "\n") + block;
  } else {
    text.insert(at, block);
  }
  (*report)["final_report_text"] = text;
}

}  // namespace torq::pipeline
