// Text rendering of reports for `torq-gen-config view` and for the report's
// `final_report_text` (plain text, no colour codes, '\n' line ends). Pure
// functions; thread-safe.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace torq::pipeline {

// The per-layer status table: a header `  Layer  NSS  CSS  HOST  Recommended`,
// a rule, and one row per layer of `layers` (in the given order). A cell is
// the status word (success, difference, error, or "-" when not tested)
// followed by the runtime when known ("success 0.125ms"); Recommended is the
// executor name or "-". Layer ids longer than 60 characters are cut.
std::string render_status_table(const std::vector<const LayerReport*>& layers);
// One row of that table (id cut to 60 characters, the three cells, the
// recommendation), so a report written one layer at a time keeps rows, not
// layers.
struct StatusRow {
  std::string layer;
  std::array<std::string, 3> cells;  // indexed by static_cast<size_t>(Executor)
  std::string recommended;
};
StatusRow status_row(const LayerReport& l);
std::string render_status_rows(const std::vector<StatusRow>& rows);
// `edit --list`: index (_node_index), full id, per-executor status and the
// recommendation ("(pinned)" when edit pinned it), no id cut short.
std::string render_layer_list(const std::vector<const LayerReport*>& layers);

// The human summary block stored as `final_report_text`: model, layer count,
// per-executor status counts, recommended-executor distribution, critical
// failures and the per-layer status table (seed tool's section order).
std::string render_final_report(const ModelReport& r);
// The same from its parts: the summary, the node text of each critical
// failure (critical_node_text, in the order of s.critical_failures) and the
// table's rows in layer order.
struct ReportSummary;
std::string render_final_report(const std::string& model_name, const ReportSummary& s,
                                const std::vector<std::string>& critical_nodes, const std::vector<StatusRow>& rows);
// A layer's node as the final report names it: its _node_index, or "N/A".
std::string critical_node_text(const LayerReport& l);

// `view REPORT`: model header, status counts per executor, recommended
// executors, timing summary, critical failures, the per-layer status table
// and the default tolerance.
std::string render_summary(const ModelReport& r);

// `view REPORT LAYER`: details of every layer matching `layer_pattern`
// (rules of match_layers in edit.h): index, op type, MLIR location (or the
// file's placeholder, "N/A (placeholder 'Conv')"),
// recommendation, tolerance override, and for each executor its status,
// metrics (max diff, PCC, per-output figures), error class and full message,
// timing, tolerance used, worker and cache/dedup provenance.
// Throws PipelineError "no layer matches 'X'" (with a few available ids)
// when nothing matches.
std::string render_layer(const ModelReport& r, const std::string& layer_pattern);

// `view COMPILER_JSON`: model name, assignment count, executor distribution
// and the `line:col -> executor` list sorted by line then column.
// Throws PipelineError when `compiler` has no `op_assignments` object.
std::string render_compiler(const nlohmann::json& compiler);

}  // namespace torq::pipeline
