// Unary element-wise kernels: activations (Relu, LeakyRelu, Elu, Selu,
// Sigmoid, HardSigmoid, HardSwish, Tanh, Softplus, Softsign) and math (Erf,
// Sqrt, Exp, Log, Abs, Neg, Reciprocal, Ceil, Floor, Sign); Clip and Not are
// in unary_misc.cc. Float Erf runs on libmvec's vector erff (vec_math.h).
//
// Each op has a C++ definition written like the ONNX reference (NaN
// propagates). f32/bf16 inputs of the ops whose oneDNN eltwise algorithm was
// checked against it (within rtol 1e-3 / atol 1e-7 over a wide range) run on
// oneDNN in any memory layout; oneDNN's log and soft_relu are not accurate
// enough near 1 / for negative inputs, so Log and Softplus stay in C++.
// An f32 Sigmoid on a buffer without padding runs on the engine's vector
// sigmoid (vec_sigmoid.h; the numbers of a Conv's fused Swish). The
// C++ path works directly on a blocked buffer when f(0) == 0 (padding stays
// zero), otherwise on a plain copy.
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "worker/engine/kernels/binary_bcast.h"
#include "worker/engine/kernels/binary_dnnl.h"
#include "worker/engine/kernels/vec_math.h"
#include "worker/engine/kernels/vec_sigmoid.h"

namespace torq::engine {
namespace {

using dnnl::algorithm;

enum class U {
  kRelu, kLeakyRelu, kElu, kSelu, kSigmoid, kHardSigmoid, kHardSwish, kTanh, kSoftplus,
  kSoftsign, kErf, kSqrt, kExp, kLog, kAbs, kNeg, kReciprocal, kCeil, kFloor, kSign,
};

struct Params {
  float alpha = 0, beta = 0, gamma = 0;
};

// The op on one float value (T = float or double).
template <U OP, class T>
T apply_float(T x, const Params& p) {
  const T a = static_cast<T>(p.alpha), b = static_cast<T>(p.beta);
  if constexpr (OP == U::kRelu) return x < T(0) ? T(0) : x;
  if constexpr (OP == U::kLeakyRelu) return x < T(0) ? a * x : x;
  if constexpr (OP == U::kElu) return x < T(0) ? (std::exp(x) - T(1)) * a : x;
  if constexpr (OP == U::kSelu) {
    const T g = static_cast<T>(p.gamma);
    return x < T(0) ? (std::exp(x) - T(1)) * a * g : x * g;
  }
  if constexpr (OP == U::kSigmoid) return T(1) / (T(1) + std::exp(-x));
  if constexpr (OP == U::kHardSigmoid || OP == U::kHardSwish) {
    const T v = OP == U::kHardSigmoid ? a * x + b : x * static_cast<T>(1.0f / 6.0f) + T(0.5);
    const T lo = v < T(1) || std::isnan(v) ? v : T(1);
    const T h = lo > T(0) || std::isnan(lo) ? lo : T(0);
    return OP == U::kHardSigmoid ? h : x * h;
  }
  if constexpr (OP == U::kTanh) return std::tanh(x);
  if constexpr (OP == U::kSoftplus)
    return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  if constexpr (OP == U::kSoftsign) return x / (T(1) + std::fabs(x));
  if constexpr (OP == U::kErf) return std::erf(x);
  if constexpr (OP == U::kSqrt) return std::sqrt(x);
  if constexpr (OP == U::kExp) return std::exp(x);
  if constexpr (OP == U::kLog) return std::log(x);
  if constexpr (OP == U::kAbs) return std::fabs(x);
  if constexpr (OP == U::kNeg) return -x;
  if constexpr (OP == U::kReciprocal) return T(1) / x;
  if constexpr (OP == U::kCeil) return std::ceil(x);
  if constexpr (OP == U::kFloor) return std::floor(x);
  if constexpr (OP == U::kSign) return x > T(0) ? T(1) : x < T(0) ? T(-1) : x == T(0) ? T(0) : x;
}

// Ops defined on integers too (wrapping like numpy).
bool int_op(U op) { return op == U::kRelu || op == U::kAbs || op == U::kNeg || op == U::kSign; }

template <U OP, class T>
T apply_int(T x) {
  using W = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
  const T neg = static_cast<T>(W(0) - static_cast<W>(x));
  if constexpr (OP == U::kRelu) return x < T(0) ? T(0) : x;
  if constexpr (OP == U::kAbs) return x < T(0) ? neg : x;
  if constexpr (OP == U::kNeg) return neg;
  if constexpr (OP == U::kSign) return x > T(0) ? T(1) : x < T(0) ? static_cast<T>(-1) : T(0);
  return x;
}

// f(0) == 0 (as a number), so a blocked buffer's zero padding stays zero.
bool zero_safe(U op) {
  switch (op) {
    case U::kSigmoid: case U::kHardSigmoid: case U::kSoftplus: case U::kExp: case U::kLog:
    case U::kReciprocal:
      return false;
    default:
      return true;
  }
}

// A oneDNN eltwise step.
struct Step {
  algorithm alg;
  float alpha, beta;
};

// oneDNN recipe of an op (empty: C++ only). `nan_fix` re-propagates NaN
// inputs that oneDNN maps to numbers.
struct Recipe {
  std::vector<Step> steps;
  bool nan_fix = false;
};

Recipe recipe_of(U op, const Params& p) {
  switch (op) {
    case U::kElu: return {{{algorithm::eltwise_elu, p.alpha, 0}}, false};
    case U::kSelu:
      return {{{algorithm::eltwise_elu, p.alpha, 0}, {algorithm::eltwise_linear, p.gamma, 0}}, false};
    case U::kSigmoid: return {{{algorithm::eltwise_logistic, 0, 0}}, false};
    case U::kHardSigmoid:
      return {{{algorithm::eltwise_linear, p.alpha, p.beta}, {algorithm::eltwise_clip, 0, 1}}, true};
    case U::kHardSwish: return {{{algorithm::eltwise_hardswish, 0, 0}}, false};
    case U::kTanh: return {{{algorithm::eltwise_tanh, 0, 0}}, false};
    case U::kSqrt: return {{{algorithm::eltwise_sqrt, 0, 0}}, false};
    case U::kExp: return {{{algorithm::eltwise_exp, 0, 0}}, true};
    case U::kReciprocal: return {{{algorithm::eltwise_pow, 1, -1}}, false};
    default: return {};
  }
}

// Calls f(std::integral_constant<U, op>{}).
template <class F>
void visit_op(U op, F&& f) {
  switch (op) {
#define TORQ_U(X) case U::X: f(std::integral_constant<U, U::X>{}); break;
    TORQ_U(kRelu) TORQ_U(kLeakyRelu) TORQ_U(kElu) TORQ_U(kSelu) TORQ_U(kSigmoid)
    TORQ_U(kHardSigmoid) TORQ_U(kHardSwish) TORQ_U(kTanh) TORQ_U(kSoftplus) TORQ_U(kSoftsign)
    TORQ_U(kErf) TORQ_U(kSqrt) TORQ_U(kExp) TORQ_U(kLog) TORQ_U(kAbs) TORQ_U(kNeg)
    TORQ_U(kReciprocal) TORQ_U(kCeil) TORQ_U(kFloor) TORQ_U(kSign)
#undef TORQ_U
  }
}

class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(const NodeInfo& n, U op) : op_(op) {
    switch (op) {
      case U::kLeakyRelu:
        n.expect_attrs({"alpha"});
        p_.alpha = n.attr_float("alpha", 0.01f);
        break;
      case U::kElu:
        n.expect_attrs({"alpha"});
        p_.alpha = n.attr_float("alpha", 1.0f);
        break;
      case U::kSelu:
        n.expect_attrs({"alpha", "gamma"});
        p_.alpha = n.attr_float("alpha", 1.67326319217681884765625f);
        p_.gamma = n.attr_float("gamma", 1.05070102214813232421875f);
        break;
      case U::kHardSigmoid:
        n.expect_attrs({"alpha", "beta"});
        p_.alpha = n.attr_float("alpha", 0.2f);
        p_.beta = n.attr_float("beta", 0.5f);
        break;
      default:
        n.expect_attrs({});
    }
    recipe_ = recipe_of(op, p_);
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const DType dt = x.dtype();
    if (op_ == U::kSigmoid && dt == DType::kF32 && vm::fast_sigmoid() && dense(x)) {
      // Vectorized (vec_sigmoid.h): the same numbers as a fused Swish's.
      Tensor out = x.is_plain() ? Tensor(dt, x.shape()) : alloc_for_md(md_of(x), dt, x.shape());
      vm::sigmoid_f32(static_cast<const float*>(x.raw()), static_cast<float*>(out.raw()), x.numel());
      ctx.output(0) = out;
      return;
    }
    if (dt == DType::kF32 || dt == DType::kBF16) {
      if (!recipe_.steps.empty() && x.numel() > 0) {
        ctx.output(0) = run_dnnl(x, ctx);
      } else if (x.is_plain() || zero_safe(op_)) {
        ctx.output(0) = run_buffer(x, ctx.rounding());
      } else {
        ctx.output(0) = run_buffer(to_plain(x, ctx.dnnl()), ctx.rounding());
      }
      return;
    }
    if (dt == DType::kF16) {
      ctx.output(0) = cast_tensor(run_buffer(to_f32(x), ctx.rounding()), DType::kF16,
                                  ctx.rounding());
      return;
    }
    elt::visit_numeric(dt, "this unary op", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      Tensor out(dt, x.shape());
      T* o = out.data<T>();
      visit_op(op_, [&](auto opc) {
        constexpr U OP = decltype(opc)::value;
        if constexpr (std::is_floating_point_v<T>) {
          const Params p = p_;
          elt::map_elements(in, o, x.numel(), [p](T v) { return apply_float<OP, T>(v, p); });
        } else {
          TORQ_SUPPORTED(int_op(OP), std::string("integer dtype ") + dtype_name(dt) +
                                         " is not supported by this op");
          elt::map_elements(in, o, x.numel(), [](T v) { return apply_int<OP, T>(v); });
        }
      });
      ctx.output(0) = out;
    });
  }

 private:
  // Every byte of the buffer is an element (plain, or a layout without
  // padding), so an element-wise pass over it needs no care for padding.
  static bool dense(const Tensor& x) {
    const size_t bytes = static_cast<size_t>(x.numel()) * dtype_size(x.dtype());
    return x.nbytes() == bytes && (x.is_plain() || (md_of(x).get_size() == bytes && md_of(x).data.offset0 == 0));
  }

  // C++ over the whole buffer (any layout: the caller ensured padding is
  // safe). f32 in -> f32 out; bf16 in -> bf16 (nearest even) or f32.
  Tensor run_buffer(const Tensor& x, Rounding r) const {
    const bool bf16_out = x.dtype() == DType::kBF16 && r == Rounding::kNearestEven;
    const DType odt = bf16_out ? DType::kBF16 : DType::kF32;
    Tensor out = x.is_plain() ? Tensor(odt, x.shape())
                              : alloc_for_md(elt::md_as(md_of(x), dnnl_dtype(odt)), odt,
                                             x.shape());
    const int64_t n = static_cast<int64_t>(x.nbytes() / dtype_size(x.dtype()));
    if (op_ == U::kErf) {  // vectorized (libmvec): std::erf was most of a GELU's time
      if (x.dtype() == DType::kF32)
        vm::erf_f32(static_cast<const float*>(x.raw()), static_cast<float*>(out.raw()), n);
      else
        vm::erf_bf16(static_cast<const bf16_t*>(x.raw()), static_cast<bf16_t*>(out.raw()),
                     bf16_out ? nullptr : static_cast<float*>(out.raw()), n, Rounding::kNearestEven);
      return out;
    }
    const Params p = p_;
    visit_op(op_, [&](auto opc) {
      constexpr U OP = decltype(opc)::value;
      auto f = [p](float v) { return apply_float<OP, float>(v, p); };
      if (x.dtype() == DType::kF32) {
        elt::map_elements(static_cast<const float*>(x.raw()), static_cast<float*>(out.raw()), n,
                          f);
      } else if (bf16_out) {
        elt::map_elements(static_cast<const bf16_t*>(x.raw()), static_cast<bf16_t*>(out.raw()),
                          n, [f](bf16_t v) {
                            return f32_to_bf16(f(bf16_to_f32(v)), Rounding::kNearestEven);
                          });
      } else {
        elt::map_elements(static_cast<const bf16_t*>(x.raw()), static_cast<float*>(out.raw()),
                          n, [f](bf16_t v) { return f(bf16_to_f32(v)); });
      }
    });
    return out;
  }

  // oneDNN eltwise steps in the input's layout. Multi-step recipes compute
  // in f32 so bf16 is rounded only once (by the session).
  Tensor run_dnnl(const Tensor& x, KernelContext& ctx) {
    DnnlEnv& env = ctx.dnnl();
    DType cdt = elt::dnnl_compute_dtype(x.dtype(), ctx.rounding());
    if (recipe_.steps.size() > 1) cdt = DType::kF32;
    Tensor src = elt::convert_keep_layout(x, cdt, env);
    // oneDNN's jit eltwise leaves a padded blocked layout to its reference
    // C++ when f(0) != 0 (it must keep the padding 0): HardSigmoid's linear
    // step on AVX2's nChw8c, say. Its multiply-add rounds twice where the
    // jit's FMA, and a Conv's fused post-op, round once; so the steps run
    // on the plain tensor instead, in the jit, with the fused numbers.
    if (!src.is_plain() && (md_of(src) == ref_md_ || !prepare(md_of(src), env))) {
      ref_md_ = md_of(src);  // remembered: the next run goes plain at once
      src = to_plain(src, env);
    }
    prepare(md_of(src), env);
    const dnnl::memory::desc md = md_of(src);
    Tensor out = alloc_for_md(md, cdt, x.shape());
    auto src_mem = as_memory(src, md, env);
    auto dst_mem = as_memory(out, md, env);
    for (size_t i = 0; i < prims_.size(); ++i)
      execute(env, prims_[i], {{DNNL_ARG_SRC, i == 0 ? src_mem : dst_mem}, {DNNL_ARG_DST, dst_mem}});
    if (recipe_.nan_fix) fix_nan(src, out);
    return out;
  }

  // The steps' primitives for `md` (kept while it repeats); false when one
  // of them is oneDNN's reference implementation.
  bool prepare(const dnnl::memory::desc& md, DnnlEnv& env) {
    if (prims_.empty() || !(md == md_)) {
      prims_.clear();
      all_jit_ = true;
      for (const Step& s : recipe_.steps) {
        auto d = dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, s.alg, md, s.alpha, s.beta);
        const auto pd =
            one_at_a_time([&] { return dnnl::eltwise_forward::primitive_desc(d, user_scratchpad(), env.engine); });
        all_jit_ = all_jit_ && std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
        prims_.emplace_back(pd);
      }
      md_ = md;
    }
    return all_jit_;
  }

  // dst[i] = src[i] wherever src[i] is NaN (same layout and dtype).
  static void fix_nan(const Tensor& src, Tensor& dst) {
    const int64_t n = static_cast<int64_t>(src.nbytes() / dtype_size(src.dtype()));
    if (src.dtype() == DType::kF32) {
      const float* s = static_cast<const float*>(src.raw());
      float* d = static_cast<float*>(dst.raw());
#pragma omp parallel for if (n > 32768) schedule(static)
      for (int64_t i = 0; i < n; ++i)
        if (std::isnan(s[i])) d[i] = s[i];
    } else {
      const bf16_t* s = static_cast<const bf16_t*>(src.raw());
      bf16_t* d = static_cast<bf16_t*>(dst.raw());
#pragma omp parallel for if (n > 32768) schedule(static)
      for (int64_t i = 0; i < n; ++i)
        if ((s[i] & 0x7f80u) == 0x7f80u && (s[i] & 0x007fu) != 0) d[i] = s[i];
    }
  }

  U op_;
  Params p_;
  Recipe recipe_;
  dnnl::memory::desc md_;
  std::vector<dnnl::eltwise_forward> prims_;
  bool all_jit_ = true;
  dnnl::memory::desc ref_md_;  // a blocked layout whose steps were oneDNN's reference code
};

KernelFactory unary(U op) {
  return [op](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<UnaryKernel>(n, op);
  };
}

}  // namespace

void register_unary_kernels(KernelRegistry& r) {
  // Opset 1 variants only differ by the legacy consumed_inputs attribute,
  // which expect_attrs rejects.
  r.add("Relu", 1, 17, unary(U::kRelu));
  r.add("LeakyRelu", 1, 17, unary(U::kLeakyRelu));
  r.add("Elu", 1, 17, unary(U::kElu));
  r.add("Selu", 1, 17, unary(U::kSelu));
  r.add("Sigmoid", 1, 17, unary(U::kSigmoid));
  r.add("HardSigmoid", 1, 17, unary(U::kHardSigmoid));
  r.add("HardSwish", 14, 17, unary(U::kHardSwish));
  r.add("Tanh", 1, 17, unary(U::kTanh));
  r.add("Softplus", 1, 17, unary(U::kSoftplus));
  r.add("Softsign", 1, 17, unary(U::kSoftsign));
  r.add("Erf", 9, 17, unary(U::kErf));
  r.add("Sqrt", 1, 17, unary(U::kSqrt));
  r.add("Exp", 1, 17, unary(U::kExp));
  r.add("Log", 1, 17, unary(U::kLog));
  r.add("Abs", 1, 17, unary(U::kAbs));
  r.add("Neg", 1, 17, unary(U::kNeg));
  r.add("Reciprocal", 1, 17, unary(U::kReciprocal));
  r.add("Ceil", 1, 17, unary(U::kCeil));
  r.add("Floor", 1, 17, unary(U::kFloor));
  r.add("Sign", 9, 17, unary(U::kSign));
  elt::register_unary_misc_kernels(r);
}

}  // namespace torq::engine
