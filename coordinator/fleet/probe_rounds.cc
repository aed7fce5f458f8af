#include "coordinator/fleet/probe_rounds.h"

#include "pipeline/probe/envelope_learn.h"
#include "pipeline/probe/probe_refine.h"

namespace torq::coordinator {

using namespace pipeline;  // NOLINT(google-build-using-namespace)

namespace {

void add_totals(ServeTotals& sum, const ServeTotals& t, bool first) {
  sum.total_layers += t.total_layers;
  sum.estimate += t.estimate;
  sum.done_jobs += t.done_jobs;
  sum.fleet_jobs += t.fleet_jobs;
  sum.resumed += t.resumed;
  sum.cache_hits += t.cache_hits;
  sum.run_s += t.run_s;
  sum.pending += t.pending;
  for (const auto& [s, n] : t.by_status) sum.by_status[s] += n;
  for (const auto& [c, n] : t.by_class) sum.by_class[c] += n;
  sum.complete = (first || sum.complete) && t.complete;
  sum.endpoint = t.endpoint;
}

// One round: its points built into units, served and read back.
std::vector<probe::ProbeRow> serve_points(const std::vector<probe::ProbePoint>& points, const ProbeRoundsOptions& o,
                                          Store& store, const ServeRound& serve, const LogFn& log, ServeTotals* t) {
  ProbeUnits pu = make_probe_units(points, o.plan, o.cache_dir, log);
  for (auto& u : pu.units) {
    u.use_store = o.use_store;
    if (o.prepare_unit) o.prepare_unit(u);
  }
  const std::string run = units_run_id("probe", pu.units);
  if (!o.use_store)
    for (const auto& u : pu.units) {
      std::vector<int> layers;
      for (const auto& l : u.model->layers()) layers.push_back(l.index);
      store.erase_results(run, u.key(), layers, o.plan.executors);
    }
  *t = serve(pu.units, run);
  read_probe_outcomes(pu, store, run);
  return std::move(pu.rows);
}

}  // namespace

ProbeRounds run_probe_rounds(const std::vector<probe::ProbePoint>& points, const ProbeRoundsOptions& o, Store& store,
                             const ServeRound& serve, const LogFn& log) {
  ProbeRounds out;
  ServeTotals t;
  out.rows = serve_points(points, o, store, serve, log, &t);
  add_totals(out.totals, t, true);
  out.rounds = 1;
  for (int round = 1; round <= o.refine && out.totals.complete; ++round) {
    std::vector<probe::DerivedProfile> profiles;
    for (Executor e : o.plan.executors) {
      const targets::TargetProfile* b = o.base && o.base->count(e) ? &o.base->at(e) : nullptr;
      profiles.push_back(probe::learn_profile(executor_name(e), out.rows, b, *o.catalog));
    }
    const auto more = probe::refine_points(out.rows, profiles);
    if (more.empty()) {
      log("probe: refinement round " + std::to_string(round) + ": every learned bound's gap is probed");
      break;
    }
    log("probe: refinement round " + std::to_string(round) + ": " + std::to_string(more.size()) +
        " points inside the learned bounds' gaps");
    auto rows = serve_points(more, o, store, serve, log, &t);
    add_totals(out.totals, t, false);
    for (auto& r : rows) out.rows.push_back(std::move(r));
    ++out.rounds;
  }
  return out;
}

}  // namespace torq::coordinator
