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
//  - A run id names models + options + profiles: the same units on the same
//    store resume (finished jobs are not recomputed).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/fleet_broker.h"
#include "pipeline/bisect.h"
#include "pipeline/model_import.h"
#include "pipeline/plan.h"
#include "pipeline/store.h"
#include "pipeline/subgraph.h"
#include "pipeline/types.h"

namespace torq::coordinator {

struct RunUnit {
  std::string label;                               // model name or test ID (log lines)
  std::unique_ptr<pipeline::ImportedModel> model;
  pipeline::PlanOptions plan;                      // job_template: target, tolerance, inputs, result_key
  std::unique_ptr<pipeline::Planner> planner;      // made by serve_units
  size_t jobs_done = 0;
  // Layers outside `range` get no job, and the assigned run covers the
  // range only (a subgraph: fed the reference values that enter it).
  std::optional<pipeline::LayerRange> range;
  std::map<int, pipeline::Tolerance> layer_tolerances;  // per-layer overrides (edit --tolerance-*)
  std::vector<int> skip_layers;                    // layers needing no job (skip mode, known success)
  bool use_store = true;                           // false: neither resume nor cache (--recompute-cache)
  bool recommend_by_timing = false;
  // After its layers: one assigned run (every layer of the range on its
  // executor, chained). Executors: `assignment` when `fixed_assignment`
  // (nullopt entries: the compiler decides), else the recommendations in
  // the store; with neither a layer without an executor stops it.
  bool full_model = false;
  bool fixed_assignment = false;
  std::vector<std::optional<pipeline::Executor>> assignment;  // one per layer of the range
  std::vector<uint8_t> passed_alone;               // fixed_assignment: layer i succeeded alone on its executor
  // The assigned run's comparators (true: passes). When it fails and every
  // layer passed alone, `bisect` looks for the smallest failing range.
  std::function<bool(const pipeline::ExecResult&)> passes;
  bool bisect = false;
  // State, filled while serving.
  bool full_issued = false;
  std::optional<pipeline::ExecResult> full_result;  // its result, once known
  std::vector<uint8_t> full_alone;                  // per layer of the range: passed alone (as issued)
  std::unique_ptr<pipeline::Bisector> bisector;
  bool bisect_in_flight = false;
  std::map<std::pair<uint32_t, uint32_t>, pipeline::ExecResult> range_results;  // bisect runs
  std::string bisect_note;                          // why no bisect ran after a failure
  // The key this unit's results are stored under.
  const std::string& key() const {
    return plan.job_template.result_key.empty() ? model->hash() : plan.job_template.result_key;
  }
  // The store key of the assigned run's result.
  std::string full_key() const {
    return key() + "-full" + (range ? std::to_string(range->first) + "_" + std::to_string(range->last) : "");
  }
  // The store key of a bisect range run.
  std::string range_key(uint32_t first, uint32_t last) const {
    return key() + "-r" + std::to_string(first) + "_" + std::to_string(last);
  }
  // The layer range the unit covers.
  pipeline::LayerRange layers() const {
    return range ? *range : pipeline::LayerRange{0, static_cast<uint32_t>(model->layers().size() - 1)};
  }
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
// key, plan options and the content of each executor's profile (sorted, so
// order does not matter): an edited profile makes another run.
std::string units_run_id(const std::string& kind, const std::vector<RunUnit>& units);

// Plans every unit, then serves their jobs through a FleetBroker bound per
// `broker` on `store` under `run`. Progress lines every 25 jobs go to `log`.
// Throws PipelineError on a refused bind or a store error.
// `after_run` runs once the broker loop returns, while the broker is still
// bound (local workers stopped then say goodbye instead of lingering).
ServeTotals serve_units(std::vector<RunUnit>& units, pipeline::Store& store, const std::string& run,
                        BrokerOptions broker, const LogFn& log, const std::function<void()>& after_run = {});

// What runs the jobs instead of a broker (local_serve.h: a pool of job
// processes on this machine), with FleetBroker::run's contract: jobs from
// `next` until it has none and none is in flight, `done` for each once its
// result is committed, `batch_done` after each group of them; true when
// the run completed.
using Dispatch = std::function<bool(const FleetBroker::Source& next, const FleetBroker::Done& done,
                                    const std::function<void()>& batch_done)>;
// serve_units with `dispatch` in place of the broker.
ServeTotals serve_units_on(std::vector<RunUnit>& units, pipeline::Store& store, const std::string& run,
                           const Dispatch& dispatch, const LogFn& log);

// Each layer's recommended executor from the store and that executor's
// status there (dedup copies follow their source; nullopt: no executor
// produced an output).
std::vector<std::pair<std::optional<pipeline::Executor>, pipeline::Status>> unit_recommendations(
    const RunUnit& unit, const pipeline::Store& store, const std::string& run);

// The unit's report from the store (DESIGN §5): every layer with its
// results, dedup copies, recommendation and MLIR location; a unit with a
// range reports its layers renumbered from 0 under the subgraph's name with
// the locations of the subgraph's own import; a fixed-assignment unit has
// no layers. When `mlir_dir` is non-empty the torch-mlir import is written
// there as <name>.torch.mlir.
pipeline::ModelReport unit_report(const RunUnit& unit, const pipeline::Store& store, const std::string& run,
                                  const pipeline::Tolerance& tol, const std::string& mlir_dir, const LogFn& log);

}  // namespace torq::coordinator
