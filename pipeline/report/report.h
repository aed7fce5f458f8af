// Report files (DESIGN.md §5): the report JSON `torq_gen_config_<model>.json`
// (version "1.1", the source of truth) and the derived compiler JSON
// `torq_gen_config_<model>_compiler.json`, converted to and from ModelReport.
//
// The layout follows the seed tool (synaptics-torq/torq-compiler,
// python/torq/gen_config) so its `view`/`edit` keep reading our files, minus
// its known bugs: `recommended_executor` is JSON null (never the string
// "null"), and a per-layer tolerance override lives in the layer's
// `tolerance` object (the seed's `edit` wrote an op-level `tolerance_used`
// that discovery then ignored; such a field is read back as the override).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace torq::pipeline {

// Per-executor figures of a report's `discovery_report.summary`.
struct ExecutorSummary {
  int success = 0, difference = 0, error = 0;  // layers with that status
  int recommended = 0;                         // layers recommending it
  int layers_timed = 0;                        // results with runtime_ms >= 0
  double total_runtime_ms = 0, min_runtime_ms = 0, max_runtime_ms = 0;
};

// What `discovery_report` holds, computed from the layers (never stored).
struct ReportSummary {
  int total_layers = 0;
  std::array<ExecutorSummary, 3> executors;    // indexed by static_cast<int>(Executor)
  int recommended_none = 0;                    // layers with a null recommendation
  std::vector<std::string> critical_failures;  // layer ids, in layer order
};

// Counts statuses, recommendations, timings and critical failures of `r`.
ReportSummary summarize(const ModelReport& r);
// Adds one layer to `s` (summarize() is this over every layer).
void summarize_layer(ReportSummary& s, const LayerReport& l);

// The report JSON of `r` (DESIGN §5): version "1.1", model_name,
// default_tolerance, ops keyed by layer id in _node_index order (each with
// executors{nss|css|host{status, tolerance_used, max_diff, failure_report
// (errors only), timing (when known), pcc, outputs, error_class, cached,
// dedup_of, worker_id, ...}}, _node_index (omitted when unknown), op_type,
// mlir_location ("line:col", else the file's placeholder kept in
// mlir_placeholder, else null), recommended_executor (name or null), tolerance
// (only with an override), dedup_of (only when set)), discovery_report{summary{
// total_layers, status_counts{executor{success,difference,error}},
// executor_counts{nss,css,host,none}, timing_summary{executor{
// total_runtime_ms, layers_timed, avg_ms, min_ms, max_ms, samples}}},
// critical_failures[{layer_id, node_index, mlir_location, error_details}]},
// has_critical_failures and final_report_text.
// Each object is followed by the keys kept from the file it was read from
// (ModelReport::extra, LayerReport::extra and result_extra, in file order),
// except a key the object already has: a kept key never duplicates one.
// Tolerance objects are {fp_avg_tol, fp_max_tol, allowed_wrong}. Non-finite
// numbers are written as null (NaN) or "inf"/"-inf".
nlohmann::ordered_json report_to_json(const ModelReport& r);

// Parses report JSON `text` read from `path` (used only in messages).
// Accepts reports written by report_to_json and by the seed tool (fields it
// lacks are optional; metrics a non-error result does not give read as NaN,
// i.e. unknown; executors may be absent; the string "null" as
// recommended_executor is no recommendation). Unknown fields are kept, not
// dropped: top-level keys other than version, model_name, default_tolerance,
// ops, discovery_report, has_critical_failures and final_report_text go to
// ModelReport::extra (e.g. the seed's full-model `tolerance`), unknown op
// keys to LayerReport::extra (e.g. `_orig_index`, `mac_count`) and unknown
// or unread executor-result keys to LayerReport::result_extra (e.g. a
// `difference`'s `failure_report`); an `mlir_location` that is not
// "line:col" (the seed's op-type placeholder) is no location but is kept in
// LayerReport::mlir_placeholder. Throws
// PipelineError starting with "<path>: " and naming the field for: text that
// is not JSON or is truncated (with line and column), a compiler JSON, JSON
// that is not a report (no `ops` object), wrong types, unknown executor or
// status names. Layers come back sorted by _node_index (layers without one
// last, in file order).
ModelReport report_from_json(const std::string& text, const std::string& path);

// A variant in words: "fp32", "bf16 (truncate)", "int8 (qdq, ...)", with its
// executors.
std::string variant_text(const VariantRecord& v);
// Why `now` may not write into the report at `path` made from `was`, as a
// user fixes it (the flag that is missing or different), or "" when they are
// the same variant.
std::string variant_mismatch(const VariantRecord& was, const VariantRecord& now, const std::string& path);

// Reads and parses the report at `path`; PipelineError when it cannot be
// read or parsed.
ModelReport read_report_file(const std::string& path);

// The compiler JSON of `r`: {"model_name": ..., "op_assignments":
// {"<line>:<col>": {"executor": "nss"}}}, only for layers with a "line:col"
// location and a non-null recommendation, in layer order; then, like the
// seed tool's, the report's top-level `tolerance` (an extra) when it has one.
nlohmann::ordered_json compiler_json(const ModelReport& r);

// <output_dir>/torq_gen_config_<model_name>.json (no directory when
// output_dir is empty).
std::string report_path(const std::string& output_dir, const std::string& model_name);
// <output_dir>/torq_gen_config_<model_name>_compiler.json.
std::string compiler_path(const std::string& output_dir, const std::string& model_name);

// The compiler JSON beside the report file `report_path` (the seed's rule):
// its stem + "_compiler" + its extension, e.g. d/torq_gen_config_m.json ->
// d/torq_gen_config_m_compiler.json.
std::string compiler_path_for(const std::string& report_path);

// Writes `json` (2-space indent, trailing newline) to `path` atomically: a
// temporary file in the same directory, fsync, rename, fsync of the
// directory. Readers see the old or the new file, never a partial one.
// Throws PipelineError naming the path on any failure (the temporary file is
// removed).
void write_json_atomic(const std::string& path, const nlohmann::ordered_json& json);

// Writes the report and the compiler JSON of `r` into `output_dir` (created
// when missing), each atomically. Throws PipelineError naming the path that
// could not be written.
void write_report_files(const ModelReport& r, const std::string& output_dir);

// `edit`: rewrites the report file it read, `report_path` (whose name need
// not match r.model_name, e.g. the seed's *_quant reports), and its compiler
// JSON compiler_path_for(report_path), each atomically.
void write_report_files_at(const ModelReport& r, const std::string& report_path);

}  // namespace torq::pipeline
