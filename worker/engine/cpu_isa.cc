#include "worker/engine/cpu_isa.h"

#include <oneapi/dnnl/dnnl.h>

namespace torq::engine {

namespace {

bool isa_at_least(dnnl_cpu_isa_t isa) {
  // The ISA values are nested bit masks: a larger one holds the smaller.
  static const unsigned effective = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (effective & static_cast<unsigned>(isa)) == static_cast<unsigned>(isa);
}

}  // namespace

bool simd_allowed(Simd s) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                           isa_at_least(dnnl_cpu_isa_avx2);
  static const bool avx512 = __builtin_cpu_supports("avx512f") && isa_at_least(dnnl_cpu_isa_avx512_core);
  static const bool bf16 = avx512 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                           __builtin_cpu_supports("avx512bf16") && isa_at_least(dnnl_cpu_isa_avx512_core_bf16);
  switch (s) {
    case Simd::kAvx2: return avx2;
    case Simd::kAvx512: return avx512;
    case Simd::kAvx512Bf16: return bf16;
  }
  return false;
}

std::string effective_isa_name() {
  struct Name {
    dnnl_cpu_isa_t isa;
    const char* name;
  };
  static const Name names[] = {{dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
                               {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
                               {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
                               {dnnl_cpu_isa_avx512_core, "avx512_core"},
                               {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
                               {dnnl_cpu_isa_avx2, "avx2"},
                               {dnnl_cpu_isa_avx, "avx"},
                               {dnnl_cpu_isa_sse41, "sse41"}};
  for (const auto& n : names)
    if (isa_at_least(n.isa)) return n.name;
  return "none";
}

}  // namespace torq::engine
