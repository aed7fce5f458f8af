// The op families a probe spec may name (issue 34): for each ONNX op, the
// parameter axes that matter to an executor's support, each with its
// default and the values it accepts. A family also says which data types
// its ops are probed in. Plain tables: probe_model.cc builds the models.
#pragma once

#include <string>
#include <vector>

namespace torq::pipeline::probe {

struct ProbeAxis {
  std::string name;
  std::string fallback;              // the default value
  std::vector<std::string> choices;  // the values it takes; empty: a positive integer
  int64_t min = 1, max = 1 << 20;    // integer axes: the range
  bool integer() const { return choices.empty(); }
};

struct ProbeFamily {
  std::string name;                  // conv, pool, ...
  std::vector<std::string> ops;      // ONNX op types of the family
  std::vector<ProbeAxis> axes;       // in the order points name them
  std::vector<std::string> dtypes;   // the dtypes probed by default
};

// Every family, in a fixed order.
const std::vector<ProbeFamily>& probe_families();
// The family of an op, or nullptr.
const ProbeFamily* family_of(const std::string& op);
// Every op a family names.
std::vector<std::string> probe_ops();
// Axis `name` of `f`, or nullptr.
const ProbeAxis* axis_of(const ProbeFamily& f, const std::string& name);

}  // namespace torq::pipeline::probe
