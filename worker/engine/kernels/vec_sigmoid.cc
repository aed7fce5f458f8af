#include "worker/engine/kernels/vec_sigmoid.h"

#include <immintrin.h>

#include <algorithm>

#include "worker/engine/cpu_isa.h"

namespace torq::engine::vm {

namespace {

constexpr int64_t kChunk = 4096;  // floats per task

#pragma GCC push_options
#pragma GCC target("avx512f")

// All lanes: the maskz forms of max, roundscale and scalef (GCC 12 warns
// that the plain ones read an undefined vector).
constexpr __mmask16 kAll = 0xffff;

// sigmoid of 16 floats (see vec_sigmoid.h).
inline __m512 sigmoid16(__m512 x) {
  // t = -|x| (the sign bit set), kept >= -104 (exp(-104) rounds to 0 in
  // fp32; -inf would make the reduction NaN). max(c, t) returns t when t is
  // NaN: NaN propagates.
  const __m512 neg_abs = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
  const __m512 t = _mm512_maskz_max_ps(kAll, _mm512_set1_ps(-104.f), neg_abs);
  // exp(t) = 2^n * exp(r), r = t - n ln2 in [-ln2/2, ln2/2] (Cody-Waite).
  const __m512 n = _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693145751953125f), t);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-1.42860682030941723212e-6f), r);
  // exp(r) by its Taylor polynomial of degree 7 (Horner).
  __m512 p = _mm512_set1_ps(1.f / 5040.f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 720.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  const __m512 e = _mm512_maskz_scalef_ps(kAll, p, n);  // 2^n * p, exact down to the subnormals
  const __m512 d = _mm512_add_ps(_mm512_set1_ps(1.f), e);
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 num = _mm512_mask_blend_ps(neg, _mm512_set1_ps(1.f), e);
  return _mm512_div_ps(num, d);
}

// Every element, the tail too, goes through the same vector code.
void chunk(const float* in, float* out, int64_t len, bool swish) {
  int64_t i = 0;
  for (; i + 16 <= len; i += 16) {
    const __m512 x = _mm512_loadu_ps(in + i);
    const __m512 s = sigmoid16(x);
    _mm512_storeu_ps(out + i, swish ? _mm512_mul_ps(x, s) : s);
  }
  if (i < len) {
    const __mmask16 m = static_cast<__mmask16>((1u << (len - i)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(m, in + i);
    const __m512 s = sigmoid16(x);
    _mm512_mask_storeu_ps(out + i, m, swish ? _mm512_mul_ps(x, s) : s);
  }
}

#pragma GCC pop_options

void run(const float* in, float* out, int64_t n, bool swish) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t b = c * kChunk;
    chunk(in + b, out + b, std::min(kChunk, n - b), swish);
  }
}

}  // namespace

bool fast_sigmoid() {
  return simd_allowed(Simd::kAvx512);
}

void sigmoid_f32(const float* in, float* out, int64_t n) { run(in, out, n, false); }

void swish_f32(float* x, int64_t n) { run(x, x, n, true); }

}  // namespace torq::engine::vm
