// The engine's side of executor profiles: the op types its kernels run
// (a profile may name no other), and loading profiles against them.
#include "worker/engine/profile.h"

#include <utility>

#include "worker/engine/kernel.h"
#include "worker/engine/quant_ops.h"

namespace torq::engine {

namespace {

class KernelCatalog : public OpCatalog {
 public:
  std::vector<std::string> op_types() const override { return KernelRegistry::global().op_types(); }
  bool knows(const std::string& op) const override { return KernelRegistry::global().knows(op); }
  std::string judged_as(const std::string& op) const override {
    auto f = qoperator_form(op, 0);
    return f ? f->float_op : std::string();
  }
};

}  // namespace

const OpCatalog& kernel_catalog() {
  static const KernelCatalog catalog;
  return catalog;
}

ExecutorProfile ExecutorProfile::load(const std::string& path) {
  return ExecutorProfile(TargetProfile::load(path, kernel_catalog()));
}

ExecutorProfile ExecutorProfile::parse(const std::string& text, const std::string& filename) {
  return ExecutorProfile(TargetProfile::parse(text, filename, kernel_catalog()));
}

ExecutorProfile ExecutorProfile::resolve(const std::string& name_or_path) {
  return ExecutorProfile(TargetProfile::resolve(name_or_path, kernel_catalog()));
}

}  // namespace torq::engine
