// The result of an assigned run of a whole model or a subgraph (seed
// workflow step 3, `torq-gen-config run`): its comparison rule, the report
// JSON's `full_model` section and the "--- Full Model Comparison ---" block
// of `final_report_text`. Pure data and text: no jobs, no tensors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/model/subgraph.h"
#include "pipeline/core/types.h"

namespace torq::pipeline {

// How an assigned run is judged. Default: DESIGN §4 on every output
// (elements with rel > fp_max_tol at most allowed_wrong of them). A report's
// top-level `tolerance` {max_relative_diff, max_absolute_diff} (the relaxed
// full-model tolerance the real tool records) replaces it: the run passes
// when its worst relative and absolute differences are both within it.
struct FullModelRule {
  Tolerance tolerance;
  std::optional<double> max_relative_diff, max_absolute_diff;
  std::string source;  // where the rule came from (messages)
};

// Reads a report JSON's top-level `tolerance` into `rule` (nothing when
// absent or null); PipelineError naming `path` when it is malformed.
void read_relaxed_tolerance(const nlohmann::ordered_json& report, const std::string& path, FullModelRule* rule);

// True when `r` ran and meets `rule`.
bool full_model_passes(const ExecResult& r, const FullModelRule& rule);

struct FullModelRun {
  LayerRange range;                  // model layer indices the run covered
  std::vector<LayerInfo> layers;     // the range's layers (report numbering)
  std::vector<uint8_t> decided;      // per layer: placed by "the compiler decides"
  ExecResult result;                 // the assigned run (placed/layer_ms per layer)
  FullModelRule rule;
  bool passed = false;
  // Auto-bisect: the smallest failing range (model layer indices) and its run.
  std::optional<LayerRange> failing;
  ExecResult failing_result;
  int bisect_runs = 0;
  std::string bisect_note;           // why no bisect ran after a failure
};

// The report's `full_model` section: passed, status, executor_counts,
// compiler_decided, metrics{pcc, max_abs_diff, max_rel_diff,
// elements_over_tolerance, elements, outputs[]}, rule, simulated_time_ms per
// executor and total, worker, toolchain, range, first_failing_range.
nlohmann::ordered_json full_model_json(const FullModelRun& run);

// The "--- Full Model Comparison ---" block (seed lines first: Max relative
// difference, Max absolute difference, Number of differences).
std::string full_model_text(const FullModelRun& run);

// Puts `run` into report JSON `report`: the `full_model` section, and its
// block in final_report_text (replacing an earlier one, before the
// per-layer table). Recorded layer results are not touched.
void attach_full_model(nlohmann::ordered_json* report, const FullModelRun& run);

}  // namespace torq::pipeline
