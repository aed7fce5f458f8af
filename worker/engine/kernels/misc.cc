#include "worker/engine/kernel.h"

namespace torq::engine {

void register_misc_kernels(KernelRegistry& r) { (void)r; }

}  // namespace torq::engine
