// Probe points as units (issue 34): each point's single-op model built
// (pipeline/probe/probe_model.h), imported into the workers' model cache
// and made a unit of its own, tested on each executor like a layer; and
// their outcomes read back from the store. Shared by `torq-gen-config
// probe` and the coordinator's probe matrix mode. Knows jobs and results,
// never tensors.
#pragma once

#include <string>
#include <vector>

#include "coordinator/fleet/unit_run.h"
#include "pipeline/probe/probe_point.h"

namespace torq::coordinator {

struct ProbeUnits {
  std::vector<RunUnit> units;
  std::vector<pipeline::probe::ProbeRow> rows;  // every point, invalid ones too
  std::vector<size_t> row_of_unit;              // units[i] tests rows[row_of_unit[i]]
};

// Builds and imports every point (bf16 ones converted as discover
// --auto-convert-bf16 does) into `cache_dir` (<hash>.onnx, for the
// workers) and makes a unit per executor of `plan` (the point's seed set,
// its results stored under "<point id>.<executor>"), ordered so that the
// jobs served one after the other are of different points. A point whose
// parameters make no model, or whose model the import refuses, is a row
// with `invalid` set and no unit. `log` gets a line every 500 points.
ProbeUnits make_probe_units(const std::vector<pipeline::probe::ProbePoint>& points, const pipeline::PlanOptions& plan,
                            const std::string& cache_dir, const LogFn& log);

// Each unit's results, from the store, as its row's outcomes (one per
// executor with a result). A crash, a timeout or a refused job is marked
// infrastructure: it says nothing of the op. A point whose host fp32
// reference fails on every executor is no valid model: it becomes invalid.
void read_probe_outcomes(ProbeUnits& pu, const pipeline::Store& store, const std::string& run);

// Whether an error class is the infrastructure's, not the op's (a crash, a
// timeout, a refused job, a model not fetched, a profile not loaded, a
// reference that failed on one executor only).
bool infrastructure_class(const std::string& error_class);
// Whether a result says nothing of the op: an infrastructure class, or a
// tool step timed out or killed whatever its class, or a job not staged.
bool infrastructure_error(const pipeline::ExecResult& r);

}  // namespace torq::coordinator
