// The rule search of the envelope learner (envelope_learn.h): Find-S (the
// tightest bound of every OpRule key that still admits all running points)
// then Occam pruning (keep greedily only the keys that exclude a failing
// point no kept key excludes). Internal to probe/.
#pragma once

#include <string>
#include <vector>

#include "pipeline/probe/envelope_learn.h"
#include "pipeline/probe/probe_point.h"

namespace torq::pipeline::probe::rule_search {

// The rule of one op's group (float or integer points): `runs` ran, `fails`
// failed (only points of a data type that ran somewhere: a dtype no point of
// ran is the dtypes key's). Every running point satisfies the result.
LearnedRule search_rule(const std::vector<const PointFeatures*>& runs,
                        const std::vector<const PointFeatures*>& fails);

// The constraint keys of an OpRule in the order profiles write them (and
// the check judges them).
const std::vector<std::string>& key_order();

// The condition a kept key states, for a sentence: "kernel ≤ 5".
std::string condition_text(const LearnedKey& k);

// The parameter a key constrains and its value at a point, for the
// reports' tables: ("kernel", "5"). An unknown key: the data type.
std::pair<std::string, std::string> key_param(const std::string& key, const PointFeatures& f);

}  // namespace torq::pipeline::probe::rule_search
