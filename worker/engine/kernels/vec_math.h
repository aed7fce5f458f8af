// Vectorized float math for the element-wise kernels, on glibc's libmvec
// (the vector variants GCC calls for `#pragma omp simd` loops under
// -ffast-math; glibc documents them within a few ulp of the scalar libm).
// Not part of the engine's API.
#pragma once

#include <cstdint>

#include "pipeline/base/dtype.h"

namespace torq::engine::vm {

// out[i] = erf(in[i]) for n floats (in == out allowed); NaN stays NaN,
// +-inf gives +-1. Uses libmvec's 8-wide AVX2 erff when the CPU has AVX2,
// std::erf otherwise; in parallel (OpenMP) when n is large.
void erf_f32(const float* in, float* out, int64_t n);
// The same from bf16 values; results rounded to bf16 with `r`, or kept f32
// when out_f32 is non-null (then out_bf16 is ignored).
void erf_bf16(const bf16_t* in, bf16_t* out_bf16, float* out_f32, int64_t n, Rounding r);

// The erf GELU chain of gelu_fusion.h over n floats: out[i] =
// (x[i] * (erf(x[i] / c) + k1)) * k2, each step rounded to fp32 as the Div,
// Erf (erf_f32's numbers), Add and Mul kernels round it (in == out not
// allowed); in parallel when n is large.
void gelu_f32(const float* x, float c, float k1, float k2, float* out, int64_t n);
// The same chain over bf16 values as bf16 numerics runs it node by node:
// each step computed in fp32 from bf16 values (erf as erf_f32) and its
// result rounded to bf16 with `r` before the next step reads it.
void gelu_bf16(const bf16_t* x, float c, float k1, float k2, bf16_t* out, int64_t n, Rounding r);

}  // namespace torq::engine::vm
