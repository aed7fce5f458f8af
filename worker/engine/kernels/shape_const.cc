// Value-producing shape-family kernels: Constant, ConstantOfShape, Range,
// Cast and CastLike (registered through register_shape_kernels()).
#include <cmath>
#include <cstring>
#include <onnx/onnx_pb.h>

#include "worker/engine/kernel.h"
#include "worker/engine/tensor_io.h"

namespace torq::engine {

void register_shape_const_kernels(KernelRegistry& r);  // called by register_shape_kernels()

namespace {

// ---------------------------------------------------------------- Constant

class ConstantKernel : public Kernel {
 public:
  explicit ConstantKernel(const NodeInfo& n) {
    n.expect_attrs({"value", "sparse_value", "value_float", "value_floats", "value_int",
                    "value_ints", "value_string", "value_strings"});
    TORQ_CHECK(n.proto().attribute_size() == 1, "Constant needs exactly one value attribute");
    TORQ_SUPPORTED(!n.has_attr("sparse_value"), "Constant with sparse_value is not supported");
    TORQ_SUPPORTED(!n.has_attr("value_string") && !n.has_attr("value_strings"),
                   "Constant string values are not supported");
    if (n.has_attr("value")) {
      const onnx::TensorProto* t = n.attr_tensor("value");
      TORQ_CHECK(t, "Constant: value must be a tensor");
      value_ = tensor_from_proto(*t);
    } else if (n.has_attr("value_float")) {
      value_ = Tensor::scalar<float>(n.attr_float("value_float", 0.0f));
    } else if (n.has_attr("value_floats")) {
      const auto v = n.attr_floats("value_floats");
      value_ = Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
    } else if (n.has_attr("value_int")) {
      value_ = Tensor::scalar<int64_t>(n.attr_int("value_int", 0));
    } else {
      const auto v = n.attr_ints("value_ints");
      value_ = Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
    }
  }
  bool handles_bf16() const override { return true; }
  void compute(KernelContext& ctx) override { ctx.output(0) = value_; }

 private:
  Tensor value_;
};

// ---------------------------------------------------------------- ConstantOfShape

class ConstantOfShapeKernel : public Kernel {
 public:
  explicit ConstantOfShapeKernel(const NodeInfo& n) {
    n.expect_attrs({"value"});
    if (const onnx::TensorProto* t = n.attr_tensor("value")) {
      value_ = tensor_from_proto(*t);
      TORQ_CHECK(value_.numel() == 1, "ConstantOfShape: value must hold one element");
    } else {
      value_ = Tensor::scalar<float>(0.0f);
    }
  }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& s = ctx.in(0);
    TORQ_CHECK(s.rank() == 1, "ConstantOfShape: input must be 1-D");
    const Shape shape = s.to_int_vector();
    for (int64_t d : shape) TORQ_CHECK(d >= 0, "ConstantOfShape: negative dimension");
    Tensor out(value_.dtype(), shape);
    const size_t es = dtype_size(value_.dtype());
    uint8_t* d = static_cast<uint8_t*>(out.raw());
    for (int64_t i = 0; i < out.numel(); ++i)
      std::memcpy(d + static_cast<size_t>(i) * es, value_.raw(), es);
    ctx.output(0) = out;
  }

 private:
  Tensor value_;
};

// ---------------------------------------------------------------- Range

template <class T>
Tensor range_float(double start, double limit, double delta) {
  const double n = std::ceil((limit - start) / delta);
  TORQ_CHECK(!std::isnan(n) && n < 9.0e15, "Range: invalid or too many elements");
  const int64_t count = n > 0 ? static_cast<int64_t>(n) : 0;
  Tensor out(DTypeOf<T>::value, {count});
  T* d = out.data<T>();
  for (int64_t i = 0; i < count; ++i) d[i] = static_cast<T>(start + static_cast<double>(i) * delta);
  return out;
}

template <class T>
Tensor range_int(int64_t start, int64_t limit, int64_t delta) {
  const __int128 diff = static_cast<__int128>(limit) - start;
  __int128 count = 0;
  if (delta > 0 && diff > 0) count = (diff - 1) / delta + 1;
  if (delta < 0 && diff < 0) count = (-diff - 1) / -static_cast<__int128>(delta) + 1;
  TORQ_CHECK(count < (static_cast<__int128>(1) << 53), "Range: too many elements");
  Tensor out(DTypeOf<T>::value, {static_cast<int64_t>(count)});
  T* d = out.data<T>();
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) d[i] = static_cast<T>(start + i * delta);
  return out;
}

class RangeKernel : public Kernel {
 public:
  explicit RangeKernel(const NodeInfo& n) { n.expect_attrs({}); }

  void compute(KernelContext& ctx) override {
    const Tensor &s = ctx.in(0), &l = ctx.in(1), &d = ctx.in(2);
    TORQ_CHECK(s.numel() == 1 && l.numel() == 1 && d.numel() == 1,
               "Range: start, limit and delta must be scalars");
    TORQ_CHECK(s.dtype() == l.dtype() && s.dtype() == d.dtype(),
               "Range: start, limit and delta must share one dtype");
    switch (s.dtype()) {
      case DType::kF32:
      case DType::kF64: {
        const double a = s.get_as_double(0), b = l.get_as_double(0), c = d.get_as_double(0);
        TORQ_CHECK(c != 0.0, "Range: delta must not be 0");
        ctx.output(0) = s.dtype() == DType::kF32 ? range_float<float>(a, b, c)
                                                  : range_float<double>(a, b, c);
        return;
      }
      case DType::kI16:
      case DType::kI32:
      case DType::kI64: {
        const int64_t a = s.get_as_int(0), b = l.get_as_int(0), c = d.get_as_int(0);
        TORQ_CHECK(c != 0, "Range: delta must not be 0");
        if (s.dtype() == DType::kI16) ctx.output(0) = range_int<int16_t>(a, b, c);
        else if (s.dtype() == DType::kI32) ctx.output(0) = range_int<int32_t>(a, b, c);
        else ctx.output(0) = range_int<int64_t>(a, b, c);
        return;
      }
      default:
        throw_unsupported(std::string("Range of dtype ") + dtype_name(s.dtype()) +
                          " is not supported");
    }
  }
};

// ---------------------------------------------------------------- Cast / CastLike

class CastKernel : public Kernel {
 public:
  explicit CastKernel(const NodeInfo& n) {
    n.expect_attrs({"to"});
    TORQ_CHECK(n.has_attr("to"), "Cast requires the 'to' attribute");
    const int64_t to = n.attr_int("to", 0);
    to_ = dtype_from_onnx(static_cast<int32_t>(to));
    TORQ_SUPPORTED(to_ != DType::kUndefined,
                   "Cast to ONNX type " + std::to_string(to) + " (string/complex) is not supported");
  }
  bool handles_bf16() const override { return true; }
  void compute(KernelContext& ctx) override {
    ctx.output(0) = cast_tensor(ctx.in(0), to_, ctx.rounding());
  }

 private:
  DType to_;
};

class CastLikeKernel : public Kernel {
 public:
  explicit CastLikeKernel(const NodeInfo& n) { n.expect_attrs({}); }
  bool handles_bf16() const override { return true; }
  void compute(KernelContext& ctx) override {
    ctx.output(0) = cast_tensor(ctx.in(0), ctx.in(1).dtype(), ctx.rounding());
  }
};

}  // namespace

void register_shape_const_kernels(KernelRegistry& r) {
  r.add("Constant", 1, 17, make_kernel<ConstantKernel>());
  r.add("ConstantOfShape", 9, 17, make_kernel<ConstantOfShapeKernel>());
  r.add("Range", 11, 17, make_kernel<RangeKernel>());
  r.add("Cast", 6, 17, make_kernel<CastKernel>());
  r.add("CastLike", 15, 17, make_kernel<CastLikeKernel>());
}

}  // namespace torq::engine
