// Two probe runs compared (issue 34): e.g. two toolchain versions on the
// same spec. Points are joined on (point id, executor); each point whose
// status changed is grouped by the key of run A's derived profile it
// violates, so a change reads as "the max_kernel limit moved" or "a point
// A's rule accepted now fails".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "pipeline/probe/envelope_learn.h"
#include "pipeline/probe/probe_point.h"
#include "pipeline/targets/target_profile.h"

namespace torq::pipeline::probe {

// One (point, executor) of the diff.
struct DiffPoint {
  std::string point_id, op, dtype, params, executor;
  // success | difference | error | infrastructure (an infrastructure
  // failure) | invalid (no executor ran it); "" on the side it is missing.
  std::string a_status, b_status;
  std::string a_message, b_message;
};

struct ProbeDiff {
  // Points whose status changed (runs <-> fails, success <-> difference,
  // infrastructure), by the key of A's profile refusing the point: "" A's
  // rule accepted it; "(no profile)" no profile of A for its executor;
  // "(invalid)" a point invalid in both runs, for different reasons.
  std::map<std::string, std::vector<DiffPoint>> changed;
  std::vector<DiffPoint> only_a, only_b;
  int joined = 0;     // (point, executor) pairs in both runs
  int unchanged = 0;  // of them, with the same status
};

// `a_profiles`: run A's derived profiles, matched to executors by name().
ProbeDiff probe_diff(const std::vector<ProbeRow>& a, const std::vector<ProbeRow>& b,
                     const std::vector<targets::TargetProfile>& a_profiles);
// The same with A's learned profiles, parsed with `catalog`.
ProbeDiff probe_diff(const std::vector<ProbeRow>& a, const std::vector<ProbeRow>& b,
                     const std::vector<DerivedProfile>& a_profiles, const targets::OpCatalog& catalog);

std::string probe_diff_text(const ProbeDiff& d);
std::string probe_diff_json(const ProbeDiff& d);

}  // namespace torq::pipeline::probe
