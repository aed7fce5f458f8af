// A probe's rounds (issue 34): the spec's points, then up to `refine`
// rounds of points inside the learned bounds' gaps (probe_refine.h), each
// round built into units (probe_units.h) and served by the caller's
// `serve` (a local pool, local workers or the fleet's broker). Shared by
// `torq-gen-config probe` and the coordinator's probe mode.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "coordinator/fleet/probe_units.h"
#include "pipeline/probe/probe_point.h"
#include "pipeline/targets/target_profile.h"

namespace torq::coordinator {

struct ProbeRoundsOptions {
  int refine = 3;                    // rounds after the first
  pipeline::PlanOptions plan;        // every point's plan (executors, target, timeout)
  std::string cache_dir;             // the workers' model cache
  bool use_store = true;             // false: run every point again (its stored results erased)
  const std::map<pipeline::Executor, targets::TargetProfile>* base = nullptr;
  const targets::OpCatalog* catalog = nullptr;
  // Called on each unit before it is served (e.g. to put its model in the
  // store for fleet workers to fetch).
  std::function<void(RunUnit&)> prepare_unit;
};

struct ProbeRounds {
  std::vector<pipeline::probe::ProbeRow> rows;  // every round's points
  ServeTotals totals;                           // summed over the rounds
  int rounds = 0;                               // served, the first included
};

// Serves one round's units under `run` (their run id); returns its totals.
using ServeRound = std::function<ServeTotals(std::vector<RunUnit>& units, const std::string& run)>;

// Throws what `serve` throws (the store keeps what finished). A round that
// does not complete (stopped) ends the rounds.
ProbeRounds run_probe_rounds(const std::vector<pipeline::probe::ProbePoint>& points, const ProbeRoundsOptions& o,
                             pipeline::Store& store, const ServeRound& serve, const LogFn& log);

}  // namespace torq::coordinator
