// Comparison and logic kernels of the binary family: Equal, Less, Greater,
// LessOrEqual, GreaterOrEqual (bool results), And, Or, Xor, Where and
// BitShift. Plain C++ broadcast loops; legacy (opset < 7) broadcast
// attributes are honoured where those opsets had them.
#include <cstring>
#include <type_traits>

#include "worker/engine/kernels/binary_bcast.h"

namespace torq::engine::elt {
namespace {

enum class Cmp { kEq, kLt, kGt, kLe, kGe, kAnd, kOr, kXor };

const char* cmp_name(Cmp c) {
  switch (c) {
    case Cmp::kEq: return "Equal";
    case Cmp::kLt: return "Less";
    case Cmp::kGt: return "Greater";
    case Cmp::kLe: return "LessOrEqual";
    case Cmp::kGe: return "GreaterOrEqual";
    case Cmp::kAnd: return "And";
    case Cmp::kOr: return "Or";
    case Cmp::kXor: return "Xor";
  }
  return "?";
}

template <class T>
void compare(Cmp c, const T* a, const T* b, bool* o, const BcastPlan& p) {
  switch (c) {
    case Cmp::kEq: bcast_binary(a, b, o, p, [](T x, T y) { return x == y; }); break;
    case Cmp::kLt: bcast_binary(a, b, o, p, [](T x, T y) { return x < y; }); break;
    case Cmp::kGt: bcast_binary(a, b, o, p, [](T x, T y) { return x > y; }); break;
    case Cmp::kLe: bcast_binary(a, b, o, p, [](T x, T y) { return x <= y; }); break;
    case Cmp::kGe: bcast_binary(a, b, o, p, [](T x, T y) { return x >= y; }); break;
    case Cmp::kAnd: bcast_binary(a, b, o, p, [](T x, T y) { return x && y; }); break;
    case Cmp::kOr: bcast_binary(a, b, o, p, [](T x, T y) { return x || y; }); break;
    case Cmp::kXor: bcast_binary(a, b, o, p, [](T x, T y) { return x != y; }); break;
  }
}

// Comparisons and boolean logic; the result is bool.
class CompareKernel final : public Kernel {
 public:
  CompareKernel(const NodeInfo& n, Cmp op) : op_(op) {
    if (n.opset() < 7) {
      n.expect_attrs({kLegacyBroadcastAttr, kLegacyAxisAttr});
      legacy_ = LegacyBroadcast::parse(n);
    } else {
      n.expect_attrs({});
    }
    TORQ_CHECK(n.num_inputs() == 2, n.op_type() + " takes 2 inputs");
  }

  void compute(KernelContext& ctx) override {
    const bool logic = op_ == Cmp::kAnd || op_ == Cmp::kOr || op_ == Cmp::kXor;
    const Tensor a = plain_compute_input(ctx.in(0), ctx.dnnl());
    Tensor b = plain_compute_input(ctx.in(1), ctx.dnnl());
    TORQ_CHECK(a.dtype() == b.dtype(), std::string(cmp_name(op_)) + ": input dtypes " +
                                           dtype_name(a.dtype()) + " and " +
                                           dtype_name(b.dtype()) + " differ");
    if (legacy_.legacy) b = b.reshaped(legacy_.b_shape(a.shape(), b.shape()));
    const BcastPlan p = make_bcast_plan({a.shape(), b.shape()});
    Tensor out(DType::kBool, p.out);
    bool* po = out.data<bool>();
    if (a.dtype() == DType::kBool) {
      TORQ_SUPPORTED(logic || op_ == Cmp::kEq,
                     std::string(cmp_name(op_)) + " of bool inputs is not supported");
      compare(op_, a.data<bool>(), b.data<bool>(), po, p);
    } else {
      TORQ_SUPPORTED(!logic, std::string(cmp_name(op_)) + " needs bool inputs, got " +
                                 dtype_name(a.dtype()));
      visit_numeric(a.dtype(), cmp_name(op_), [&](auto tag) {
        using T = typename decltype(tag)::type;
        compare(op_, a.data<T>(), b.data<T>(), po, p);
      });
    }
    ctx.output(0) = out;
  }

 private:
  Cmp op_;
  LegacyBroadcast legacy_;
};

// Where(condition, X, Y): copies elements by size, so any dtype works.
class WhereKernel final : public Kernel {
 public:
  explicit WhereKernel(const NodeInfo& n) {
    n.expect_attrs({});
    TORQ_CHECK(n.num_inputs() == 3, "Where takes 3 inputs");
  }

  void compute(KernelContext& ctx) override {
    const Tensor& c = ctx.in(0);
    const Tensor& x = ctx.in(1);
    const Tensor& y = ctx.in(2);
    TORQ_CHECK(c.dtype() == DType::kBool, "Where: condition must be bool");
    TORQ_CHECK(x.dtype() == y.dtype(), "Where: X and Y dtypes differ");
    const BcastPlan p = make_bcast_plan({c.shape(), x.shape(), y.shape()});
    Tensor out(x.dtype(), p.out);
    switch (dtype_size(x.dtype())) {
      case 1: run<uint8_t>(c, x, y, out, p); break;
      case 2: run<uint16_t>(c, x, y, out, p); break;
      case 4: run<uint32_t>(c, x, y, out, p); break;
      case 8: run<uint64_t>(c, x, y, out, p); break;
      default: throw_unsupported(std::string("Where of dtype ") + dtype_name(x.dtype()));
    }
    ctx.output(0) = out;
  }

 private:
  template <class U>
  static void run(const Tensor& c, const Tensor& x, const Tensor& y, Tensor& out,
                  const BcastPlan& p) {
    const bool* pc = c.data<bool>();
    const U* px = static_cast<const U*>(x.raw());
    const U* py = static_cast<const U*>(y.raw());
    U* po = static_cast<U*>(out.raw());
    const int64_t sc = p.strides[0].back(), sx = p.strides[1].back(), sy = p.strides[2].back();
    for_each_run<3>(p, [&](int64_t o, const std::array<int64_t, 3>& off, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        po[o + i] = pc[off[0] + i * sc] ? px[off[1] + i * sx] : py[off[2] + i * sy];
    });
  }
};

// BitShift on unsigned integers; shifts by the bit width or more give 0.
class BitShiftKernel final : public Kernel {
 public:
  explicit BitShiftKernel(const NodeInfo& n) {
    n.expect_attrs({"direction"});
    const std::string dir = n.attr_string("direction", "");
    TORQ_CHECK(dir == "LEFT" || dir == "RIGHT", "BitShift: direction must be LEFT or RIGHT");
    left_ = dir == "LEFT";
  }

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.in(0);
    const Tensor& b = ctx.in(1);
    TORQ_CHECK(a.dtype() == b.dtype(), "BitShift: input dtypes differ");
    const BcastPlan p = make_bcast_plan({a.shape(), b.shape()});
    Tensor out(a.dtype(), p.out);
    switch (a.dtype()) {
      case DType::kU8: run<uint8_t>(a, b, out, p); break;
      case DType::kU16: run<uint16_t>(a, b, out, p); break;
      case DType::kU32: run<uint32_t>(a, b, out, p); break;
      case DType::kU64: run<uint64_t>(a, b, out, p); break;
      default: throw_unsupported(std::string("BitShift of dtype ") + dtype_name(a.dtype()));
    }
    ctx.output(0) = out;
  }

 private:
  template <class T>
  void run(const Tensor& a, const Tensor& b, Tensor& out, const BcastPlan& p) const {
    const bool left = left_;
    bcast_binary(a.data<T>(), b.data<T>(), out.data<T>(), p, [left](T x, T s) -> T {
      if (s >= 64) return T(0);
      const uint64_t v = static_cast<uint64_t>(x);
      return static_cast<T>(left ? v << s : v >> s);
    });
  }
  bool left_ = true;
};

}  // namespace

void register_binary_logic_kernels(KernelRegistry& r) {
  r.add("Equal", 1, 17, kernel_factory<CompareKernel>(Cmp::kEq));
  r.add("Less", 1, 17, kernel_factory<CompareKernel>(Cmp::kLt));
  r.add("Greater", 1, 17, kernel_factory<CompareKernel>(Cmp::kGt));
  r.add("LessOrEqual", 12, 17, kernel_factory<CompareKernel>(Cmp::kLe));
  r.add("GreaterOrEqual", 12, 17, kernel_factory<CompareKernel>(Cmp::kGe));
  r.add("And", 1, 17, kernel_factory<CompareKernel>(Cmp::kAnd));
  r.add("Or", 1, 17, kernel_factory<CompareKernel>(Cmp::kOr));
  r.add("Xor", 1, 17, kernel_factory<CompareKernel>(Cmp::kXor));
  r.add("Where", 9, 17, make_kernel<WhereKernel>());
  r.add("BitShift", 11, 17, make_kernel<BitShiftKernel>());
}

}  // namespace torq::engine::elt
