// Reduction kernels: ReduceSum, ReduceMean, ReduceMax, ReduceMin,
// ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp,
// ReduceSumSquare (plain C++, OpenMP over the outputs). Floats accumulate in
// double; integers accumulate exactly (wrapping like the ONNX type). Axes
// are an attribute for opsets <= 17, except ReduceSum-13+ which takes them
// as an optional input with noop_with_empty_axes. ArgMax / ArgMin live in
// reduce_impl.cc.
#include <cmath>
#include <limits>
#include <algorithm>
#include <string>
#include <type_traits>

#include "worker/engine/kernels/nn_impl.h"

namespace torq::engine {

namespace {

enum class ROp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// Offsets of the kept (output) and reduced elements of a row-major tensor.
struct ReducePlan {
  Shape out_shape;
  std::vector<int64_t> base;     // input offset of each output's first element
  std::vector<int64_t> reduced;  // offsets of the reduced elements, relative to base
};

void offsets(const Shape& dims, const std::vector<int64_t>& strides, std::vector<int64_t>& out) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  out.assign(static_cast<size_t>(n), 0);
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t j = 0; j < dims.size(); ++j) off += idx[j] * strides[j];
    out[static_cast<size_t>(i)] = off;
    for (size_t j = dims.size(); j-- > 0;) {
      if (++idx[j] < dims[j]) break;
      idx[j] = 0;
    }
  }
}

ReducePlan make_plan(const Shape& x, const std::vector<bool>& red, bool keepdims) {
  ReducePlan p;
  const auto st = strides_of(x);
  Shape kept_dims, red_dims;
  std::vector<int64_t> kept_st, red_st;
  for (size_t j = 0; j < x.size(); ++j) {
    if (red[j]) {
      red_dims.push_back(x[j]);
      red_st.push_back(st[j]);
      if (keepdims) p.out_shape.push_back(1);
    } else {
      kept_dims.push_back(x[j]);
      kept_st.push_back(st[j]);
      p.out_shape.push_back(x[j]);
    }
  }
  offsets(kept_dims, kept_st, p.base);
  offsets(red_dims, red_st, p.reduced);
  return p;
}

template <class T>
constexpr bool kFloat = std::is_floating_point_v<T>;

template <class T>
void reduce_typed(ROp op, const ReducePlan& p, const T* x, T* y) {
  const int64_t nout = static_cast<int64_t>(p.base.size());
  const int64_t nred = static_cast<int64_t>(p.reduced.size());
  const int64_t* r = p.reduced.data();
#pragma omp parallel for schedule(static) if (nout * nred > 32768)
  for (int64_t o = 0; o < nout; ++o) {
    const T* xs = x + p.base[static_cast<size_t>(o)];
    if constexpr (kFloat<T>) {
      double acc = 0;
      switch (op) {
        case ROp::kSum:
        case ROp::kMean:
        case ROp::kLogSum:
          for (int64_t i = 0; i < nred; ++i) acc += static_cast<double>(xs[r[i]]);
          if (op == ROp::kMean) acc /= static_cast<double>(nred);
          if (op == ROp::kLogSum) acc = std::log(acc);
          break;
        case ROp::kMax:
        case ROp::kMin: {
          T best = xs[r[0]];
          for (int64_t i = 1; i < nred && !std::isnan(best); ++i) {
            const T v = xs[r[i]];
            if (std::isnan(v) || (op == ROp::kMax ? v > best : v < best)) best = v;
          }
          acc = static_cast<double>(best);
          break;
        }
        case ROp::kProd:
          acc = 1;
          for (int64_t i = 0; i < nred; ++i) acc *= static_cast<double>(xs[r[i]]);
          break;
        case ROp::kL1:
          for (int64_t i = 0; i < nred; ++i) acc += std::fabs(static_cast<double>(xs[r[i]]));
          break;
        case ROp::kL2:
        case ROp::kSumSquare:
          for (int64_t i = 0; i < nred; ++i) {
            const double v = static_cast<double>(xs[r[i]]);
            acc += v * v;
          }
          if (op == ROp::kL2) acc = std::sqrt(acc);
          break;
        case ROp::kLogSumExp: {
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t i = 0; i < nred; ++i) mx = std::max(mx, static_cast<double>(xs[r[i]]));
          if (!std::isfinite(mx)) mx = 0;
          for (int64_t i = 0; i < nred; ++i) acc += std::exp(static_cast<double>(xs[r[i]]) - mx);
          acc = mx + std::log(acc);
          break;
        }
      }
      y[o] = static_cast<T>(acc);
    } else {
      // Integers: unsigned 64-bit arithmetic wraps exactly like T.
      uint64_t acc = 0;
      switch (op) {
        case ROp::kSum:
          for (int64_t i = 0; i < nred; ++i) acc += static_cast<uint64_t>(xs[r[i]]);
          break;
        case ROp::kMean: {
          using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
          W sum = 0;
          for (int64_t i = 0; i < nred; ++i) sum += static_cast<W>(xs[r[i]]);
          acc = static_cast<uint64_t>(sum / static_cast<W>(nred));
          break;
        }
        case ROp::kMax:
        case ROp::kMin: {
          T best = xs[r[0]];
          for (int64_t i = 1; i < nred; ++i) {
            const T v = xs[r[i]];
            if (op == ROp::kMax ? v > best : v < best) best = v;
          }
          acc = static_cast<uint64_t>(best);
          break;
        }
        case ROp::kProd:
          acc = 1;
          for (int64_t i = 0; i < nred; ++i) acc *= static_cast<uint64_t>(xs[r[i]]);
          break;
        case ROp::kL1:
          for (int64_t i = 0; i < nred; ++i) {
            const uint64_t v = static_cast<uint64_t>(xs[r[i]]);
            acc += xs[r[i]] < T(0) ? uint64_t(0) - v : v;
          }
          break;
        case ROp::kSumSquare:
          for (int64_t i = 0; i < nred; ++i) {
            const uint64_t v = static_cast<uint64_t>(xs[r[i]]);
            acc += v * v;
          }
          break;
        default:
          break;  // rejected before the loop
      }
      y[o] = static_cast<T>(acc);
    }
  }
}

const char* op_name(ROp op) {
  switch (op) {
    case ROp::kSum: return "ReduceSum";
    case ROp::kMean: return "ReduceMean";
    case ROp::kMax: return "ReduceMax";
    case ROp::kMin: return "ReduceMin";
    case ROp::kProd: return "ReduceProd";
    case ROp::kL1: return "ReduceL1";
    case ROp::kL2: return "ReduceL2";
    case ROp::kLogSum: return "ReduceLogSum";
    case ROp::kLogSumExp: return "ReduceLogSumExp";
    case ROp::kSumSquare: return "ReduceSumSquare";
  }
  return "Reduce";
}

class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(const NodeInfo& n, ROp op) : op_(op) {
    axes_input_ = op == ROp::kSum && n.opset() >= 13;
    if (axes_input_) {
      n.expect_attrs({"keepdims", "noop_with_empty_axes"});
    } else {
      n.expect_attrs({"axes", "keepdims"});
      axes_ = n.attr_ints("axes");
    }
    keepdims_ = n.attr_int("keepdims", 1) != 0;
    noop_ = n.attr_int("noop_with_empty_axes", 0) != 0;
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    check_dtype(x.dtype());
    std::vector<int64_t> axes = axes_;
    if (axes_input_ && ctx.input(1)) axes = ctx.input(1)->to_int_vector();
    if (axes.empty() && noop_) {
      ctx.output(0) = x;
      return;
    }
    std::vector<bool> red(static_cast<size_t>(x.rank()), axes.empty());
    for (int64_t a : axes) {
      const size_t j = static_cast<size_t>(normalize_axis(a, x.rank()));
      TORQ_CHECK(!red[j], "duplicate axis " + std::to_string(a));
      red[j] = true;
    }
    if (!plan_valid_ || x.shape() != plan_shape_ || red != plan_red_) {
      plan_ = make_plan(x.shape(), red, keepdims_);
      plan_shape_ = x.shape();
      plan_red_ = red;
      plan_valid_ = true;
    }
    Tensor y(x.dtype(), plan_.out_shape);
    if (!plan_.base.empty() && plan_.reduced.empty()) {
      TORQ_SUPPORTED(op_ != ROp::kMean && op_ != ROp::kMax && op_ != ROp::kMin,
                     std::string(op_name(op_)) + " over an empty set of elements is not supported");
    }
    if (plan_.base.empty()) {
      ctx.output(0) = std::move(y);
      return;
    }
    if (plan_.reduced.empty()) {
      fill_empty(y);
      ctx.output(0) = std::move(y);
      return;
    }
    switch (x.dtype()) {
#define TORQ_CASE(DT, T) \
  case DT: reduce_typed<T>(op_, plan_, x.data<T>(), y.data<T>()); break;
      TORQ_CASE(DType::kF32, float)
      TORQ_CASE(DType::kF64, double)
      TORQ_CASE(DType::kI8, int8_t)
      TORQ_CASE(DType::kU8, uint8_t)
      TORQ_CASE(DType::kI32, int32_t)
      TORQ_CASE(DType::kI64, int64_t)
      TORQ_CASE(DType::kU32, uint32_t)
      TORQ_CASE(DType::kU64, uint64_t)
#undef TORQ_CASE
      default: break;  // rejected by check_dtype
    }
    ctx.output(0) = std::move(y);
  }

 private:
  void check_dtype(DType t) const {
    const bool fl = t == DType::kF32 || t == DType::kF64;
    const bool in = t == DType::kI8 || t == DType::kU8 || t == DType::kI32 || t == DType::kI64 ||
                    t == DType::kU32 || t == DType::kU64;
    TORQ_SUPPORTED(fl || in, std::string(op_name(op_)) + " of " + dtype_name(t) +
                                 " is not supported");
    TORQ_SUPPORTED(fl || (op_ != ROp::kL2 && op_ != ROp::kLogSum && op_ != ROp::kLogSumExp),
                   std::string(op_name(op_)) + " of integer " + dtype_name(t) +
                       " is not supported (rounding of the result is unspecified)");
  }

  // The value of a reduction over no elements.
  void fill_empty(Tensor& y) const {
    double v = 0;
    if (op_ == ROp::kProd) v = 1;
    if (op_ == ROp::kLogSum || op_ == ROp::kLogSumExp) v = -std::numeric_limits<double>::infinity();
    Tensor f(DType::kF64, y.shape());
    for (int64_t i = 0; i < f.numel(); ++i) f.data<double>()[i] = v;
    y = cast_tensor(f, y.dtype(), Rounding::kNearestEven);
  }

  ROp op_;
  bool axes_input_ = false, keepdims_ = true, noop_ = false;
  std::vector<int64_t> axes_;
  bool plan_valid_ = false;
  Shape plan_shape_;
  std::vector<bool> plan_red_;
  ReducePlan plan_;
};

KernelFactory reduce_factory(ROp op) {
  return [op](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<ReduceKernel>(n, op);
  };
}

}  // namespace

void register_reduce_kernels(KernelRegistry& r) {
  // Opsets 1..17 (11 allows negative axes, 12 adds 8-bit Max/Min, 13 moves
  // ReduceSum's axes to an input: the kernel reads the node's opset).
  for (ROp op : {ROp::kSum, ROp::kMean, ROp::kMax, ROp::kMin, ROp::kProd, ROp::kL1, ROp::kL2,
                 ROp::kLogSum, ROp::kLogSumExp, ROp::kSumSquare})
    r.add(op_name(op), 1, 17, reduce_factory(op));
  nn::register_arg_kernels(r);
}

}  // namespace torq::engine
