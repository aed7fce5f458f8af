#include "coordinator/local_serve.h"

namespace torq::coordinator {

ServeTotals serve_on_local_workers(std::vector<RunUnit>& units, pipeline::Store& store, const std::string& run,
                                   LocalWorkers& workers, const std::string& endpoint, const std::string& worker_log,
                                   const LogFn& log, const LogFn& broker_log) {
  std::atomic<bool> workers_gone{false};
  BrokerOptions bo;
  bo.bind = endpoint;
  bo.any_target = true;
  bo.recovered_hold_ms = 0;
  bo.grace_ms = 1000;
  bo.persist_leases = false;  // leases outlive only a coordinator whose workers outlive it
  bo.stop_flag = &workers_gone;
  bo.log = broker_log;
  workers.watch(&workers_gone);
  // Done: the workers are asked to leave and wind down (freeing their
  // models) while the caller writes its report; it reaps them after.
  ServeTotals t = serve_units(units, store, run, bo, log, [&] {
    if (!workers_gone.load()) workers.stop_soon();
  });
  if (!t.complete)
    throw pipeline::PipelineError("every local worker exited before the run completed (" +
                                  std::to_string(t.pending) + " jobs unfinished; the store keeps the rest)" +
                                  "; worker log " + worker_log + ":\n" + workers.log_tail());
  return t;
}

}  // namespace torq::coordinator
