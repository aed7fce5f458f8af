// Per-channel broadcast on a channels-last operand (see binary_chan.h).
#include "worker/engine/kernels/binary_chan.h"

#include <omp.h>

#include "worker/engine/dnnl_util.h"

namespace torq::engine::elt {

namespace {

using dnnl::algorithm;
using dnnl::memory;

// Rows [p0, p1) of C channels: o[p][k] = x[p][k] (alg) c[k]. Built for
// AVX-512 and AVX2 too (picked at load by the CPU); every variant does one
// IEEE add/sub/mul/div per element, so all give the same bits.
__attribute__((target_clones("avx512f", "avx2", "default"))) void rows(algorithm alg, const float* x,
                                                                        const float* c, float* o, int64_t p0,
                                                                        int64_t p1, int64_t ch) {
  for (int64_t p = p0; p < p1; ++p) {
    const float* a = x + p * ch;
    float* r = o + p * ch;
    switch (alg) {
      case algorithm::binary_add:
#pragma omp simd
        for (int64_t k = 0; k < ch; ++k) r[k] = a[k] + c[k];
        break;
      case algorithm::binary_sub:
#pragma omp simd
        for (int64_t k = 0; k < ch; ++k) r[k] = a[k] - c[k];
        break;
      case algorithm::binary_mul:
#pragma omp simd
        for (int64_t k = 0; k < ch; ++k) r[k] = a[k] * c[k];
        break;
      default:
#pragma omp simd
        for (int64_t k = 0; k < ch; ++k) r[k] = a[k] / c[k];
        break;
    }
  }
}

bool channels_last(const memory::desc& md) {
  using ft = memory::format_tag;
  const auto dims = md.dims();
  const ft tag = dims.size() == 3 ? ft::nwc : dims.size() == 4 ? ft::nhwc : dims.size() == 5 ? ft::ndhwc : ft::undef;
  return tag != ft::undef && memory::desc(dims, md.data_type(), tag) == md;
}

}  // namespace

bool channel_broadcast(algorithm alg, const Tensor& x, const memory::desc& x_md, const Tensor& c, Tensor& out) {
  if (alg != algorithm::binary_add && alg != algorithm::binary_sub && alg != algorithm::binary_mul &&
      alg != algorithm::binary_div)
    return false;
  if (x.dtype() != DType::kF32 || c.dtype() != DType::kF32 || !c.is_plain() || x.is_plain()) return false;
  if (x.rank() < 3 || c.rank() > x.rank() || !channels_last(x_md)) return false;
  const int64_t ch = x.dim(1);
  if (c.numel() != ch || x.numel() == 0) return false;
  // c padded on the left to x's rank must be [1, C, 1, ...].
  const int64_t pad = x.rank() - c.rank();
  for (int64_t i = 0; i < c.rank(); ++i) {
    const int64_t axis = i + pad;
    if (c.dim(i) != (axis == 1 ? ch : 1)) return false;
  }
  out = alloc_for_md(x_md, DType::kF32, x.shape());
  const float* xp = static_cast<const float*>(x.raw());
  const float* cp = c.data<float>();
  float* op = static_cast<float*>(out.raw());
  const int64_t pixels = x.numel() / ch;
#pragma omp parallel if (x.numel() > 32768)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    rows(alg, xp, cp, op, pixels * t / nt, pixels * (t + 1) / nt, ch);
  }
  return true;
}

}  // namespace torq::engine::elt
