#include "coordinator/gen_config/local_serve.h"

#include <algorithm>
#include <utility>

#include "pipeline/wire/codec.h"
#include "pipeline/wire/fleet_codec.h"
#include "pipeline/plan/plan.h"

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

std::unique_ptr<runner::LocalPool> start_local_pool(const LocalWorkersOptions& lo) {
  runner::LocalPoolOptions po;
  po.workers = std::max(1, lo.workers);
  po.lanes = lo.lanes <= 0 ? po.workers : std::min(lo.lanes, po.workers);
  po.queue_ahead = runner::queue_ahead_for(po.workers, po.lanes, std::max(0, lo.prefetch) * po.workers);
  po.worker_binary = lo.worker_binary;
  po.cache_dir = lo.cache_dir;
  po.threads_per_worker = std::max(1, lo.threads_per_job);
  po.id_prefix = lo.id_prefix;
  po.backend_args = lo.extra_args;
  po.stderr_file = lo.log_file;
  try {
    return std::make_unique<runner::LocalPool>(po);
  } catch (const std::exception& e) {
    throw pipeline::PipelineError(std::string("cannot start the local job processes: ") + e.what());
  }
}

ServeTotals serve_on_pool(std::vector<RunUnit>& units, pipeline::Store& store, const std::string& run,
                          runner::LocalPool& pool, const LogFn& log) {
  const Dispatch dispatch = [&](const FleetBroker::Source& next, const FleetBroker::Done& done,
                                const std::function<void()>& batch_done) {
    std::vector<std::pair<pipeline::JobSpec, pipeline::ExecResult>> got;
    // Each group the pool returns: committed (one batch), then reported, as
    // the broker does before it acknowledges.
    auto commit = [&] {
      // An infrastructure failure (the model cache unreadable, the disk
      // full) is no op's result (issue 30): the run stops on it, after the
      // group's other results are stored; a rerun resumes.
      std::string infra;
      for (auto it = got.begin(); it != got.end();) {
        if (!pipeline::infrastructure_error(it->second)) {
          ++it;
          continue;
        }
        if (infra.empty()) infra = "job " + it->first.id + ": " + it->second.error_message;
        it = got.erase(it);
      }
      std::vector<pipeline::Store::KeyedCommit> commits;
      commits.reserve(got.size());
      for (const auto& [j, r] : got)
        commits.push_back({pipeline::result_key_of(j), {static_cast<int>(j.first_node), r, j.id, pipeline::encode_job(j)}});
      store.commit_results(run, commits, false);
      for (const auto& [j, r] : got) done(j, r);
      got.clear();
      if (batch_done) batch_done();
      if (!infra.empty())
        throw pipeline::PipelineError(infra + " (an infrastructure failure, not the op's result: the run stops here; "
                                              "the store keeps what finished, and a rerun resumes)");
    };
    pool.run(next,
             [&](const pipeline::JobSpec& j, pipeline::ExecResult r) {
               r.job_id = j.id;
               got.emplace_back(j, std::move(r));
             },
             commit);
    pool.wind_down();  // the job processes free their models while the caller writes its report
    store.sync_log();
    return true;
  };
  return serve_units_on(units, store, run, dispatch, log);
}

}  // namespace torq::coordinator
