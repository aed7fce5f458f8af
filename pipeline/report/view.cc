// Text rendering of reports: status table, final report, view summaries.
#include "pipeline/report/view.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "pipeline/report/edit.h"
#include "pipeline/report/report.h"

namespace torq::pipeline {
namespace {

constexpr size_t kStatusColWidth = 12;
constexpr size_t kMaxLayerWidth = 60;
const std::string kRule80(80, '=');

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// Compact number: up to 6 significant digits, "nan"/"inf" spelled out.
std::string fmt(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string fmt_ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return std::string(buf) + "ms";
}

std::string cell(const LayerReport& l, Executor e) {
  auto it = l.results.find(e);
  if (it == l.results.end()) return "-";
  std::string s = status_name(it->second.status);
  if (it->second.runtime_ms >= 0) s += " " + fmt_ms(it->second.runtime_ms);
  return s;
}

std::string tolerance_text(const Tolerance& t) {
  std::string s = "fp_avg_tol=" + fmt(t.fp_avg_tol) + ", fp_max_tol=" + fmt(t.fp_max_tol);
  if (t.allowed_wrong != 0) s += ", allowed_wrong=" + fmt(t.allowed_wrong);
  return s;
}

std::vector<const LayerReport*> all_layers(const ModelReport& r) {
  std::vector<const LayerReport*> out;
  for (const LayerReport& l : r.layers) out.push_back(&l);
  return out;
}

const LayerReport* find_layer(const ModelReport& r, const std::string& id) {
  for (const LayerReport& l : r.layers)
    if (l.info.id == id) return &l;
  return nullptr;
}

std::string location_text(const LayerReport& l) {
  if (!l.info.mlir_location.empty()) return l.info.mlir_location;
  return l.mlir_placeholder.empty() ? "N/A" : "N/A (placeholder '" + l.mlir_placeholder + "')";
}

std::string node_text(const LayerReport& l) { return l.info.index >= 0 ? std::to_string(l.info.index) : "N/A"; }

void render_exec(std::ostringstream& os, const ExecResult& res) {
  os << status_name(res.status);
  if (res.runtime_ms >= 0) {
    os << " (" << fmt_ms(res.runtime_ms);
    if (res.timing_runs > 1) os << ", " << res.timing_runs << " runs";
    os << ")";
  }
  os << "\n";
  if (res.status == Status::kError) {
    os << "    Type: " << (res.error_class.empty() ? "N/A" : res.error_class) << "\n";
    os << "    Summary: " << (res.error_message.empty() ? "N/A" : res.error_message) << "\n";
  } else {
    os << "    Max Diff: max_rel_diff=" << fmt(res.max_rel) << ", max_abs_diff=" << fmt(res.max_abs) << "\n";
    os << "    PCC: " << fmt(res.pcc) << "\n";
    for (const OutputDiff& o : res.outputs)
      os << "    Output " << o.name << ": max_abs=" << fmt(o.max_abs) << " mean_abs=" << fmt(o.mean_abs)
         << " rmse=" << fmt(o.rmse) << " max_rel=" << fmt(o.max_rel) << " pcc=" << fmt(o.pcc)
         << " over_tol=" << o.over_tol << "/" << o.size << " nan_mismatch=" << o.nan_mismatch << "\n";
  }
  os << "    Tolerance: " << tolerance_text(res.tolerance_used) << "\n";
  if (res.runtime_ms >= 0) os << "    Runtime: " << fmt_ms(res.runtime_ms) << " (runs: " << res.timing_runs << ")\n";
  if (!res.worker_id.empty() || !res.toolchain.empty()) {
    os << "    Worker: " << (res.worker_id.empty() ? "-" : res.worker_id);
    if (!res.toolchain.empty()) os << " (toolchain " << res.toolchain << ")";
    os << "\n";
  }
  if (res.cached) os << "    Cached: yes (served from the result cache)\n";
  if (!res.dedup_of.empty()) os << "    Copied from: " << res.dedup_of << "\n";
}

}  // namespace

StatusRow status_row(const LayerReport& l) {
  StatusRow row;
  row.layer = l.info.id.substr(0, kMaxLayerWidth);
  for (Executor e : kExecutorPriority) row.cells[static_cast<size_t>(e)] = cell(l, e);
  row.recommended = l.recommended ? executor_name(*l.recommended) : "-";
  return row;
}

std::string render_status_rows(const std::vector<StatusRow>& rows) {
  if (rows.empty()) return "Per-Layer Status:\n  (no layers)\n";
  size_t layer_w = std::string("Layer").size();
  size_t col_w = kStatusColWidth;
  for (const StatusRow& r : rows) {
    layer_w = std::max(layer_w, r.layer.size());
    for (const std::string& c : r.cells) col_w = std::max(col_w, c.size() + 1);
  }
  std::ostringstream os;
  os << "Per-Layer Status:\n";
  os << "  " << pad("Layer", layer_w) << "  ";
  for (Executor e : kExecutorPriority) os << pad(upper(executor_name(e)), col_w) << " ";
  os << "Recommended\n";
  os << std::string(layer_w + col_w * 3 + 25, '-') << "\n";
  for (const StatusRow& r : rows) {
    os << "  " << pad(r.layer, layer_w) << "  ";
    for (Executor e : kExecutorPriority) os << pad(r.cells[static_cast<size_t>(e)], col_w) << " ";
    os << r.recommended << "\n";
  }
  return os.str();
}

std::string render_status_table(const std::vector<const LayerReport*>& layers) {
  std::vector<StatusRow> rows;
  rows.reserve(layers.size());
  for (const LayerReport* l : layers) rows.push_back(status_row(*l));
  return render_status_rows(rows);
}

std::string render_layer_list(const std::vector<const LayerReport*>& layers) {
  size_t layer_w = std::string("Layer").size(), col_w = kStatusColWidth;
  for (const LayerReport* l : layers) {
    layer_w = std::max(layer_w, l->info.id.size());
    for (Executor e : kExecutorPriority) col_w = std::max(col_w, cell(*l, e).size() + 1);
  }
  std::ostringstream os;
  os << "  " << pad("Index", 6) << pad("Layer", layer_w) << "  ";
  for (Executor e : kExecutorPriority) os << pad(upper(executor_name(e)), col_w) << " ";
  os << "Recommended\n";
  for (const LayerReport* l : layers) {
    os << "  " << pad(l->info.index >= 0 ? std::to_string(l->info.index) : "-", 6) << pad(l->info.id, layer_w) << "  ";
    for (Executor e : kExecutorPriority) os << pad(cell(*l, e), col_w) << " ";
    os << (l->recommended ? executor_name(*l->recommended) : "-") << (l->pinned ? " (pinned)" : "") << "\n";
  }
  return os.str();
}

std::string render_final_report(const std::string& model_name, const ReportSummary& s,
                                const std::vector<std::string>& critical_nodes, const std::vector<StatusRow>& rows) {
  std::ostringstream os;
  os << "FINAL EXECUTOR DISCOVERY REPORT\n\n";
  os << "Model: " << model_name << "\n";
  os << "Total layers tested: " << s.total_layers << "\n\n";
  os << "Status Summary:\n";
  for (Executor e : kExecutorPriority) {
    const ExecutorSummary& x = s.executors[static_cast<int>(e)];
    os << "  " << upper(executor_name(e)) << ": success " << x.success << ", difference " << x.difference << ", error "
       << x.error << "\n";
  }
  os << "\nRecommended Executor Distribution:\n";
  for (Executor e : kExecutorPriority)
    os << "  " << upper(executor_name(e)) << ": " << s.executors[static_cast<int>(e)].recommended << "\n";
  os << "  none: " << s.recommended_none << "\n\n";
  if (s.critical_failures.empty()) {
    os << "No critical failures - all layers have at least one working executor\n";
  } else {
    os << "CRITICAL: " << s.critical_failures.size() << " layer(s) with ALL executors ERRORS\n\n";
    for (size_t i = 0; i < s.critical_failures.size(); ++i)
      os << "  - " << s.critical_failures[i] << " (node: " << critical_nodes[i] << ")\n";
  }
  os << "\n" << render_status_rows(rows);
  std::string text = os.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();  // a block, like the seed's join
  return text;
}

std::string critical_node_text(const LayerReport& l) { return node_text(l); }

std::string render_final_report(const ModelReport& r) {
  const ReportSummary s = summarize(r);
  std::vector<std::string> nodes;
  for (const std::string& id : s.critical_failures) nodes.push_back(node_text(*find_layer(r, id)));
  std::vector<StatusRow> rows;
  rows.reserve(r.layers.size());
  for (const LayerReport& l : r.layers) rows.push_back(status_row(l));
  return render_final_report(r.model_name, s, nodes, rows);
}

std::string render_summary(const ModelReport& r) {
  const ReportSummary s = summarize(r);
  std::ostringstream os;
  os << kRule80 << "\nMODEL: " << r.model_name << "\n" << kRule80 << "\n";
  os << "\nSTATUS COUNTS:\n";
  for (Executor e : kExecutorPriority) {
    const ExecutorSummary& x = s.executors[static_cast<int>(e)];
    os << "  " << upper(executor_name(e)) << ": success " << x.success << ", difference " << x.difference << ", error "
       << x.error << "\n";
  }
  os << "\nRECOMMENDED EXECUTORS:\n";
  for (Executor e : kExecutorPriority)
    os << "  " << upper(executor_name(e)) << ": " << s.executors[static_cast<int>(e)].recommended << "\n";
  os << "  none: " << s.recommended_none << "\n";
  os << "\nTIMING SUMMARY:\n";
  bool any_timing = false;
  for (Executor e : kExecutorPriority) {
    const ExecutorSummary& x = s.executors[static_cast<int>(e)];
    if (x.layers_timed == 0) continue;
    any_timing = true;
    os << "  " << upper(executor_name(e)) << ": total " << fmt_ms(x.total_runtime_ms) << " over " << x.layers_timed
       << " layer(s), avg " << fmt_ms(x.total_runtime_ms / x.layers_timed) << " (min " << fmt_ms(x.min_runtime_ms)
       << ", max " << fmt_ms(x.max_runtime_ms) << ")\n";
  }
  if (!any_timing) os << "  (no timing recorded)\n";
  os << "\nCRITICAL FAILURES (all executors error): " << s.critical_failures.size() << "\n";
  for (const std::string& id : s.critical_failures)
    os << "  - " << id << " (node: " << node_text(*find_layer(r, id)) << ")\n";
  os << "\n" << render_status_table(all_layers(r));
  os << "\nDEFAULT TOLERANCE:\n";
  os << "  fp_avg_tol: " << fmt(r.default_tolerance.fp_avg_tol) << "\n";
  os << "  fp_max_tol: " << fmt(r.default_tolerance.fp_max_tol) << "\n";
  if (r.default_tolerance.allowed_wrong != 0)
    os << "  allowed_wrong: " << fmt(r.default_tolerance.allowed_wrong) << "\n";
  os << "\n" << kRule80 << "\n";
  return os.str();
}

std::string render_layer(const ModelReport& r, const std::string& layer_pattern) {
  const std::vector<std::string> ids = match_layers(r, layer_pattern);
  if (ids.empty()) {
    std::string msg = "no layer matches '" + layer_pattern + "'";
    if (!r.layers.empty()) {
      msg += " (available: ";
      for (size_t i = 0; i < r.layers.size() && i < 10; ++i) msg += (i ? ", " : "") + r.layers[i].info.id;
      msg += r.layers.size() > 10 ? ", ...)" : ")";
    }
    throw PipelineError(msg);
  }
  std::ostringstream os;
  for (const std::string& id : ids) {
    const LayerReport& l = *find_layer(r, id);
    os << "\nLAYER: " << l.info.id << "\n" << kRule80 << "\n\n";
    os << "Node Index: " << node_text(l) << "\n";
    os << "Op Type: " << (l.info.op_type.empty() ? "N/A" : l.info.op_type) << "\n";
    os << "MLIR Location: " << location_text(l) << "\n";
    os << "Recommended Executor: " << (l.recommended ? executor_name(*l.recommended) : "none")
       << (l.pinned ? " (pinned by edit: kept by discover; release with edit --executor auto)" : "") << "\n";
    if (l.tolerance) os << "Tolerance Override: " << tolerance_text(*l.tolerance) << "\n";
    if (!l.dedup_of.empty()) os << "Duplicate Of: " << l.dedup_of << "\n";
    os << "\nExecutor Results:\n";
    for (Executor e : kExecutorPriority) {
      os << "\n  [" << upper(executor_name(e)) << "]: ";
      auto it = l.results.find(e);
      if (it == l.results.end()) {
        os << "not tested\n";
        continue;
      }
      render_exec(os, it->second);
    }
    // The way to hand a result to a compiler engineer.
    for (Executor e : kExecutorPriority) {
      auto it = l.results.find(e);
      if (it == l.results.end() || it->second.status == Status::kSuccess) continue;
      os << "\nRepro bundle (" << executor_name(e) << "): torq-gen-config repro --model <model.onnx> --output-dir "
         << "<dir> " << l.info.id << " --executor " << executor_name(e)
         << " (with discover's variant flags, e.g. --auto-convert-bf16)\n";
    }
  }
  return os.str();
}

std::string render_compiler(const nlohmann::json& compiler) {
  if (!compiler.is_object() || !compiler.contains("op_assignments") || !compiler["op_assignments"].is_object())
    throw PipelineError("not a compiler JSON: no 'op_assignments' object");
  const nlohmann::json& assignments = compiler["op_assignments"];
  const std::string model = compiler.contains("model_name") && compiler["model_name"].is_string()
                                ? compiler["model_name"].get<std::string>()
                                : "unknown";
  struct Row {
    long line, col;
    std::string loc, executor;
  };
  std::vector<Row> rows;
  for (const auto& [loc, entry] : assignments.items()) {
    Row row{0, 0, loc, "?"};
    std::sscanf(loc.c_str(), "%ld:%ld", &row.line, &row.col);
    if (entry.is_object() && entry.contains("executor") && entry["executor"].is_string())
      row.executor = entry["executor"].get<std::string>();
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.line != b.line ? a.line < b.line : a.col != b.col ? a.col < b.col : a.loc < b.loc;
  });
  const std::string rule(60, '=');
  std::ostringstream os;
  os << rule << "\nMODEL: " << model << "  (compiler format)\n" << rule << "\n";
  os << "\nTotal assignments: " << rows.size() << "\n";
  if (rows.empty()) return os.str();
  os << "\nExecutor distribution:\n";
  for (Executor e : kExecutorPriority) {
    const auto n =
        std::count_if(rows.begin(), rows.end(), [&](const Row& x) { return x.executor == executor_name(e); });
    if (n > 0) os << "  " << upper(executor_name(e)) << ": " << n << "\n";
  }
  const auto other =
      std::count_if(rows.begin(), rows.end(), [](const Row& x) { return !executor_from_name(x.executor); });
  if (other > 0) os << "  other: " << other << "\n";
  os << "\nAssignments:\n";
  for (const Row& row : rows) os << "  " << row.loc << " -> " << row.executor << "\n";
  return os.str();
}

}  // namespace torq::pipeline
