#include "coordinator/fleet/assigned_run.h"

namespace torq::coordinator {

using namespace pipeline;

namespace {

// A run of [first, last] with the unit's executors (the range is within
// the unit's layers).
JobSpec unit_range_job(const RunUnit& u, uint32_t first, uint32_t last, const std::string& key) {
  const uint32_t base = u.layers().first;
  const std::vector<std::optional<Executor>> a(u.assignment.begin() + (first - base),
                                               u.assignment.begin() + (last - base) + 1);
  JobSpec j = range_job(u.plan.job_template, u.model->hash(), first, last, a, u.plan.executor_targets, key);
  // End to end (against the fp32 original) for the run of the whole model.
  if (!u.range && first == 0 && last + 1 == u.model->layers().size()) j.original_hash = u.original_hash;
  return j;
}

// Fills u.assignment and u.full_alone from the store's recommendations;
// false (said through `log`) when a layer has no executor.
bool assignment_from_store(RunUnit& u, const Store& store, const std::string& run, const LogFn& log) {
  const LayerRange lr = u.layers();
  const auto recs = unit_recommendations(u, store, run);
  u.assignment.clear();
  u.full_alone.clear();
  for (uint32_t i = lr.first; i <= lr.last; ++i) {
    if (!recs[i].first) {
      log(u.label + ": no assigned run: no executor ran layer " + u.model->layers()[i].id);
      return false;
    }
    u.assignment.push_back(recs[i].first);
    u.full_alone.push_back(recs[i].second == Status::kSuccess ? 1 : 0);
  }
  return true;
}

bool all_passed_alone(const RunUnit& u) {
  if (u.full_alone.empty()) return false;
  for (uint8_t p : u.full_alone)
    if (!p) return false;
  return true;
}

// Why the bisect does not run although the assigned run failed: the first
// layer not known to pass alone, and why.
std::string why_not_alone(const RunUnit& u) {
  const uint32_t base = u.layers().first;
  for (size_t i = 0; i < u.full_alone.size(); ++i) {
    if (u.full_alone[i]) continue;
    const std::string id = u.model->layers()[base + i].id;
    if (i < u.assignment.size() && !u.assignment[i])
      return "not bisected: layer " + id + " has no assignment (the compiler decides), so it was not tested alone there";
    return "not bisected: layer " + id + " did not pass alone on its executor (or has no per-layer result)";
  }
  return "not bisected: no per-layer results";
}

}  // namespace

std::optional<JobSpec> next_assigned_job(RunUnit& u, const Store& store, const std::string& run, const LogFn& log) {
  if (!u.full_model) return std::nullopt;
  if (!u.full_issued) {
    if (!u.planner->all_done()) return std::nullopt;
    u.full_issued = true;
    if (u.fixed_assignment) u.full_alone = u.passed_alone;
    else if (!assignment_from_store(u, store, run, log)) return std::nullopt;
    if (u.assignment.empty()) return std::nullopt;
    const LayerRange lr = u.layers();
    return unit_range_job(u, lr.first, lr.last, u.full_key());
  }
  if (!u.bisector || u.bisect_in_flight || u.bisector->done()) return std::nullopt;
  const auto r = *u.bisector->next();
  u.bisect_in_flight = true;
  return unit_range_job(u, r.first, r.second, u.range_key(r.first, r.second));
}

bool record_assigned(RunUnit& u, const JobSpec& j, const ExecResult& r, const LogFn& log) {
  if (j.assignment.empty()) return false;
  const bool ok = r.status != Status::kError && (!u.passes || u.passes(r));
  if (result_key_of(j) == u.full_key()) {
    u.full_result = r;
    if (ok || !u.bisect) return true;
    if (!all_passed_alone(u)) {
      u.bisect_note = why_not_alone(u);
      return true;
    }
    if (j.first_node == j.last_node) {
      u.bisect_note = "not bisected: the range is one layer";
      return true;
    }
    u.bisector = std::make_unique<Bisector>(j.first_node, j.last_node);
    log(u.label + ": assigned run failed although every layer passed alone: bisecting layers " +
        std::to_string(j.first_node) + ".." + std::to_string(j.last_node));
    return true;
  }
  u.range_results[{j.first_node, j.last_node}] = r;
  if (u.bisector && !u.bisector->done()) {
    u.bisect_in_flight = false;
    u.bisector->report(!ok);
    if (u.bisector->done()) {
      const auto [a, b] = u.bisector->result();
      log(u.label + ": smallest failing range: layers " + std::to_string(a) + ".." + std::to_string(b) + " (" +
          std::to_string(u.bisector->runs()) + " range runs)");
    }
  }
  return true;
}

std::optional<FoundRange> bisect_found(const RunUnit& u) {
  if (!u.bisector || !u.bisector->done() || !u.full_result) return std::nullopt;
  const auto [a, b] = u.bisector->result();
  FoundRange f{LayerRange{a, b}, *u.full_result, u.bisector->runs()};
  auto it = u.range_results.find({a, b});
  if (it != u.range_results.end()) f.result = it->second;
  return f;
}

FullModelRun full_model_run(const RunUnit& u, const std::vector<LayerInfo>& layers, const FullModelRule& rule) {
  FullModelRun f;
  f.range = u.layers();
  f.layers = layers;
  for (const auto& a : u.assignment) f.decided.push_back(a ? 0 : 1);
  f.result = *u.full_result;
  f.rule = rule;
  f.passed = full_model_passes(f.result, rule) && (!u.passes || u.passes(f.result));
  if (auto found = bisect_found(u)) {
    f.failing = found->range;
    f.failing_result = found->result;
    f.bisect_runs = found->runs;
  } else if (u.bisector) {
    f.bisect_note = "bisect did not finish";
  } else {
    f.bisect_note = u.bisect_note;
  }
  return f;
}

}  // namespace torq::coordinator
