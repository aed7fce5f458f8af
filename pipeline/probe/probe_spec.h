// Probe specs (issue 34): which ops to probe, in which data types, over
// which parameter grids. Strict YAML (file:line:col on any unknown key,
// op, axis or value):
//
//   seed: 7                       # of the sampled points and every point's weights (>= 0)
//   dtypes: [fp32, bf16, int8]    # default per op (an op's family may probe fewer)
//   max_points: 5000              # 1..1000000; a spec that expands to more is an error here
//   refine: 3                     # 0..8 rounds probing inside each learned bound's gap (probe_refine.h)
//   ops:
//     Conv:
//       dtypes: [bf16]            # optional: this op's own
//       base: {kernel: 3, channels: 16}     # the other axes at their family default
//       axes: {kernel: [1, 3, 5, 7, 9]}     # each axis swept alone, the others at base
//       grids: [[stride, spatial]]          # full products of a few axes, the others at base
//       sample: 40                # seeded random points of the product of every axis's values (0..max_points)
//       full: false               # true: the whole product of every axis's values
//
// Points are deduplicated by id and listed in spec order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pipeline/probe/probe_point.h"

namespace torq::pipeline::probe {

struct ProbeOpSpec {
  std::string op;
  std::vector<std::string> dtypes;
  std::map<std::string, std::string> base;                      // axis -> value
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;  // swept alone
  std::vector<std::vector<std::string>> grids;                  // axis names
  int64_t sample = 0;
  bool full = false;
};

struct ProbeSpec {
  std::string file;
  uint64_t seed = 7;
  std::vector<std::string> dtypes{"fp32", "bf16", "int8"};
  int64_t max_points = 5000;
  int64_t refine = 3;  // refinement rounds
  std::vector<ProbeOpSpec> ops;
};

// Parses and validates a spec; throws base::EngineError(kInvalidInput) with
// "file:line:col: message" (and a did-you-mean for a near-miss name). A
// spec expanding to more than max_points points is refused at that key.
ProbeSpec parse_probe_spec(const std::string& text, const std::string& filename);
ProbeSpec load_probe_spec(const std::string& path);

// Every point of the spec, deduplicated, in spec order.
std::vector<ProbePoint> expand_points(const ProbeSpec& spec);

// The id of a point: "<op>-<dtype>-<12 hex>" of its op, dtype, parameters and seed.
std::string point_id(const std::string& op, const std::string& dtype,
                     const std::vector<std::pair<std::string, std::string>>& params, uint64_t seed);

}  // namespace torq::pipeline::probe
