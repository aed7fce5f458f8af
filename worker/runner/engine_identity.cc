// toolchain_identity(): the generated engine digest (cmake/engine_identity.cmake)
// with the oneDNN actually loaded and the ISA it and our kernels may use
// (cpu_isa.h). Alone in this file so that a changed executor source
// recompiles only this when the digest changes.
#include <oneapi/dnnl/dnnl.h>

#include <string>

#include "engine_identity.h"  // generated
#include "worker/engine/cpu_isa.h"
#include "worker/runner/job_runner.h"

namespace torq::runner {

std::string toolchain_identity() {
  static const std::string id = [] {  // every result names it: built once
    const dnnl_version_t* v = dnnl_version();
    return std::string(TORQ_ENGINE_IDENTITY) + " (oneDNN " + std::to_string(v->major) + "." +
           std::to_string(v->minor) + "." + std::to_string(v->patch) + ", " + engine::effective_isa_name() + ")";
  }();
  return id;
}

}  // namespace torq::runner
