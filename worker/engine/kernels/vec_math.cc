#include "worker/engine/kernels/vec_math.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "worker/engine/cpu_isa.h"

namespace torq::engine::vm {

namespace {

constexpr int64_t kChunk = 4096;  // floats per task (and the bf16 staging buffer)

bool has_avx2() {
  return simd_allowed(Simd::kAvx2);
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
// round_to_bf16(v, r) per lane (dtype.h), NaN quieted as it does: the
// value the next node reads after the previous one's output was rounded.
__m256 round_bf16_avx2(__m256 v, bool nearest_even) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i hi = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  __m256i r = bits;
  if (nearest_even) {
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    r = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), lsb);
  }
  r = _mm256_and_si256(r, hi);
  const __m256i abs = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_and_si256(_mm256_or_si256(bits, _mm256_set1_epi32(0x00400000)), hi);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(r, quiet, nan));
}
// gelu_bf16's chain per 8 lanes: gelu_chunk_avx2's steps, each rounded.
void gelu_bf16_chunk_avx2(const bf16_t* x, float c, float k1, float k2, bf16_t* out, int64_t n, bool ne) {
  const __m256 vc = _mm256_set1_ps(c), v1 = _mm256_set1_ps(k1), v2 = _mm256_set1_ps(k2);
  const auto step = [&](__m128i x16) {
    const __m256 vx = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(x16), 16));
    const __m256 d = round_bf16_avx2(_mm256_div_ps(vx, vc), ne);
    const __m256 e = round_bf16_avx2(_ZGVdN8v_erff(d), ne);
    const __m256 a = round_bf16_avx2(_mm256_add_ps(e, v1), ne);
    const __m256 m = round_bf16_avx2(_mm256_mul_ps(vx, a), ne);
    const __m256i y = _mm256_srli_epi32(_mm256_castps_si256(round_bf16_avx2(_mm256_mul_ps(m, v2), ne)), 16);
    // 8 x 32-bit lanes to 8 x 16 bits (packus within 128-bit halves, then
    // the halves' low quadwords together).
    const __m256i packed = _mm256_packus_epi32(y, y);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     step(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  if (i < n) {  // the tail through one padded vector, as erf_chunk_avx2
    alignas(16) bf16_t buf[8] = {};
    std::copy(x + i, x + n, buf);
    _mm_store_si128(reinterpret_cast<__m128i*>(buf), step(_mm_load_si128(reinterpret_cast<const __m128i*>(buf))));
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

void gelu_bf16(const bf16_t* x, float c, float k1, float k2, bf16_t* out, int64_t n, Rounding r) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const int64_t b = ch * kChunk, len = std::min(kChunk, n - b);
    if (has_avx2()) {
      gelu_bf16_chunk_avx2(x + b, c, k1, k2, out + b, len, r == Rounding::kNearestEven);
      continue;
    }
    for (int64_t i = b; i < b + len; ++i) {  // erf_chunk's scalar path: std::erf
      const float xv = bf16_to_f32(x[i]);
      const float e = round_to_bf16(std::erf(round_to_bf16(xv / c, r)), r);
      out[i] = f32_to_bf16(round_to_bf16(xv * round_to_bf16(e + k1, r), r) * k2, r);
    }
  }
}

}  // namespace torq::engine::vm
