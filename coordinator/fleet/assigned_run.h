// The assigned runs of a unit (see unit_run.h): once its layers are done,
// one run of its layer range with every layer on its executor, chained; and
// when that fails although every layer passed alone, the auto-bisect's
// range runs (pipeline/plan/bisect.h), one at a time. Jobs and results only.
#pragma once

#include <optional>
#include <string>

#include "coordinator/fleet/unit_run.h"
#include "pipeline/report/full_model.h"

namespace torq::coordinator {

// The unit's next assigned-run job, or nullopt (not yet, none left, or
// impossible: a layer without an executor, said through `log`). The job
// still has to be looked up in the store and cache by the caller.
std::optional<pipeline::JobSpec> next_assigned_job(RunUnit& u, const pipeline::Store& store, const std::string& run,
                                                   const LogFn& log);

// Records the result of an assigned-run job of `u`; false when `j` is not
// one (a layer job). Starts or advances the bisect.
bool record_assigned(RunUnit& u, const pipeline::JobSpec& j, const pipeline::ExecResult& r, const LogFn& log);

// The smallest failing range the bisect found, with its result (nullopt
// while it runs, or when there was none).
struct FoundRange {
  pipeline::LayerRange range;
  pipeline::ExecResult result;
  int runs = 0;
};
std::optional<FoundRange> bisect_found(const RunUnit& u);

// The unit's assigned run (u.full_result must be set) as a report section:
// `layers` are the unit's range in report numbering.
pipeline::FullModelRun full_model_run(const RunUnit& u, const std::vector<pipeline::LayerInfo>& layers,
                                      const pipeline::FullModelRule& rule);

}  // namespace torq::coordinator
