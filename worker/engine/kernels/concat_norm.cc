#include "worker/engine/kernels/concat_norm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernels/nn_impl.h"

namespace torq::engine {

namespace {

// For each of `pixels` nhwc pixels: dst[j] = relu((src[j] - mean[j]) *
// mul[j] + shift[j]) over the pixel's n channels of one input, src advancing
// n and dst c_out floats per pixel. Cloned per ISA so the loop vectorises
// (and the fused multiply-add is one instruction) on AVX-512 or AVX2+FMA.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void norm_relu_pixels(
    const float* __restrict src, float* __restrict dst, const float* __restrict mean, const float* __restrict mul,
    const float* __restrict shift, int64_t n, int64_t c_out, int64_t pixels) {
  const auto one = [&](int64_t j) {
    const float v = std::fma(src[j] - mean[j], mul[j], shift[j]);
    dst[j] = v < 0.f ? 0.f : v;
  };
  for (int64_t p = 0; p < pixels; ++p, src += n, dst += c_out) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)  // whole 16-channel groups: one fixed-width vector step each
      for (int64_t k = j; k < j + 16; ++k) one(k);
    for (; j < n; ++j) one(j);
  }
}

// The same for a run of one channel (plain layout), in place.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void norm_relu_run(
    float* p, float mean, float mul, float shift, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::fma(p[i] - mean, mul, shift);
    p[i] = v < 0.f ? 0.f : v;
  }
}

bool is_nhwc(const Tensor& t) {
  if (t.is_plain() || t.rank() != 4 || t.dtype() != DType::kF32) return false;
  return md_of(t) == dnnl::memory::desc(to_dims(t.shape()), dnnl::memory::data_type::f32,
                                        dnnl::memory::format_tag::acdb);
}

}  // namespace

void ConcatNormRelu::load(const FusedNorm& norm, int64_t c, DnnlEnv& env) {
  std::vector<const void*> key{norm.scale->raw(), norm.bias->raw(), norm.mean->raw(), norm.var->raw()};
  if (key == key_ && static_cast<int64_t>(mean_.size()) == c) return;
  const auto as_f32 = [&](const Tensor& t, const char* what) {
    std::vector<float> f;
    for (double d : nn::channel_params(t, c, what, env)) f.push_back(static_cast<float>(d));
    return f;
  };
  const std::vector<float> scale = as_f32(*norm.scale, "scale"), var = as_f32(*norm.var, "var");
  shift_ = as_f32(*norm.bias, "B");
  mean_ = as_f32(*norm.mean, "mean");
  mul_.resize(static_cast<size_t>(c));
  for (size_t i = 0; i < mul_.size(); ++i) mul_[i] = scale[i] * (1.f / std::sqrt(var[i] + norm.epsilon));
  key_ = key;
}

Tensor ConcatNormRelu::run(const std::vector<const Tensor*>& ins, const Shape& out_shape, const FusedNorm& norm,
                           DnnlEnv& env) {
  TORQ_CHECK(out_shape.size() >= 2, "BatchNormalization input must have rank >= 2");
  const int64_t c = out_shape[1];
  load(norm, c, env);
  // nhwc out when some input is nhwc (the others, a pooling's output
  // before a dense block, are reordered to it).
  bool nhwc = false;
  for (const Tensor* t : ins) nhwc = nhwc || is_nhwc(*t);
  if (nhwc) {
    std::vector<Tensor> moved;
    moved.reserve(ins.size());
    std::vector<const Tensor*> src;
    for (const Tensor* t : ins) {
      if (!is_nhwc(*t)) {
        TORQ_CHECK(t->rank() == 4 && t->dtype() == DType::kF32, "Concat inputs must share rank and type");
        moved.push_back(reorder_to(*t, dnnl::memory::desc(to_dims(t->shape()), dnnl::memory::data_type::f32,
                                                          dnnl::memory::format_tag::acdb),
                                   DType::kF32, env));
        t = &moved.back();
      }
      src.push_back(t);
    }
    const dnnl::memory::desc md(to_dims(out_shape), dnnl::memory::data_type::f32, dnnl::memory::format_tag::acdb);
    Tensor out = alloc_for_md(md, DType::kF32, out_shape);
    const int64_t pixels = out_shape[0] * out_shape[2] * out_shape[3];
    float* dst = static_cast<float*>(out.raw());
    // One parallel region: each thread takes a range of pixels through every input.
#pragma omp parallel
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t p0 = pixels * t / nt, p1 = pixels * (t + 1) / nt;
      int64_t off = 0;
      for (const Tensor* x : src) {
        const int64_t ci = x->dim(1);
        norm_relu_pixels(static_cast<const float*>(x->raw()) + p0 * ci, dst + p0 * c + off, &mean_[off], &mul_[off],
                         &shift_[off], ci, c, p1 - p0);
        off += ci;
      }
    }
    return out;
  }
  // Plain: concatenate, then normalise each channel's run in place.
  Tensor out(DType::kF32, out_shape);
  const int64_t outer = out_shape[0], inner = c ? out.numel() / std::max<int64_t>(1, outer * c) : 0;
  float* dst = out.data<float>();
  int64_t off = 0;
  for (const Tensor* t : ins) {
    const Tensor x = to_plain(*t, env);
    const int64_t run = x.dim(1) * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(x.data<float>() + o * run, run, dst + (o * c + off) * inner);
    off += x.dim(1);
  }
#pragma omp parallel for schedule(static) if (outer * c > 1)
  for (int64_t k = 0; k < outer * c; ++k) {
    const size_t ch = static_cast<size_t>(k % c);
    norm_relu_run(dst + k * inner, mean_[ch], mul_[ch], shift_[ch], inner);
  }
  return out;
}

}  // namespace torq::engine
