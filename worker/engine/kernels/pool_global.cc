// GlobalAveragePool of a small f32 tensor in a plain loop (nn_impl.h).
#include <cstring>
#include <vector>

#include "worker/engine/kernels/nn_impl.h"

namespace torq::engine::nn {

namespace {

using ft = dnnl::memory::format_tag;

// The channels-last tag of a rank (nwc, nhwc, ndhwc), undef otherwise.
ft channels_last_tag(size_t rank) {
  return rank == 3 ? ft::nwc : rank == 4 ? ft::nhwc : rank == 5 ? ft::ndhwc : ft::undef;
}

bool is_channels_last(const dnnl::memory::desc& md) {
  const ft tag = channels_last_tag(static_cast<size_t>(md.dims().size()));
  return tag != ft::undef && md == dnnl::memory::desc(md.dims(), dnnl::memory::data_type::f32, tag);
}

// sum[k] += x[p][k] for pixels p in order, k < ch: each channel's sum is
// sequential over the pixels, whatever the vector width (so every clone
// gives the same bits).
__attribute__((target_clones("avx512f", "avx2", "default"))) void sum_rows(const float* x, int64_t pixels,
                                                                            int64_t ch, float* sum) {
  for (int64_t p = 0; p < pixels; ++p) {
    const float* row = x + p * ch;
    for (int64_t k = 0; k < ch; ++k) sum[k] += row[k];
  }
}

}  // namespace

bool global_avg_small(const Tensor& x, const dnnl::memory::desc& x_md, const dnnl::memory::desc& y_md,
                      const Shape& y_shape, Tensor* y) {
  // Each channel's sum is a chain of dependent adds (one per pixel, in
  // order): fast for many channels on few pixels (vectors of channels in
  // flight), slower than oneDNN's two threads on a 16x56x56 input.
  constexpr int64_t kMaxElements = 1 << 17, kMaxPixels = 1024, kMinChannels = 32;
  if (x.dtype() != DType::kF32 || x.rank() < 3 || x.rank() > 5 || x.numel() == 0 || x.numel() > kMaxElements)
    return false;
  const int64_t n = x.dim(0), ch = x.dim(1), pixels = x.numel() / (n * ch);
  if (ch < kMinChannels || pixels > kMaxPixels || !is_channels_last(x_md)) return false;
  // The output [N, C, 1...]: element (n, c) at n * C + c.
  if (!md_is_plain(y_md) && !is_channels_last(y_md)) return false;
  *y = alloc_for_md(y_md, DType::kF32, y_shape);
  const float* in = static_cast<const float*>(x.raw());
  float* out = static_cast<float*>(y->raw());
  const float count = static_cast<float>(pixels);
  for (int64_t b = 0; b < n; ++b) {
    float* yb = out + b * ch;
    std::memset(yb, 0, static_cast<size_t>(ch) * sizeof(float));
    sum_rows(in + b * ch * pixels, pixels, ch, yb);
    for (int64_t k = 0; k < ch; ++k) yb[k] /= count;
  }
  return true;
}

}  // namespace torq::engine::nn
