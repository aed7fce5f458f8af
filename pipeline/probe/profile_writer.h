// A derived executor profile as text (issue 34): the configs/targets/*.yaml
// format TargetProfile::parse reads, with each learned limit's evidence as
// a comment, the envelope sentence as each op's note and the totals in the
// header. Ops the probe did not test are copied from the base profile, so a
// calibration never silently drops them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pipeline/probe/envelope_learn.h"
#include "pipeline/targets/target_profile.h"

namespace torq::pipeline::probe {

// The profile text of `d` (its ops, numerics and totals); chip, rounding,
// cost and the unprobed ops come from `base` (may be null: default cost,
// marked not measured).
std::string profile_yaml(const DerivedProfile& d, const targets::TargetProfile* base);

// The constraints of a rule as YAML (key, value) pairs in OpRule's key
// order, without its `int:` block: ("max_kernel", "7"), ("note", "\"...\"").
std::vector<std::pair<std::string, std::string>> rule_fields(const targets::OpRule& r);

// `s` as a double-quoted YAML scalar.
std::string yaml_quote(const std::string& s);

}  // namespace torq::pipeline::probe
