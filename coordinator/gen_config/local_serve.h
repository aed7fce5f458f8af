// Serving units on this machine (torq-gen-config discover and run): the
// embedded FleetBroker on a private ipc:// endpoint with local workers
// started earlier (so they boot while the model is imported).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/fleet/local_fleet.h"
#include "coordinator/fleet/unit_run.h"
#include "worker/runner/local_pool.h"

namespace torq::coordinator {

// Serves `units` through `workers` (started on `endpoint`). Throws
// PipelineError when every local worker exits before the run completes
// (the store keeps what finished) or on a store/bind error. `log` gets
// progress lines, `broker_log` the broker's chatter.
ServeTotals serve_on_local_workers(std::vector<RunUnit>& units, pipeline::Store& store, const std::string& run,
                                   LocalWorkers& workers, const std::string& endpoint, const std::string& worker_log,
                                   const LogFn& log, const LogFn& broker_log);

// Serves `units` on `pool` directly: its job processes (started earlier)
// fed over pipes, with no broker, worker process or socket between them.
// For the sim backend, whose layer jobs take a millisecond: the relay and
// the ZeroMQ round trips took a fifth of a core per worker (a tenth of
// the lanes' time with both cores busy). Supervision is the pool's (a
// hang or crash costs its job); a board's infrastructure errors, which a
// fleet broker requeues, are the toolchain backend's, which keeps the
// broker. Results are committed per group without a disk flush each (a
// killed command keeps them: they are in the store's write-ahead log) and
// flushed to disk when the run ends. Throws PipelineError on a store error.
// The pool for serve_on_pool of a sim-backend run set up as `lo` would set
// up local workers: lo.workers jobs at once as lanes of one process (of
// lo.lanes per process when set), lo.prefetch per lane more waiting in it,
// stderr to lo.log_file, lo.extra_args (a preload) on its command line.
// Its processes start now. Throws PipelineError when they cannot.
std::unique_ptr<runner::LocalPool> start_local_pool(const LocalWorkersOptions& lo);

ServeTotals serve_on_pool(std::vector<RunUnit>& units, pipeline::Store& store, const std::string& run,
                          runner::LocalPool& pool, const LogFn& log);

}  // namespace torq::coordinator
