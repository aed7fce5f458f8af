// Normalisation kernels on oneDNN that accept blocked inputs:
// BatchNormalization (inference) and LRN. Both run on the producer's
// memory layout and natively in bf16, with a plain C++ path for what oneDNN
// cannot express exactly (f64 data, LRN with an even size, unusual ranks).
// InstanceNormalization and LayerNormalization live in norm_impl.cc.
#include <cmath>
#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "worker/engine/kernels/nn_impl.h"

namespace torq::engine {

namespace {

// Shared plan of a same-layout oneDNN primitive (one data descriptor).
struct DnnlPlan {
  nn::InputKey key;
  Rounding rounding = Rounding::kNearestEven;
  bool dnnl = false;
  DType compute = DType::kF32;
  dnnl::memory::desc md;  // src and dst descriptor (compute dtype)
  dnnl::primitive prim;
};

// Runs plan.prim on x (converted to the compute dtype in its own layout)
// with extra arguments; returns the output tensor in the same layout.
Tensor run_same_layout(DnnlPlan& plan, const Tensor& x, CachedReorder& re, KernelContext& ctx,
                       std::unordered_map<int, dnnl::memory> args) {
  DnnlEnv& env = ctx.dnnl();
  const Tensor src = nn::convert_keep_layout(x, plan.compute, re, env);
  Tensor y = alloc_for_md(plan.md, plan.compute, x.shape());
  args[DNNL_ARG_SRC] = as_memory(src, plan.md, env);
  args[DNNL_ARG_DST] = as_memory(y, plan.md, env);
  execute(env, plan.prim, args);
  return y;
}

// The plan for x: keyed on x and the rounding; when `eligible`, a oneDNN
// primitive make_prim(md) on x's layout in the compute dtype, or the plain
// path when oneDNN cannot build it.
template <class MakePrim>
DnnlPlan make_dnnl_plan(const Tensor& x, KernelContext& ctx, bool eligible, MakePrim make_prim) {
  DnnlPlan p;
  p.key = nn::input_key(x);
  p.rounding = ctx.rounding();
  if (!eligible) return p;
  try {
    p.compute = nn::compute_dtype(x.dtype(), ctx.rounding());
    p.md = nn::md_with_dtype(md_of(x), dnnl_dtype(p.compute));
    p.prim = make_prim(p.md);
    p.dnnl = true;
  } catch (const dnnl::error&) {
    p.dnnl = false;
  }
  return p;
}

// x as a plain f32 or f64 tensor for a plain path (bf16 widened to f32);
// other dtypes are unsupported by `op`.
Tensor plain_float_input(const Tensor& x, KernelContext& ctx, const char* op) {
  Tensor xp = to_plain(x, ctx.dnnl());
  if (xp.dtype() == DType::kBF16) xp = to_f32(xp);
  TORQ_SUPPORTED(xp.dtype() == DType::kF32 || xp.dtype() == DType::kF64,
                 std::string(op) + " of " + dtype_name(xp.dtype()) + " is not supported");
  return xp;
}

// Calls run(dst, src) with y's and xp's data as float or double (xp's dtype,
// f32 or f64; y has the same dtype).
template <class Run>
void run_f32_or_f64(Tensor& y, const Tensor& xp, Run&& run) {
  if (xp.dtype() == DType::kF32) {
    run(y.data<float>(), xp.data<float>());
  } else {
    run(y.data<double>(), xp.data<double>());
  }
}

// ---------------------------------------------------------------- BatchNorm

class BatchNormKernel final : public Kernel {
 public:
  explicit BatchNormKernel(const NodeInfo& n) {
    const int op = n.opset();
    if (op < 7) {
      n.expect_attrs({"epsilon", "is_test", "momentum", "spatial"});
      TORQ_SUPPORTED(n.attr_int("is_test", 0) == 1,
                     "BatchNormalization-6 with is_test=0 (training) is not supported");
    } else if (op < 9) {
      n.expect_attrs({"epsilon", "momentum", "spatial"});
    } else if (op < 14) {
      n.expect_attrs({"epsilon", "momentum"});
    } else {
      n.expect_attrs({"epsilon", "momentum", "training_mode"});
      TORQ_SUPPORTED(n.attr_int("training_mode", 0) == 0,
                     "BatchNormalization with training_mode=1 is not supported");
    }
    TORQ_SUPPORTED(n.attr_int("spatial", 1) == 1,
                   "BatchNormalization with spatial=0 (per-activation statistics) is not supported");
    for (size_t i = 1; i < n.num_outputs(); ++i)
      TORQ_SUPPORTED(!n.has_output(i),
                     "BatchNormalization training outputs (mean, var, saved stats) are not supported");
    TORQ_CHECK(n.num_inputs() == 5, "BatchNormalization needs 5 inputs");
    epsilon_ = n.attr_float("epsilon", 1e-5f);
  }

  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    TORQ_CHECK(x.rank() >= 2, "BatchNormalization input must have rank >= 2");
    const int64_t c = x.dim(1);
    load_params(ctx, c);
    if (!plan_ || !nn::same_input(plan_->key, x) || plan_->rounding != ctx.rounding())
      plan_ = make_plan(x, ctx);
    if (plan_->dnnl) {
      DnnlEnv& env = ctx.dnnl();
      auto mem = [&](Tensor& t) { return as_memory(t, plain_md(t.shape(), DType::kF32), env); };
      ctx.output(0) = run_same_layout(*plan_, x, re_, ctx,
                                      {{DNNL_ARG_MEAN, mem(mean_)},
                                       {DNNL_ARG_VARIANCE, mem(var_)},
                                       {DNNL_ARG_SCALE, mem(scale_)},
                                       {DNNL_ARG_SHIFT, mem(shift_)}});
    } else {
      run_plain(x, ctx);
    }
  }

 private:
  // The per-channel parameters as f32 tensors (once when they are constant).
  void load_params(KernelContext& ctx, int64_t c) {
    bool constant = true;
    for (size_t i = 1; i <= 4; ++i) constant = constant && ctx.input_is_constant(i);
    if (params_loaded_ && constant && scale_.numel() == c) return;
    DnnlEnv& env = ctx.dnnl();
    scale_d_ = nn::channel_params(ctx.in(1), c, "scale", env);
    shift_d_ = nn::channel_params(ctx.in(2), c, "B", env);
    mean_d_ = nn::channel_params(ctx.in(3), c, "mean", env);
    var_d_ = nn::channel_params(ctx.in(4), c, "var", env);
    auto to_t = [c](const std::vector<double>& v) {
      Tensor t(DType::kF32, {c});
      for (int64_t i = 0; i < c; ++i) t.data<float>()[i] = static_cast<float>(v[static_cast<size_t>(i)]);
      return t;
    };
    scale_ = to_t(scale_d_);
    shift_ = to_t(shift_d_);
    mean_ = to_t(mean_d_);
    var_ = to_t(var_d_);
    params_loaded_ = true;
  }

  DnnlPlan make_plan(const Tensor& x, KernelContext& ctx) const {
    const bool eligible = x.dtype() == DType::kF32 || x.dtype() == DType::kBF16;
    return make_dnnl_plan(x, ctx, eligible, [&](const dnnl::memory::desc& md) {
      const auto flags = dnnl::normalization_flags::use_global_stats |
                         dnnl::normalization_flags::use_scale |
                         dnnl::normalization_flags::use_shift;
      const dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, md,
                                                      epsilon_, flags);
      const auto pd = one_at_a_time([&] {
        return dnnl::batch_normalization_forward::primitive_desc(d, user_scratchpad(), ctx.dnnl().engine);
      });
      return dnnl::primitive(dnnl::batch_normalization_forward(pd));
    });
  }

  void run_plain(const Tensor& x, KernelContext& ctx) {
    const Tensor xp = plain_float_input(x, ctx, "BatchNormalization");
    const int64_t n = x.dim(0), c = x.dim(1), inner = n * c != 0 ? x.numel() / (n * c) : 0;
    std::vector<double> a(static_cast<size_t>(c)), b(static_cast<size_t>(c));
    for (size_t i = 0; i < static_cast<size_t>(c); ++i) {
      a[i] = scale_d_[i] / std::sqrt(var_d_[i] + static_cast<double>(epsilon_));
      b[i] = shift_d_[i] - mean_d_[i] * a[i];
    }
    Tensor y(xp.dtype(), xp.shape());
    auto run = [&](auto* dst, const auto* src) {
#pragma omp parallel for schedule(static) if (n * c > 1)
      for (int64_t p = 0; p < n * c; ++p) {
        const size_t ch = static_cast<size_t>(p % c);
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = p * inner + i;
          dst[k] = static_cast<std::remove_pointer_t<decltype(dst)>>(
              static_cast<double>(src[k]) * a[ch] + b[ch]);
        }
      }
    };
    run_f32_or_f64(y, xp, run);
    ctx.output(0) = std::move(y);
  }

  float epsilon_;
  bool params_loaded_ = false;
  std::vector<double> scale_d_, shift_d_, mean_d_, var_d_;
  Tensor scale_, shift_, mean_, var_;
  std::optional<DnnlPlan> plan_;
  CachedReorder re_;
};

// ---------------------------------------------------------------------- LRN

class LrnKernel final : public Kernel {
 public:
  explicit LrnKernel(const NodeInfo& n) {
    n.expect_attrs({"alpha", "beta", "bias", "size"});
    TORQ_CHECK(n.has_attr("size"), "LRN needs the size attribute");
    size_ = n.attr_int("size", 1);
    TORQ_CHECK(size_ >= 1, "LRN size must be positive");
    alpha_ = n.attr_float("alpha", 1e-4f);
    beta_ = n.attr_float("beta", 0.75f);
    bias_ = n.attr_float("bias", 1.0f);
  }

  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    TORQ_CHECK(x.rank() >= 2, "LRN input must have rank >= 2 (N, C, spatial...)");
    if (!plan_ || !nn::same_input(plan_->key, x) || plan_->rounding != ctx.rounding())
      plan_ = make_plan(x, ctx);
    if (plan_->dnnl) {
      ctx.output(0) = run_same_layout(*plan_, x, re_, ctx, {});
    } else {
      run_plain(x, ctx);
    }
  }

 private:
  DnnlPlan make_plan(const Tensor& x, KernelContext& ctx) const {
    // oneDNN's window is centred, [c - (n-1)/2, c + (n-1)/2]: ONNX's only
    // for odd sizes.
    const bool eligible =
        (x.dtype() == DType::kF32 || x.dtype() == DType::kBF16) && size_ % 2 != 0;
    return make_dnnl_plan(x, ctx, eligible, [&](const dnnl::memory::desc& md) {
      const dnnl::lrn_forward::desc d(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::lrn_across_channels, md, size_, alpha_,
                                      beta_, bias_);
      const auto pd =
          one_at_a_time([&] { return dnnl::lrn_forward::primitive_desc(d, user_scratchpad(), ctx.dnnl().engine); });
      return dnnl::primitive(dnnl::lrn_forward(pd));
    });
  }

  void run_plain(const Tensor& x, KernelContext& ctx) {
    const Tensor xp = plain_float_input(x, ctx, "LRN");
    const int64_t n = x.dim(0), c = x.dim(1), inner = n * c != 0 ? x.numel() / (n * c) : 0;
    const int64_t lo = (size_ - 1) / 2, hi = size_ - 1 - lo;
    const double scale = static_cast<double>(alpha_) / static_cast<double>(size_);
    Tensor y(xp.dtype(), xp.shape());
    auto run = [&](auto* dst, const auto* src) {
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t c0 = std::max<int64_t>(0, ch - lo), c1 = std::min(c - 1, ch + hi);
          for (int64_t i = 0; i < inner; ++i) {
            double sum = 0;
            for (int64_t k = c0; k <= c1; ++k) {
              const double v = static_cast<double>(src[(b * c + k) * inner + i]);
              sum += v * v;
            }
            const int64_t o = (b * c + ch) * inner + i;
            dst[o] = static_cast<std::remove_pointer_t<decltype(dst)>>(
                static_cast<double>(src[o]) /
                std::pow(static_cast<double>(bias_) + scale * sum, static_cast<double>(beta_)));
          }
        }
      }
    };
    run_f32_or_f64(y, xp, run);
    ctx.output(0) = std::move(y);
  }

  int64_t size_;
  float alpha_, beta_, bias_;
  std::optional<DnnlPlan> plan_;
  CachedReorder re_;
};

}  // namespace

void register_norm_kernels(KernelRegistry& r) {
  // BatchNormalization-1 (consumed_inputs) is legacy and not registered.
  r.add("BatchNormalization", 6, 17, make_kernel<BatchNormKernel>());
  r.add("LRN", 1, 17, make_kernel<LrnKernel>());
  nn::register_norm_plain_kernels(r);
}

}  // namespace torq::engine
