// ConcatNormRelu::run_bf16: the chain in bf16 numerics (concat_norm.h).
#include <immintrin.h>
#include <omp.h>

#include <cmath>
#include <string>

#include "worker/engine/cpu_isa.h"
#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernels/concat_norm.h"
#include "worker/engine/kernels/nn_impl.h"

namespace torq::engine {

namespace {

// 16 bf16 values as fp32 (the zero-masking forms: the plain ones read an
// undefined vector GCC 12 warns about).
__attribute__((target("avx512f"))) inline __m512 widen(__m256i b) {
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, b), 16));
}

// For each of `pixels` nhwc pixels, the n channels of one input: dst[j] =
// relu(bf16(mul[j] * (src[j] - mean[j]) + shift[j])), src advancing n and
// dst c_out values per pixel. The product and the sum are rounded apart
// (the embedded-rounding forms keep the compiler from contracting them into
// a fused multiply-add), as oneDNN's ncsp BatchNormalization computes them;
// VCVTNEPS2BF16 is the instruction its f32 -> bf16 conversion runs on a CPU
// with AVX512_BF16 (round to nearest even, denormals flushed to zero, NaN
// made quiet). Relu on the rounded value: x < 0 ? +0 : x (-0, NaN pass).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void norm_relu_bf16_pixels(
    const uint16_t* src, uint16_t* dst, const float* mean, const float* mul, const float* shift, int64_t n,
    int64_t c_out, int64_t pixels) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t p = 0; p < pixels; ++p, src += n, dst += c_out) {
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 live = n - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1u);
      const __m512 x = widen(_mm256_maskz_loadu_epi16(live, src + j));
      const __m512 d = _mm512_sub_ps(x, _mm512_maskz_loadu_ps(live, mean + j));
      const __m512 prod = _mm512_maskz_mul_round_ps(0xffff, _mm512_maskz_loadu_ps(live, mul + j), d, kRound);
      const __m512 v = _mm512_maskz_add_round_ps(0xffff, prod, _mm512_maskz_loadu_ps(live, shift + j), kRound);
      const __m256i r = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
      const __mmask16 neg = _mm512_cmp_ps_mask(widen(r), zero, _CMP_LT_OQ);
      _mm256_mask_storeu_epi16(dst + j, live, _mm256_maskz_mov_epi16(static_cast<__mmask16>(~neg), r));
    }
  }
}

dnnl::memory::desc nhwc_bf16(const Shape& shape) {
  return dnnl::memory::desc(to_dims(shape), dnnl::memory::data_type::bf16, dnnl::memory::format_tag::acdb);
}

bool cpu_has_avx512_bf16() {
  return simd_allowed(Simd::kAvx512Bf16);
}

}  // namespace

// oneDNN's BatchNormalization of a plain bf16 tensor of `shape` is its ncsp
// implementation (the numbers run_bf16 reproduces).
bool ConcatNormRelu::unfused_norm_is_ncsp(const Shape& shape, float epsilon, DnnlEnv& env) {
  if (ncsp_shape_ == shape && ncsp_eps_ == epsilon) return ncsp_;
  ncsp_ = false;
  try {
    const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                       dnnl::normalization_flags::use_shift;
    const dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, plain_md(shape, DType::kBF16),
                                                    epsilon, flags);
    const auto pd = one_at_a_time(
        [&] { return dnnl::batch_normalization_forward::primitive_desc(d, user_scratchpad(), env.engine); });
    ncsp_ = std::string(pd.impl_info_str()).rfind("ncsp_bnorm", 0) == 0;
  } catch (const dnnl::error&) {
    ncsp_ = false;
  }
  ncsp_shape_ = shape;
  ncsp_eps_ = epsilon;
  return ncsp_;
}

bool ConcatNormRelu::run_bf16(const std::vector<const Tensor*>& ins, const Shape& out_shape, const FusedNorm& norm,
                              Rounding rounding, DnnlEnv& env, Tensor* out) {
  if (rounding != Rounding::kNearestEven || out_shape.size() != 4 || shape_numel(out_shape) == 0 ||
      !cpu_has_avx512_bf16())
    return false;
  for (const Tensor* t : ins)
    if (t->dtype() != DType::kBF16 || t->rank() != 4) return false;
  if (!unfused_norm_is_ncsp(out_shape, norm.epsilon, env)) return false;
  const int64_t c = out_shape[1];
  load(norm, c, env);
  if (ncsp_mul_.size() != mul_.size() || ncsp_key_ != key_) {
    // ncsp: scale / sqrt(var + eps), one division (not scale * (1 / sqrt)).
    const std::vector<double> scale = nn::channel_params(*norm.scale, c, "scale", env);
    const std::vector<double> var = nn::channel_params(*norm.var, c, "var", env);
    ncsp_mul_.resize(static_cast<size_t>(c));
    for (size_t i = 0; i < ncsp_mul_.size(); ++i)
      ncsp_mul_[i] = static_cast<float>(scale[i]) / std::sqrt(static_cast<float>(var[i]) + norm.epsilon);
    ncsp_key_ = key_;
  }
  // nhwc in (inputs in other layouts, the pooling before a dense block,
  // reordered to it: exact) and out.
  std::vector<Tensor> moved;
  moved.reserve(ins.size());
  std::vector<const Tensor*> src;
  int64_t total = 0;
  for (const Tensor* t : ins) {
    const dnnl::memory::desc md = nhwc_bf16(t->shape());
    if (t->is_plain() || !(md_of(*t) == md)) {
      moved.push_back(reorder_to(*t, md, DType::kBF16, env));
      t = &moved.back();
    }
    src.push_back(t);
    total += t->dim(1);
  }
  TORQ_CHECK(total == c, "Concat inputs do not add up to the output's channels");
  Tensor y = alloc_for_md(nhwc_bf16(out_shape), DType::kBF16, out_shape);
  const int64_t pixels = out_shape[0] * out_shape[2] * out_shape[3];
  uint16_t* dst = static_cast<uint16_t*>(y.raw());
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t p0 = pixels * t / nt, p1 = pixels * (t + 1) / nt;
    int64_t off = 0;
    for (const Tensor* x : src) {
      const int64_t ci = x->dim(1);
      const size_t o = static_cast<size_t>(off);
      norm_relu_bf16_pixels(static_cast<const uint16_t*>(x->raw()) + p0 * ci, dst + p0 * c + off, mean_.data() + o,
                            ncsp_mul_.data() + o, shift_.data() + o, ci, c, p1 - p0);
      off += ci;
    }
  }
  // Plain, as the unfused Relu's, unless only Convs read it.
  *out = norm.any_layout ? std::move(y) : to_plain(y, env);
  return true;
}

}  // namespace torq::engine
