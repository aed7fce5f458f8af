// Arithmetic element-wise kernels: Add, Sub, Mul, Div (two inputs, numpy or
// legacy opset<7 broadcasting) and the variadic Sum, Mean, Max, Min; plus
// register_binary_kernels for the whole binary family (logic and misc ops
// live in binary_logic.cc and binary_misc.cc).
//
// Float operands in blocked layouts run on oneDNN binary (binary_dnnl.cc);
// everything else is a broadcast loop in C++ over plain data.
#include <cmath>
#include <type_traits>

#include "worker/engine/kernels/binary_bcast.h"
#include "worker/engine/kernels/binary_dnnl.h"
#include "worker/engine/kernels/vec_math.h"

namespace torq::engine {
namespace {

using elt::BcastPlan;
using elt::Tag;

enum class Arith { kAdd, kSub, kMul, kDiv, kMax, kMin };

// Integer arithmetic wraps like numpy (computed unsigned to avoid UB).
template <class T>
using Wide = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

template <class T>
struct AddOp {
  T operator()(T x, T y) const {
    if constexpr (std::is_floating_point_v<T>) return x + y;
    else return static_cast<T>(static_cast<Wide<T>>(x) + static_cast<Wide<T>>(y));
  }
};
template <class T>
struct SubOp {
  T operator()(T x, T y) const {
    if constexpr (std::is_floating_point_v<T>) return x - y;
    else return static_cast<T>(static_cast<Wide<T>>(x) - static_cast<Wide<T>>(y));
  }
};
template <class T>
struct MulOp {
  T operator()(T x, T y) const {
    if constexpr (std::is_floating_point_v<T>) return x * y;
    else return static_cast<T>(static_cast<Wide<T>>(x) * static_cast<Wide<T>>(y));
  }
};
// Integer division truncates toward zero (C, like onnxruntime); the divisor
// was checked to be non-zero; MIN / -1 wraps.
template <class T>
struct DivOp {
  T operator()(T x, T y) const {
    if constexpr (std::is_floating_point_v<T>) {
      return x / y;
    } else if constexpr (std::is_signed_v<T>) {
      if (y == -1) return static_cast<T>(Wide<T>(0) - static_cast<Wide<T>>(x));
      return static_cast<T>(x / y);
    } else {
      return static_cast<T>(x / y);
    }
  }
};
// numpy maximum/minimum: NaN propagates.
template <class T>
struct MaxOp {
  T operator()(T x, T y) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) return x;
    }
    return x > y ? x : y;
  }
};
template <class T>
struct MinOp {
  T operator()(T x, T y) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) return x;
    }
    return x < y ? x : y;
  }
};

const char* arith_name(Arith op) {
  switch (op) {
    case Arith::kAdd: return "Add";
    case Arith::kSub: return "Sub";
    case Arith::kMul: return "Mul";
    case Arith::kDiv: return "Div";
    case Arith::kMax: return "Max";
    case Arith::kMin: return "Min";
  }
  return "?";
}

template <class T>
void check_divisor(const Tensor& b) {
  if constexpr (!std::is_floating_point_v<T>) {
    const T* p = b.data<T>();
    for (int64_t i = 0; i < b.numel(); ++i)
      if (p[i] == T(0))
        throw EngineError(ErrorKind::kInvalidInput, "integer division by zero");
  }
}

// out = a (op) b over plain compute tensors of the same dtype.
Tensor arith_plain(Arith op, const Tensor& a, const Tensor& b) {
  TORQ_CHECK(a.dtype() == b.dtype(), std::string(arith_name(op)) + ": input dtypes " +
                                         dtype_name(a.dtype()) + " and " +
                                         dtype_name(b.dtype()) + " differ");
  const BcastPlan p = elt::make_bcast_plan({a.shape(), b.shape()});
  Tensor out(a.dtype(), p.out);
  elt::visit_numeric(a.dtype(), arith_name(op), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    switch (op) {
      case Arith::kAdd: elt::bcast_binary(pa, pb, po, p, AddOp<T>{}); break;
      case Arith::kSub: elt::bcast_binary(pa, pb, po, p, SubOp<T>{}); break;
      case Arith::kMul: elt::bcast_binary(pa, pb, po, p, MulOp<T>{}); break;
      case Arith::kDiv:
        check_divisor<T>(b);
        elt::bcast_binary(pa, pb, po, p, DivOp<T>{});
        break;
      case Arith::kMax: elt::bcast_binary(pa, pb, po, p, MaxOp<T>{}); break;
      case Arith::kMin: elt::bcast_binary(pa, pb, po, p, MinOp<T>{}); break;
    }
  });
  return out;
}

dnnl::algorithm dnnl_alg(Arith op) {
  switch (op) {
    case Arith::kAdd: return dnnl::algorithm::binary_add;
    case Arith::kSub: return dnnl::algorithm::binary_sub;
    case Arith::kMul: return dnnl::algorithm::binary_mul;
    case Arith::kDiv: return dnnl::algorithm::binary_div;
    default: return dnnl::algorithm::undef;  // Max/Min: NaN semantics differ
  }
}

bool same_type(DType a, DType b) {
  auto f32ish = [](DType t) { return t == DType::kF32 || t == DType::kBF16; };
  return a == b || (f32ish(a) && f32ish(b));
}

// Add, Sub, Mul, Div.
class ArithKernel final : public Kernel {
 public:
  ArithKernel(const NodeInfo& n, Arith op) : op_(op) {
    if (n.opset() < 7) {
      n.expect_attrs({elt::kLegacyBroadcastAttr, elt::kLegacyAxisAttr});
      legacy_ = elt::LegacyBroadcast::parse(n);
    } else {
      n.expect_attrs({});
    }
    TORQ_CHECK(n.num_inputs() == 2, std::string(arith_name(op)) + " takes 2 inputs");
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.in(0);
    Tensor b = ctx.in(1);
    TORQ_CHECK(same_type(a.dtype(), b.dtype()),
               std::string(arith_name(op_)) + ": input dtypes " + dtype_name(a.dtype()) +
                   " and " + dtype_name(b.dtype()) + " differ");
    if (legacy_.legacy) {
      const Shape bs = legacy_.b_shape(a.shape(), b.shape());
      if (bs != b.shape()) b = (b.is_plain() ? b : to_plain(b, ctx.dnnl())).reshaped(bs);
    }
    if (ctx.fused()) {  // only a GELU chain's Div (gelu_fusion.h)
      if (run_gelu(ctx, a, b)) return;
      ctx.decline_fusion();
    }
    const bool commutative = op_ == Arith::kAdd || op_ == Arith::kMul;
    if (dnnl_.run(dnnl_alg(op_), commutative, a, b, ctx, ctx.output(0))) return;
    const Tensor pa = elt::plain_compute_input(a, ctx.dnnl());
    const Tensor pb = elt::plain_compute_input(b, ctx.dnnl());
    ctx.output(0) = elt::finish_half(arith_plain(op_, pa, pb), a.dtype(), ctx.rounding());
  }

 private:
  // The fused GELU over a dense x and one divisor, both fp32 or both bf16
  // (bf16 numerics: rounded between steps as the nodes round); false (the
  // chain runs node by node) otherwise.
  bool run_gelu(KernelContext& ctx, const Tensor& x, const Tensor& c) const {
    const FusedActivation& f = *ctx.fused();
    const DType dt = x.dtype();
    if (f.kind != ActKind::kGelu || op_ != Arith::kDiv || legacy_.legacy ||
        (dt != DType::kF32 && dt != DType::kBF16) || c.dtype() != dt || c.numel() != 1 || !x.is_plain() ||
        !c.is_plain())
      return false;
    Tensor out(dt, x.shape());
    if (dt == DType::kF32)
      vm::gelu_f32(static_cast<const float*>(x.raw()), c.data<float>()[0], f.alpha, f.beta,
                   static_cast<float*>(out.raw()), x.numel());
    else
      // k1 and k2 as the Add and Mul read them: a bf16 constant as it is,
      // an fp32 one (a Constant node's) converted to bf16 first.
      vm::gelu_bf16(x.bf16(), bf16_to_f32(c.bf16()[0]), round_to_bf16(f.alpha, ctx.rounding()),
                    round_to_bf16(f.beta, ctx.rounding()), out.bf16(), x.numel(), ctx.rounding());
    ctx.output(0) = out;
    return true;
  }

  Arith op_;
  elt::LegacyBroadcast legacy_;
  elt::DnnlBinary dnnl_;
};

enum class Variadic { kSum, kMean, kMax, kMin };

// Sum, Mean, Max, Min over one or more inputs (numpy broadcasting; the
// no-broadcast opset 6 variants are the same for valid models). Folded left
// to right like the ONNX reference; Mean divides the sum at the end.
class VariadicKernel final : public Kernel {
 public:
  VariadicKernel(const NodeInfo& n, Variadic op) : op_(op) {
    n.expect_attrs({});
    TORQ_CHECK(n.num_inputs() >= 1, n.op_type() + " needs at least one input");
    for (size_t i = 0; i < n.num_inputs(); ++i)
      TORQ_CHECK(n.has_input(i), n.op_type() + ": inputs cannot be omitted");
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    const size_t n = ctx.num_inputs();
    const DType dt = ctx.in(0).dtype();
    const bool float_only = op_ == Variadic::kSum || op_ == Variadic::kMean;
    TORQ_SUPPORTED(!float_only || is_float(dt),
                   std::string(float_only ? "Sum/Mean" : "Max/Min") + " of dtype " +
                       dtype_name(dt) + " is not supported");
    for (size_t i = 1; i < n; ++i)
      TORQ_CHECK(same_type(ctx.in(i).dtype(), dt), "inputs of different dtypes");
    if (n == 2 && op_ == Variadic::kSum &&
        dnnl_.run(dnnl::algorithm::binary_add, true, ctx.in(0), ctx.in(1), ctx, ctx.output(0)))
      return;

    const Arith fold = op_ == Variadic::kMax ? Arith::kMax
                       : op_ == Variadic::kMin ? Arith::kMin
                                               : Arith::kAdd;
    Tensor acc = elt::plain_compute_input(ctx.in(0), ctx.dnnl());
    if (n == 1) {
      acc = acc.clone();
      elt::visit_numeric(acc.dtype(), "Sum/Mean/Max/Min", [](auto) {});
    }
    // f16 results are rounded after every step, like numpy's float16 ops.
    auto round_half = [&](Tensor t) {
      return dt == DType::kF16 ? to_f32(cast_tensor(t, DType::kF16, ctx.rounding())) : t;
    };
    for (size_t i = 1; i < n; ++i)
      acc = round_half(arith_plain(fold, acc, elt::plain_compute_input(ctx.in(i), ctx.dnnl())));
    if (op_ == Variadic::kMean && n > 1) {
      elt::visit_numeric(acc.dtype(), "Mean", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_floating_point_v<T>) {
          const T div = static_cast<T>(n);
          T* p = acc.data<T>();
          elt::map_elements(p, p, acc.numel(), [div](T v) { return v / div; });
        }
      });
    }
    ctx.output(0) = elt::finish_half(acc, dt, ctx.rounding());
  }

 private:
  Variadic op_;
  elt::DnnlBinary dnnl_;
};

}  // namespace

void register_binary_kernels(KernelRegistry& r) {
  r.add("Add", 1, 17, elt::kernel_factory<ArithKernel>(Arith::kAdd));
  r.add("Sub", 1, 17, elt::kernel_factory<ArithKernel>(Arith::kSub));
  r.add("Mul", 1, 17, elt::kernel_factory<ArithKernel>(Arith::kMul));
  r.add("Div", 1, 17, elt::kernel_factory<ArithKernel>(Arith::kDiv));
  r.add("Sum", 1, 17, elt::kernel_factory<VariadicKernel>(Variadic::kSum));
  r.add("Mean", 1, 17, elt::kernel_factory<VariadicKernel>(Variadic::kMean));
  r.add("Max", 1, 17, elt::kernel_factory<VariadicKernel>(Variadic::kMax));
  r.add("Min", 1, 17, elt::kernel_factory<VariadicKernel>(Variadic::kMin));
  elt::register_binary_logic_kernels(r);
  elt::register_binary_misc_kernels(r);
}

}  // namespace torq::engine
