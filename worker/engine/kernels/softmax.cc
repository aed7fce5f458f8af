// Softmax, LogSoftmax (oneDNN softmax_v2 for f32, plain C++ in double for
// f64) and Hardmax (plain C++). Before opset 13 the input is coerced to 2-D
// at `axis` (default 1) and the op runs over the flattened trailing dims;
// from opset 13 it runs along the single dim `axis` (default -1).
#include <cmath>
#include <limits>
#include <algorithm>
#include <string>

#include "worker/engine/kernels/nn_impl.h"

namespace torq::engine {

namespace {

enum class Mode { kSoftmax, kLogSoftmax, kHardmax };

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(const NodeInfo& n, Mode mode) : mode_(mode) {
    n.expect_attrs({"axis"});
    legacy_ = n.opset() < 13;
    axis_ = n.attr_int("axis", legacy_ ? 1 : -1);
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    TORQ_SUPPORTED(x.dtype() == DType::kF32 || x.dtype() == DType::kF64,
                   std::string(dtype_name(x.dtype())) + " input is not supported");
    TORQ_CHECK(x.rank() >= 1, "input must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, x.rank());
    int64_t outer = 1, len = 1, inner = 1;
    for (int64_t j = 0; j < x.rank(); ++j) {
      if (j < axis) {
        outer *= x.dim(j);
      } else if (j == axis || legacy_) {
        len *= x.dim(j);
      } else {
        inner *= x.dim(j);
      }
    }
    Tensor y(x.dtype(), x.shape());
    if (x.numel() == 0) {
      ctx.output(0) = std::move(y);
      return;
    }
    if (x.dtype() == DType::kF32 && mode_ != Mode::kHardmax && run_dnnl(x, y, outer, len, inner, ctx)) {
      ctx.output(0) = std::move(y);
      return;
    }
    if (x.dtype() == DType::kF32) {
      run_plain(x.data<float>(), y.data<float>(), outer, len, inner);
    } else {
      run_plain(x.data<double>(), y.data<double>(), outer, len, inner);
    }
    ctx.output(0) = std::move(y);
  }

 private:
  bool run_dnnl(const Tensor& x, Tensor& y, int64_t outer, int64_t len, int64_t inner,
                KernelContext& ctx) {
    DnnlEnv& env = ctx.dnnl();
    const Shape dims = {outer, len, inner};
    if (dims != dims_) {
      dims_ = dims;
      ok_ = false;
      try {
        md_ = plain_md(dims, DType::kF32);
        const auto alg = mode_ == Mode::kLogSoftmax ? dnnl::algorithm::softmax_log
                                                    : dnnl::algorithm::softmax_accurate;
        const dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, md_, md_,
                                               1);
        const auto pd = one_at_a_time(
            [&] { return dnnl::softmax_v2_forward::primitive_desc(d, user_scratchpad(), env.engine); });
        prim_ = dnnl::softmax_v2_forward(pd);
        ok_ = true;
      } catch (const dnnl::error&) {
        ok_ = false;
      }
    }
    if (!ok_) return false;
    execute(env, prim_, {{DNNL_ARG_SRC, as_memory(x, md_, env)}, {DNNL_ARG_DST, as_memory(y, md_, env)}});
    return true;
  }

  template <class T>
  void run_plain(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) const {
#pragma omp parallel for collapse(2) schedule(static) if (outer * inner > 1)
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* xs = x + o * len * inner + i;
        T* ys = y + o * len * inner + i;
        int64_t arg = 0;
        for (int64_t k = 1; k < len; ++k)
          if (xs[k * inner] > xs[arg * inner]) arg = k;
        if (mode_ == Mode::kHardmax) {
          for (int64_t k = 0; k < len; ++k) ys[k * inner] = T(k == arg ? 1 : 0);
          continue;
        }
        const double mx = static_cast<double>(xs[arg * inner]);
        double sum = 0;
        for (int64_t k = 0; k < len; ++k) sum += std::exp(static_cast<double>(xs[k * inner]) - mx);
        if (mode_ == Mode::kLogSoftmax) {
          const double ls = std::log(sum);
          for (int64_t k = 0; k < len; ++k)
            ys[k * inner] = static_cast<T>(static_cast<double>(xs[k * inner]) - mx - ls);
        } else {
          for (int64_t k = 0; k < len; ++k)
            ys[k * inner] = static_cast<T>(std::exp(static_cast<double>(xs[k * inner]) - mx) / sum);
        }
      }
    }
  }

  Mode mode_;
  bool legacy_;
  int64_t axis_;
  Shape dims_;
  bool ok_ = false;
  dnnl::memory::desc md_;
  dnnl::softmax_v2_forward prim_;
};

KernelFactory softmax_factory(Mode mode) {
  return [mode](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<SoftmaxKernel>(n, mode);
  };
}

}  // namespace

void register_softmax_kernels(KernelRegistry& r) {
  // Opsets 1..12 coerce to 2-D; 13..17 work along one axis (the kernel
  // reads the node's opset).
  r.add("Softmax", 1, 17, softmax_factory(Mode::kSoftmax));
  r.add("LogSoftmax", 1, 17, softmax_factory(Mode::kLogSoftmax));
  r.add("Hardmax", 1, 17, softmax_factory(Mode::kHardmax));
}

}  // namespace torq::engine
