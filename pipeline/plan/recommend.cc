// Recommendation: priority order or fastest executor, critical failures.
#include "pipeline/plan/recommend.h"

#include <vector>

namespace torq::pipeline {
namespace {

struct Candidate {
  Executor executor;  // the results map key (authoritative over ExecResult::executor)
  double runtime_ms;
};

// The executors of `l` whose status is `s`, in priority order.
std::vector<Candidate> with_status(const LayerReport& l, Status s) {
  std::vector<Candidate> out;
  for (Executor e : kExecutorPriority) {
    auto it = l.results.find(e);
    if (it != l.results.end() && it->second.status == s) out.push_back({e, it->second.runtime_ms});
  }
  return out;
}

std::optional<Executor> pick(const std::vector<Candidate>& candidates, bool by_timing) {
  if (candidates.empty()) return std::nullopt;
  if (by_timing) {
    bool all_timed = true;
    for (const Candidate& c : candidates) all_timed = all_timed && c.runtime_ms >= 0;
    if (all_timed) {
      const Candidate* best = &candidates.front();
      for (const Candidate& c : candidates)
        if (c.runtime_ms < best->runtime_ms) best = &c;  // strict: ties keep priority
      return best->executor;
    }
  }
  return candidates.front().executor;
}

}  // namespace

std::optional<Executor> recommend(const LayerReport& l, bool by_timing) {
  if (auto e = pick(with_status(l, Status::kSuccess), by_timing)) return e;
  return pick(with_status(l, Status::kDifference), by_timing);
}

bool is_critical_failure(const LayerReport& l) {
  if (l.results.empty()) return false;
  for (const auto& [e, r] : l.results)
    if (r.status != Status::kError) return false;
  return true;
}

}  // namespace torq::pipeline
