// Vectorized logistic sigmoid and swish (x * sigmoid(x)) in fp32, for the
// Sigmoid kernel and the Swish a Conv runs fused (act_fusion.h). On this
// machine's EPYC (AVX-512, one thread, in cache) oneDNN 2.6 took ~19 cycles
// per 16 floats for its logistic and ~30 for its swish; these take ~13 and
// ~14 (bound by the FMA pipes). Not part of the engine's API.
//
// sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, with
// e = exp(-|x|) (never overflows) from a degree-7 polynomial on a
// range-reduced argument and an exact IEEE division: within 2 ulp of the
// true value; NaN stays NaN, +-inf give 1 and 0, -0 gives 0.5.
// swish_f32 multiplies each x by the very same sigmoid value (one IEEE
// multiply), so it is bit-identical to sigmoid_f32 followed by a Mul.
#pragma once

#include <cstdint>

namespace torq::engine::vm {

// True when this CPU runs the vector code (AVX-512F). Otherwise the engine
// keeps oneDNN's logistic and swish; both callers ask so that the fused
// and the unfused Swish always take the same path.
bool fast_sigmoid();
// out[i] = sigmoid(in[i]) for n floats (in == out allowed); requires
// fast_sigmoid(). In parallel (OpenMP) when n is large.
void sigmoid_f32(const float* in, float* out, int64_t n);
// x[i] = x[i] * sigmoid(x[i]) in place; requires fast_sigmoid().
void swish_f32(float* x, int64_t n);

}  // namespace torq::engine::vm
