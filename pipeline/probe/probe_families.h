// The graph of each probe family (probe_families.cc), for build_point.
#pragma once

#include <map>
#include <string>

#include "pipeline/probe/point_graph.h"
#include "pipeline/probe/probe_point.h"

namespace torq::pipeline::probe {

// A point's parameters by name.
class Params {
 public:
  explicit Params(const ProbePoint& p);
  int64_t i(const std::string& k) const;
  const std::string& s(const std::string& k) const;
  // The activation tensor of the channels, spatial and rank axes.
  Shape activation() const;

 private:
  std::map<std::string, std::string> values_;
};

// Builds `op`'s node in `g`, sets the features of input 0 and the node's
// attributes; returns why the parameters make no valid model, or "".
std::string build_family(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f);

}  // namespace torq::pipeline::probe
