// The op catalog of a process without the engine (the coordinator): every
// op name is taken as known and judged by its own rule. The coordinator
// reads profiles only to learn from and to copy; the workers judge every
// node with the engine's own catalog (worker/engine/profile.h).
#pragma once

#include <string>
#include <vector>

#include "pipeline/probe/probe_ops.h"
#include "pipeline/targets/target_profile.h"

namespace torq::pipeline::probe {

class AnyOpCatalog : public targets::OpCatalog {
 public:
  std::vector<std::string> op_types() const override { return probe_ops(); }
  bool knows(const std::string& op) const override { return !op.empty(); }
  std::string judged_as(const std::string&) const override { return ""; }
};

}  // namespace torq::pipeline::probe
