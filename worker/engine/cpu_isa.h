// Which SIMD paths the engine's own kernels may take where the path changes
// the numbers or the fusions (erf, sigmoid, bf16 ConcatNormRelu, the
// comparison's fast pass). Such a path needs the CPU's instructions and
// oneDNN's permission: its effective ISA (the CPU's, capped by
// ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA). One variable so takes oneDNN and
// these kernels down to AVX2 or SSE4.1: the numbers a CPU without AVX-512
// gets, reproducible on one that has it (ctest runs the conformance and
// unit suites so capped). Kernels whose vector paths give the same numbers
// either way (explicit fma, copies) still choose by the CPU alone.
#pragma once

#include <string>

namespace torq::engine {

enum class Simd {
  kAvx2,        // AVX2 + FMA (oneDNN: avx2)
  kAvx512,      // AVX-512F (oneDNN: avx512_core)
  kAvx512Bf16,  // AVX-512F/BW/VL + BF16 (oneDNN: avx512_core_bf16)
};

// True when the kernels may use `s` (both the CPU and oneDNN's cap allow it).
bool simd_allowed(Simd s);

// oneDNN's effective ISA by name ("avx512_core_bf16", "avx2", "sse41", ...).
std::string effective_isa_name();

}  // namespace torq::engine
