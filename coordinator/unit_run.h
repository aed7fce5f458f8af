// Serving "units" to the fleet: the engine room shared by `torq-coordinator
// --model` runs (fleet_run.h) and matrix runs (matrix_run.h). A unit is one
// imported model tested one way (executors, target, inputs, options); its
// layer jobs are planned, looked up in the store (resume) and the
// content-addressed cache, and the rest served through one FleetBroker.
// Knows jobs and results, never tensors or sockets (the broker has those).
//
// Contracts:
//  - Two units of one run must not share a result key (the model hash, or
//    the job template's result_key): serve_units throws PipelineError.
//  - Every result reaches the store before it is counted; cache hits are
//    committed in one batch per unit each time the planner runs dry.
//  - A run id names models + options: the same units on the same store
//    resume (finished jobs are not recomputed).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/fleet_broker.h"
#include "pipeline/model_import.h"
#include "pipeline/plan.h"
#include "pipeline/store.h"
#include "pipeline/types.h"

namespace torq::coordinator {

struct RunUnit {
  std::string label;                               // model name or test ID (log lines)
  std::unique_ptr<pipeline::ImportedModel> model;
  pipeline::PlanOptions plan;                      // job_template: target, tolerance, inputs, result_key
  std::unique_ptr<pipeline::Planner> planner;      // made by serve_units
  size_t jobs_done = 0;
  // After its layers: one assigned full-model run (every layer on its
  // recommended executor, chained), when every layer has a recommendation.
  bool full_model = false;
  bool full_issued = false;
  std::optional<pipeline::ExecResult> full_result;  // its result, once known
  // The key this unit's results are stored under.
  const std::string& key() const {
    return plan.job_template.result_key.empty() ? model->hash() : plan.job_template.result_key;
  }
  // The store key of the assigned full-model run's result.
  std::string full_key() const { return key() + "-full"; }
};

struct ServeTotals {
  size_t total_layers = 0, estimate = 0, saved_by_dedup = 0;
  size_t done_jobs = 0, fleet_jobs = 0, resumed = 0, cache_hits = 0;
  std::map<pipeline::Status, size_t> by_status;
  std::map<std::string, size_t> by_class;   // error classes
  BrokerStats fleet;
  bool complete = false;
  double run_s = 0;                          // the fleet phase
  std::string endpoint;                      // bound endpoint
  size_t pending = 0;                        // jobs unfinished when stopped early
};

using LogFn = std::function<void(const std::string&)>;

// The run id of a set of units: a hash of `kind` and every unit's result
// key and plan options (sorted, so order does not matter).
std::string units_run_id(const std::string& kind, const std::vector<RunUnit>& units);

// Plans every unit, then serves their jobs through a FleetBroker bound per
// `broker` on `store` under `run`. Progress lines every 25 jobs go to `log`.
// Throws PipelineError on a refused bind or a store error.
ServeTotals serve_units(std::vector<RunUnit>& units, pipeline::Store& store, const std::string& run,
                        BrokerOptions broker, const LogFn& log);

// Each layer's recommended executor from the store (dedup copies follow
// their source; nullopt: no executor produced an output).
std::vector<std::optional<pipeline::Executor>> unit_recommendations(const RunUnit& unit, const pipeline::Store& store,
                                                                    const std::string& run);

// The unit's report from the store (DESIGN §5): every layer with its
// results, dedup copies, recommendation and MLIR location. When `mlir_dir`
// is non-empty the torch-mlir import is written there as <model>.torch.mlir.
pipeline::ModelReport unit_report(const RunUnit& unit, const pipeline::Store& store, const std::string& run,
                                  const pipeline::Tolerance& tol, const std::string& mlir_dir, const LogFn& log);

}  // namespace torq::coordinator
