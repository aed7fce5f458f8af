// The envelope of an executor learned from probe results (issue 34): per
// op, the shortest rule set (OpRule keys) that explains which points ran
// and which failed, written as a derived executor profile
// (profile_writer.h) and checked back against every point it was learned
// from. Points it does not explain are residuals: listed, never hidden.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/probe/probe_point.h"
#include "pipeline/targets/target_profile.h"

namespace torq::pipeline::probe {

// One constraint a learned rule keeps, with the points that justify it.
struct LearnedKey {
  std::string key;       // an OpRule key: conv_groups, max_kernel...
  std::string value;     // its YAML value: "5", "[standard, depthwise]", "null" (int: block: cleared)
  int runs_within = 0;   // running points the key judges (all inside its bound)
  int excludes = 0;      // failing points (of a running dtype) outside its bound
  // "runs 96 pts k<=5; excludes 40 failing pts k 7..11; bound in [5, 7)".
  std::string evidence;
  // A bound key (max_*, min_*, element counts): the measured gap its bound
  // lies in, between the running point at the bound (gap_run) and the
  // nearest failing point only this key excludes (gap_fail; 0: none), and
  // the id of that running point (a refinement probes between them).
  int64_t gap_run = 0, gap_fail = 0;
  int bound_run = -1;        // index of that running point in the search's runs
  std::string bound_point;   // its point id
};

// The rule learned for one op from one group of data types.
struct LearnedRule {
  std::vector<LearnedKey> keys;  // kept keys, in the order they were chosen
  const LearnedKey* find(const std::string& key) const;
};

// What was learned of one op.
struct LearnedOp {
  std::string op;
  // Why the op is left out of the profile (no point ran; an op the catalog
  // does not know): the profile refuses it as not supported. "" when kept.
  std::string omitted;
  std::vector<base::DType> dtypes;  // with >= 1 running point
  bool has_float = false, has_int = false;  // a float / integer point ran
  LearnedRule main;                  // the float rule, or the integer one when only integers ran
  LearnedRule int_rule;              // the whole integer rule when both ran (written as an `int:` diff)
  std::string note, int_note;        // the envelope sentences
};

// A point's status per value of the op's key parameter, for the reports.
struct ParamCount {
  std::string value;
  int success = 0, difference = 0, error = 0;
};

// The envelope of one op for one group of data types (float or integer).
struct OpEnvelope {
  std::string op;
  std::string group;                // "float" | "int"
  std::vector<std::string> dtypes;  // data types of its points, as dtype_name gives them
  bool supported = false;           // some point ran
  // "Conv bf16 on nss runs iff groups ∈ {standard} and kernel ≤ 5; otherwise
  // error: <most frequent message> (n); explains 412/415".
  std::string sentence;
  int points = 0, explained = 0;
  std::vector<std::string> residuals;  // ids of points the profile mispredicts
  std::vector<std::pair<std::string, int>> failing_messages;  // most frequent first
  std::string table_param;             // the parameter the table is by: "kernel", "stride"...
  std::vector<ParamCount> table;       // by value of table_param
  double explained_fraction() const { return points ? static_cast<double>(explained) / points : 1.0; }
};

// A derived executor profile and how well it explains the points.
struct DerivedProfile {
  std::string executor;   // nss | css | host
  std::string yaml;       // configs/targets format (profile_writer.h)
  std::string base_name;  // the profile chip, cost and unprobed ops come from; "" none
  base::DType float_type = base::DType::kF32;
  // f32 points were probed and a float point ran: float_type is measured;
  // otherwise it is the base profile's (f32 without one).
  bool float_type_measured = false;
  std::string fp32_error;  // bf16: the most frequent message of the failing f32 points
  bool all_ops = false;    // every point ran on an all-ops base: `ops: all`
  std::vector<LearnedOp> ops;        // every op with a learnable point
  std::vector<OpEnvelope> envelopes; // by op, float group first
  int points = 0, explained = 0;     // learnable points of this executor
  // Learned points: id -> the key of the derived profile that refuses it
  // ("" accepted); explained when that agrees with the measured status.
  std::map<std::string, std::string> predicted;
  std::map<std::string, bool> explained_by_id;
  // Points not learned from: invalid ones and infrastructure failures.
  std::vector<std::string> excluded;
  double explained_fraction() const { return points ? static_cast<double>(explained) / points : 1.0; }
};

// Learns the derived profile of `executor` ("nss") from `rows`. `base` (may
// be null) supplies chip, rounding, cost and the ops the probe did not test;
// `catalog` is the op catalog the derived profile is parsed back with.
DerivedProfile learn_profile(const std::string& executor, const std::vector<ProbeRow>& rows,
                             const targets::TargetProfile* base, const targets::OpCatalog& catalog);

// The round number the learner puts in the gap [max_run, min_fail) of an
// element count: the largest 2^k or 3*2^(k-1) in [max_run, sqrt(max_run *
// min_fail)], else max_run.
int64_t round_element_bound(int64_t max_run, int64_t min_fail);

}  // namespace torq::pipeline::probe
