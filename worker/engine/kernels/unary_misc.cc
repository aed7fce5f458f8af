// Unary kernels with their own inputs or types: Clip (min/max attributes up
// to opset 10, optional scalar inputs from opset 11, integer dtypes) and Not.
// Clip runs in C++ with numpy's clip semantics (NaN propagates; min > max
// gives max), on a blocked buffer directly when 0 lies within the bounds.
#include <cmath>
#include <limits>
#include <type_traits>

#include "worker/engine/kernels/binary_bcast.h"
#include "worker/engine/kernels/binary_dnnl.h"

namespace torq::engine::elt {
namespace {

template <class T>
T clip_one(T x, T lo, T hi) {
  const T m = x < lo ? lo : x;
  return m > hi ? hi : m;
}

class ClipKernel final : public Kernel {
 public:
  explicit ClipKernel(const NodeInfo& n) : inputs_(n.opset() >= 11) {
    if (inputs_) {
      n.expect_attrs({});
    } else {
      n.expect_attrs({"min", "max"});
      attr_lo_ = n.attr_float("min", std::numeric_limits<float>::lowest());
      attr_hi_ = n.attr_float("max", std::numeric_limits<float>::max());
    }
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const DType dt = x.dtype();
    if (dt == DType::kF32 || dt == DType::kBF16 || dt == DType::kF16) {
      const float lo = bound(ctx, 1, -std::numeric_limits<float>::infinity());
      const float hi = bound(ctx, 2, std::numeric_limits<float>::infinity());
      if (dt == DType::kF16) {
        ctx.output(0) = cast_tensor(run_f32(to_f32(x), lo, hi, ctx.rounding()), DType::kF16,
                                    ctx.rounding());
        return;
      }
      const bool zero_safe = lo <= 0.0f && hi >= 0.0f;
      ctx.output(0) = run_f32(x.is_plain() || zero_safe ? x : to_plain(x, ctx.dnnl()), lo, hi,
                              ctx.rounding());
      return;
    }
    visit_numeric(dt, "Clip", [&](auto tag) {
      using T = typename decltype(tag)::type;
      TORQ_SUPPORTED((inputs_ || std::is_same_v<T, double>),
                     std::string("Clip with min/max attributes on dtype ") + dtype_name(dt));
      T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      if constexpr (std::is_floating_point_v<T>) {
        lo = -std::numeric_limits<T>::infinity();
        hi = std::numeric_limits<T>::infinity();
      }
      if (!inputs_) {
        lo = static_cast<T>(attr_lo_);
        hi = static_cast<T>(attr_hi_);
      }
      if (const Tensor* t = bound_input(ctx, 1, dt)) lo = t->data<T>()[0];
      if (const Tensor* t = bound_input(ctx, 2, dt)) hi = t->data<T>()[0];
      Tensor out(dt, x.shape());
      map_elements(x.data<T>(), out.data<T>(), x.numel(),
                   [lo, hi](T v) { return clip_one(v, lo, hi); });
      ctx.output(0) = out;
    });
  }

 private:
  // The optional bound input i (opset >= 11), checked to be one element of
  // dtype `dt`; nullptr when omitted.
  const Tensor* bound_input(const KernelContext& ctx, size_t i, DType dt) const {
    if (!inputs_) return nullptr;
    const Tensor* t = ctx.input(i);
    if (!t || !t->defined()) return nullptr;
    TORQ_CHECK(t->numel() == 1, "Clip: min/max must be scalars");
    TORQ_CHECK(t->dtype() == dt, "Clip: min/max dtype differs from the input's");
    TORQ_CHECK(t->is_plain(), "Clip: min/max must be plain tensors");
    return t;
  }

  // A float bound: the attribute (opset < 11), the input, or `def`.
  float bound(const KernelContext& ctx, size_t i, float def) const {
    if (!inputs_) return i == 1 ? attr_lo_ : attr_hi_;
    const Tensor* t = ctx.input(i);
    if (!t || !t->defined()) return def;
    TORQ_CHECK(t->numel() == 1, "Clip: min/max must be scalars");
    TORQ_CHECK(is_float(t->dtype()) && t->is_plain(), "Clip: min/max must be float scalars");
    return static_cast<float>(t->get_as_double(0));
  }

  // f32/bf16 in any layout (padding safe) -> f32, or bf16 under RNE.
  static Tensor run_f32(const Tensor& x, float lo, float hi, Rounding r) {
    const bool bf16_out = x.dtype() == DType::kBF16 && r == Rounding::kNearestEven;
    const DType odt = bf16_out ? DType::kBF16 : DType::kF32;
    Tensor out = x.is_plain()
                     ? Tensor(odt, x.shape())
                     : alloc_for_md(md_as(md_of(x), dnnl_dtype(odt)), odt, x.shape());
    const int64_t n = static_cast<int64_t>(x.nbytes() / dtype_size(x.dtype()));
    auto f = [lo, hi](float v) { return clip_one(v, lo, hi); };
    if (x.dtype() == DType::kF32) {
      map_elements(static_cast<const float*>(x.raw()), static_cast<float*>(out.raw()), n, f);
    } else if (bf16_out) {
      map_elements(static_cast<const bf16_t*>(x.raw()), static_cast<bf16_t*>(out.raw()), n,
                   [f](bf16_t v) { return f32_to_bf16(f(bf16_to_f32(v)), Rounding::kNearestEven); });
    } else {
      map_elements(static_cast<const bf16_t*>(x.raw()), static_cast<float*>(out.raw()), n,
                   [f](bf16_t v) { return f(bf16_to_f32(v)); });
    }
    return out;
  }

  bool inputs_;
  float attr_lo_ = 0, attr_hi_ = 0;
};

class NotKernel final : public Kernel {
 public:
  explicit NotKernel(const NodeInfo& n) { n.expect_attrs({}); }
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    TORQ_SUPPORTED(x.dtype() == DType::kBool,
                   std::string("Not of dtype ") + dtype_name(x.dtype()));
    Tensor out(DType::kBool, x.shape());
    map_elements(x.data<bool>(), out.data<bool>(), x.numel(), [](bool v) { return !v; });
    ctx.output(0) = out;
  }
};

}  // namespace

void register_unary_misc_kernels(KernelRegistry& r) {
  // Clip-1 differs from Clip-6 only by consumed_inputs, which is rejected.
  r.add("Clip", 1, 17, make_kernel<ClipKernel>());
  r.add("Not", 1, 17, make_kernel<NotKernel>());
}

}  // namespace torq::engine::elt
