#include "worker/engine/kernels/vec_math.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace torq::engine::vm {

namespace {

constexpr int64_t kChunk = 4096;  // floats per task (and the bf16 staging buffer)

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

#pragma GCC push_options
#pragma GCC target("avx2,fma")
// libmvec's AVX2 single-precision erf (x86_64 vector function ABI name).
extern "C" __m256 _ZGVdN8v_erff(__m256);

void erf_chunk_avx2(const float* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _ZGVdN8v_erff(_mm256_loadu_ps(in + i)));
  if (i < n) {  // the tail through one padded vector, so every value takes the same path
    alignas(32) float buf[8] = {};
    std::copy(in + i, in + n, buf);
    _mm256_store_ps(buf, _ZGVdN8v_erff(_mm256_load_ps(buf)));
    std::copy(buf, buf + (n - i), out + i);
  }
}
// The GELU chain (gelu_f32) per 8 lanes in registers: the division, erf,
// addition and multiplications of the unfused kernels, each rounded to fp32.
void gelu_chunk_avx2(const float* x, float c, float k1, float k2, float* out, int64_t n) {
  const __m256 vc = _mm256_set1_ps(c), v1 = _mm256_set1_ps(k1), v2 = _mm256_set1_ps(k2);
  const auto step = [&](__m256 vx) {
    const __m256 e = _ZGVdN8v_erff(_mm256_div_ps(vx, vc));
    return _mm256_mul_ps(_mm256_mul_ps(vx, _mm256_add_ps(e, v1)), v2);
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, step(_mm256_loadu_ps(x + i)));
  if (i < n) {  // the tail through one padded vector, as erf_chunk_avx2
    alignas(32) float buf[8] = {};
    std::copy(x + i, x + n, buf);
    _mm256_store_ps(buf, step(_mm256_load_ps(buf)));
    std::copy(buf, buf + (n - i), out + i);
  }
}
#pragma GCC pop_options

void erf_chunk(const float* in, float* out, int64_t n) {
  if (has_avx2()) return erf_chunk_avx2(in, out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = std::erf(in[i]);
}

}  // namespace

void erf_f32(const float* in, float* out, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t b = c * kChunk;
    erf_chunk(in + b, out + b, std::min(kChunk, n - b));
  }
}

void erf_bf16(const bf16_t* in, bf16_t* out_bf16, float* out_f32, int64_t n, Rounding r) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t b = c * kChunk, len = std::min(kChunk, n - b);
    float buf[kChunk];
    convert_bf16_to_f32(in + b, buf, static_cast<size_t>(len));
    if (out_f32) {
      erf_chunk(buf, out_f32 + b, len);
    } else {
      erf_chunk(buf, buf, len);
      convert_f32_to_bf16(buf, out_bf16 + b, static_cast<size_t>(len), r);
    }
  }
}

void gelu_f32(const float* x, float c, float k1, float k2, float* out, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const int64_t b = ch * kChunk, len = std::min(kChunk, n - b);
    const float* xi = x + b;
    float* o = out + b;
    if (has_avx2()) {
      gelu_chunk_avx2(xi, c, k1, k2, o, len);
      continue;
    }
    for (int64_t i = 0; i < len; ++i) o[i] = xi[i] / c;
    erf_chunk(o, o, len);
    for (int64_t i = 0; i < len; ++i) {
      const float a = o[i] + k1;  // no product is added: nothing to contract into an FMA
      const float m = xi[i] * a;
      o[i] = m * k2;
    }
  }
}

}  // namespace torq::engine::vm
