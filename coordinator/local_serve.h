// Serving units on this machine (torq-gen-config discover and run): the
// embedded FleetBroker on a private ipc:// endpoint with local workers
// started earlier (so they boot while the model is imported).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "coordinator/local_fleet.h"
#include "coordinator/unit_run.h"

namespace torq::coordinator {

// Serves `units` through `workers` (started on `endpoint`). Throws
// PipelineError when every local worker exits before the run completes
// (the store keeps what finished) or on a store/bind error. `log` gets
// progress lines, `broker_log` the broker's chatter.
ServeTotals serve_on_local_workers(std::vector<RunUnit>& units, pipeline::Store& store, const std::string& run,
                                   LocalWorkers& workers, const std::string& endpoint, const std::string& worker_log,
                                   const LogFn& log, const LogFn& broker_log);

}  // namespace torq::coordinator
