// Binary kernels with their own typing rules: Pow (base and exponent of
// different dtypes from opset 12), Mod (fmod and Python-sign remainders) and
// PRelu (slope unidirectionally broadcast to X; per-channel in opset 6).
#include <cmath>
#include <limits>
#include <type_traits>

#include "worker/engine/kernels/binary_bcast.h"

namespace torq::engine::elt {
namespace {

// An fp64 result to integer type T: truncation toward zero, saturated, NaN 0.
template <class T>
T saturate(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    return static_cast<T>(v);
  }
}

// Integer power by squaring, wrapping like numpy.
template <class T, class E>
T int_pow(T x, E e) {
  using U = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
  U base = static_cast<U>(x), acc = 1;
  auto n = static_cast<std::make_unsigned_t<E>>(e);
  while (n) {
    if (n & 1u) acc = static_cast<U>(acc * base);
    base = static_cast<U>(base * base);
    n >>= 1;
  }
  return static_cast<T>(acc);
}

// Pow(X, Y): the result has X's dtype. f32^f32 uses powf; integer^integer is
// exact; every other mix computes in fp64 like numpy's type promotion.
class PowKernel final : public Kernel {
 public:
  explicit PowKernel(const NodeInfo& n) {
    if (n.opset() < 7) {
      n.expect_attrs({kLegacyBroadcastAttr, kLegacyAxisAttr});
      legacy_ = LegacyBroadcast::parse(n);
    } else {
      n.expect_attrs({});
    }
  }

  void compute(KernelContext& ctx) override {
    const DType want = ctx.in(0).dtype();
    const Tensor x = plain_compute_input(ctx.in(0), ctx.dnnl());
    Tensor y = plain_compute_input(ctx.in(1), ctx.dnnl());
    if (legacy_.legacy) y = y.reshaped(legacy_.b_shape(x.shape(), y.shape()));
    const BcastPlan p = make_bcast_plan({x.shape(), y.shape()});
    Tensor out(x.dtype(), p.out);
    auto base = [&](auto xtag) {
      using TX = typename decltype(xtag)::type;
      if constexpr (std::is_same_v<TX, float> || std::is_same_v<TX, double> ||
                    std::is_same_v<TX, int32_t> || std::is_same_v<TX, int64_t>) {
        visit_numeric(y.dtype(), "Pow exponent", [&](auto ytag) {
          using TY = typename decltype(ytag)::type;
          run<TX, TY>(x, y, out, p);
        });
      } else {
        throw_unsupported(std::string("Pow with base dtype ") + dtype_name(x.dtype()));
      }
    };
    visit_numeric(x.dtype(), "Pow", base);
    ctx.output(0) = finish_half(out, want, ctx.rounding());
  }

 private:
  template <class TX, class TY>
  static void run(const Tensor& x, const Tensor& y, Tensor& out, const BcastPlan& p) {
    const TX* px = x.data<TX>();
    const TY* py = y.data<TY>();
    TX* po = out.data<TX>();
    if constexpr (std::is_same_v<TX, float> && std::is_same_v<TY, float>) {
      if (y.numel() == 1 && py[0] == 2.0f) {
        bcast_binary(px, py, po, p, [](float a, float) { return a * a; });
      } else {
        bcast_binary(px, py, po, p, [](float a, float b) { return std::pow(a, b); });
      }
    } else if constexpr (std::is_integral_v<TX> && std::is_integral_v<TY>) {
      if constexpr (std::is_signed_v<TY>) {
        for (int64_t i = 0; i < y.numel(); ++i)
          if (py[i] < 0)
            throw EngineError(ErrorKind::kInvalidInput,
                              "Pow: integers to negative integer powers are not defined");
      }
      bcast_binary(px, py, po, p, [](TX a, TY b) { return int_pow(a, b); });
    } else {
      bcast_binary(px, py, po, p, [](TX a, TY b) {
        return saturate<TX>(std::pow(static_cast<double>(a), static_cast<double>(b)));
      });
    }
  }

  LegacyBroadcast legacy_;
};

// Mod: fmod=1 is C fmod / truncated remainder; fmod=0 (integers only) takes
// the divisor's sign like Python. An integer remainder by 0 is 0 (numpy).
class ModKernel final : public Kernel {
 public:
  explicit ModKernel(const NodeInfo& n) {
    n.expect_attrs({"fmod"});
    const int64_t f = n.attr_int("fmod", 0);
    TORQ_CHECK(f == 0 || f == 1, "Mod: fmod must be 0 or 1");
    fmod_ = f == 1;
  }

  void compute(KernelContext& ctx) override {
    const DType want = ctx.in(0).dtype();
    const Tensor a = plain_compute_input(ctx.in(0), ctx.dnnl());
    const Tensor b = plain_compute_input(ctx.in(1), ctx.dnnl());
    TORQ_CHECK(a.dtype() == b.dtype(), "Mod: input dtypes differ");
    const BcastPlan p = make_bcast_plan({a.shape(), b.shape()});
    Tensor out(a.dtype(), p.out);
    const bool fm = fmod_;
    visit_numeric(a.dtype(), "Mod", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* po = out.data<T>();
      if constexpr (std::is_floating_point_v<T>) {
        TORQ_SUPPORTED(fm, "Mod with fmod=0 on floating-point inputs (ONNX requires fmod=1)");
        bcast_binary(pa, pb, po, p, [](T x, T y) { return std::fmod(x, y); });
      } else {
        bcast_binary(pa, pb, po, p, [fm](T x, T y) -> T {
          if (y == T(0)) return T(0);
          if constexpr (std::is_signed_v<T>) {
            if (y == T(-1)) return T(0);
            T r = static_cast<T>(x % y);
            if (!fm && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
            return r;
          } else {
            return static_cast<T>(x % y);
          }
        });
      }
    });
    ctx.output(0) = finish_half(out, want, ctx.rounding());
  }

 private:
  bool fmod_ = false;
};

// PRelu(X, slope) = X < 0 ? slope * X : X.
class PReluKernel final : public Kernel {
 public:
  explicit PReluKernel(const NodeInfo& n) : legacy_(n.opset() < 7) { n.expect_attrs({}); }

  void compute(KernelContext& ctx) override {
    const DType want = ctx.in(0).dtype();
    const Tensor x = plain_compute_input(ctx.in(0), ctx.dnnl());
    Tensor s = plain_compute_input(ctx.in(1), ctx.dnnl());
    TORQ_CHECK(x.dtype() == s.dtype(), "PRelu: X and slope dtypes differ");
    if (legacy_ && s.numel() != 1 && s.rank() == 1 && x.rank() >= 2 && s.dim(0) == x.dim(1)) {
      // Opset 6 and earlier: a 1-D slope is per channel (axis 1).
      Shape cs(static_cast<size_t>(x.rank() - 1), 1);
      cs[0] = s.dim(0);
      s = s.reshaped(cs);
    }
    TORQ_CHECK(broadcast_shapes(x.shape(), s.shape()) == x.shape(),
               "PRelu: slope " + shape_str(s.shape()) + " does not broadcast to X " +
                   shape_str(x.shape()));
    const BcastPlan p = make_bcast_plan({x.shape(), s.shape()});
    Tensor out(x.dtype(), p.out);
    visit_numeric(x.dtype(), "PRelu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      bcast_binary(x.data<T>(), s.data<T>(), out.data<T>(), p, [](T v, T k) -> T {
        if constexpr (std::is_unsigned_v<T>) {
          (void)k;
          return v;
        } else {
          if constexpr (std::is_floating_point_v<T>) {
            return v < T(0) ? k * v : v;
          } else {  // wraps like numpy
            using U = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
            return v < T(0) ? static_cast<T>(static_cast<U>(k) * static_cast<U>(v)) : v;
          }
        }
      });
    });
    ctx.output(0) = finish_half(out, want, ctx.rounding());
  }

 private:
  bool legacy_;
};

}  // namespace

void register_binary_misc_kernels(KernelRegistry& r) {
  r.add("Pow", 1, 17, make_kernel<PowKernel>());
  r.add("Mod", 10, 17, make_kernel<ModKernel>());
  r.add("PRelu", 1, 17, make_kernel<PReluKernel>());
}

}  // namespace torq::engine::elt
