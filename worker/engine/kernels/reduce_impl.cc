// ArgMax and ArgMin (plain C++): int64 indices along one axis, first or
// (select_last_index, opset 12+) last occurrence of the extremum; a NaN
// counts as the extremum, like numpy. Registered from reduce.cc.
#include <cmath>
#include <string>
#include <type_traits>

#include "worker/engine/kernels/nn_impl.h"

namespace torq::engine {

namespace {

class ArgKernel final : public Kernel {
 public:
  ArgKernel(const NodeInfo& n, bool is_max) : is_max_(is_max) {
    if (n.opset() >= 12) {
      n.expect_attrs({"axis", "keepdims", "select_last_index"});
    } else {
      n.expect_attrs({"axis", "keepdims"});
    }
    axis_ = n.attr_int("axis", 0);
    keepdims_ = n.attr_int("keepdims", 1) != 0;
    last_ = n.attr_int("select_last_index", 0) != 0;
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    TORQ_CHECK(x.rank() >= 1, "ArgMax/ArgMin input must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, x.rank());
    int64_t outer = 1, inner = 1;
    const int64_t len = x.dim(axis);
    Shape out_shape;
    for (int64_t j = 0; j < x.rank(); ++j) {
      if (j < axis) outer *= x.dim(j);
      if (j > axis) inner *= x.dim(j);
      if (j != axis) out_shape.push_back(x.dim(j));
      else if (keepdims_) out_shape.push_back(1);
    }
    Tensor y(DType::kI64, out_shape);
    if (y.numel() > 0) {
      TORQ_SUPPORTED(len > 0, "ArgMax/ArgMin along an empty axis is not supported");
      switch (x.dtype()) {
#define TORQ_CASE(DT, T) \
  case DT: run(x.data<T>(), y.data<int64_t>(), outer, len, inner); break;
        TORQ_CASE(DType::kF32, float)
        TORQ_CASE(DType::kF64, double)
        TORQ_CASE(DType::kI8, int8_t)
        TORQ_CASE(DType::kI16, int16_t)
        TORQ_CASE(DType::kI32, int32_t)
        TORQ_CASE(DType::kI64, int64_t)
        TORQ_CASE(DType::kU8, uint8_t)
        TORQ_CASE(DType::kU16, uint16_t)
        TORQ_CASE(DType::kU32, uint32_t)
        TORQ_CASE(DType::kU64, uint64_t)
#undef TORQ_CASE
        default:
          throw_unsupported(std::string("ArgMax/ArgMin of ") + dtype_name(x.dtype()) +
                            " is not supported");
      }
    }
    ctx.output(0) = std::move(y);
  }

 private:
  // True when a is strictly "better" than b (larger for ArgMax).
  template <class T>
  bool better(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && !std::isnan(b);
    }
    return is_max_ ? a > b : a < b;
  }

  template <class T>
  void run(const T* x, int64_t* y, int64_t outer, int64_t len, int64_t inner) const {
#pragma omp parallel for collapse(2) schedule(static) if (outer * inner * len > 32768)
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* xs = x + o * len * inner + i;
        int64_t arg = 0;
        for (int64_t k = 1; k < len; ++k) {
          const T v = xs[k * inner], b = xs[arg * inner];
          if (better(v, b) || (last_ && !better(b, v))) arg = k;
        }
        y[o * inner + i] = arg;
      }
    }
  }

  bool is_max_;
  int64_t axis_;
  bool keepdims_, last_;
};

}  // namespace

namespace nn {

void register_arg_kernels(KernelRegistry& r) {
  r.add("ArgMax", 1, 17, [](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<ArgKernel>(n, true);
  });
  r.add("ArgMin", 1, 17, [](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<ArgKernel>(n, false);
  });
}

}  // namespace nn

}  // namespace torq::engine
