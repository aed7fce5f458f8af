#include "worker/engine/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "pipeline/base/error.h"

namespace torq::engine {

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

static std::shared_ptr<uint8_t> allocate(size_t bytes) {
  const size_t rounded = ((bytes + 63) / 64) * 64 + 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw EngineError(ErrorKind::kRuntime, "out of memory allocating " +
                                                     std::to_string(bytes) + " bytes");
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_)
    if (d < 0) throw EngineError(ErrorKind::kInvalidModel, "negative dimension in " + shape_str(shape_));
  numel_ = shape_numel(shape_);
  nbytes_ = static_cast<size_t>(numel_) * dtype_size(dtype_);
  data_ = allocate(nbytes_);
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  std::memset(t.raw(), 0, t.nbytes());
  return t;
}

Tensor Tensor::blocked(DType dtype, Shape shape, std::shared_ptr<const Layout> layout,
                       size_t bytes) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.nbytes_ = bytes;
  t.data_ = allocate(bytes);
  t.layout_ = std::move(layout);
  return t;
}

void Tensor::check_access(DType want) const {
  if (want != dtype_)
    throw EngineError(ErrorKind::kRuntime, std::string("tensor access as ") + dtype_name(want) +
                                               " but tensor is " + dtype_name(dtype_));
  if (layout_)
    throw EngineError(ErrorKind::kRuntime, "element access to a tensor in a blocked layout");
}

Tensor Tensor::reshaped(Shape shape) const {
  if (layout_) throw EngineError(ErrorKind::kRuntime, "reshape of a blocked tensor");
  if (shape_numel(shape) != numel_)
    throw EngineError(ErrorKind::kInvalidModel,
                      "cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::viewed(Shape shape, std::shared_ptr<const Layout> layout) const {
  if (shape_numel(shape) != numel_)
    throw EngineError(ErrorKind::kRuntime, "cannot view " + shape_str(shape_) + " as " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.layout_ = std::move(layout);
  return t;
}

Tensor Tensor::clone() const {
  if (layout_) throw EngineError(ErrorKind::kRuntime, "clone of a blocked tensor");
  Tensor t(dtype_, shape_);
  if (nbytes_) std::memcpy(t.raw(), raw(), nbytes_);
  return t;
}

template <class F>
static auto visit_plain(const Tensor& t, int64_t i, F f) {
  const void* p = t.raw();
  switch (t.dtype()) {
    case DType::kF32: return f(static_cast<const float*>(p)[i]);
    case DType::kF64: return f(static_cast<const double*>(p)[i]);
    case DType::kBF16: return f(bf16_to_f32(static_cast<const uint16_t*>(p)[i]));
    case DType::kF16: return f(f16_to_f32(static_cast<const uint16_t*>(p)[i]));
    case DType::kI8: return f(static_cast<const int8_t*>(p)[i]);
    case DType::kI16: return f(static_cast<const int16_t*>(p)[i]);
    case DType::kI32: return f(static_cast<const int32_t*>(p)[i]);
    case DType::kI64: return f(static_cast<const int64_t*>(p)[i]);
    case DType::kU8: return f(static_cast<const uint8_t*>(p)[i]);
    case DType::kU16: return f(static_cast<const uint16_t*>(p)[i]);
    case DType::kU32: return f(static_cast<const uint32_t*>(p)[i]);
    case DType::kU64: return f(static_cast<const uint64_t*>(p)[i]);
    case DType::kBool: return f(static_cast<const bool*>(p)[i]);
    default: throw EngineError(ErrorKind::kRuntime, "element access to undefined tensor");
  }
}

double Tensor::get_as_double(int64_t i) const {
  if (layout_) throw EngineError(ErrorKind::kRuntime, "element access to a blocked tensor");
  return visit_plain(*this, i, [](auto v) { return static_cast<double>(v); });
}

int64_t Tensor::get_as_int(int64_t i) const {
  if (layout_) throw EngineError(ErrorKind::kRuntime, "element access to a blocked tensor");
  return visit_plain(*this, i, [](auto v) -> int64_t {
    if constexpr (std::is_floating_point_v<decltype(v)>) {
      if (!std::isfinite(v)) return 0;
      return static_cast<int64_t>(v);
    } else {
      return static_cast<int64_t>(v);
    }
  });
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = get_as_int(i);
  return out;
}

std::vector<float> Tensor::to_float_vector() const {
  std::vector<float> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i)
    out[static_cast<size_t>(i)] = static_cast<float>(get_as_double(i));
  return out;
}

Tensor to_f32(const Tensor& t) {
  if (t.dtype() == DType::kF32) return t;
  return cast_tensor(t, DType::kF32, Rounding::kNearestEven);
}

Tensor from_f32(const Tensor& t, DType dtype, Rounding r) {
  if (dtype == DType::kF32) return t;
  return cast_tensor(t, dtype, r);
}

namespace {

template <class To, class From>
To convert_one(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return To(0);
    const long double lv = static_cast<long double>(v);
    if (lv >= static_cast<long double>(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    if (lv <= static_cast<long double>(std::numeric_limits<To>::lowest()))
      return std::numeric_limits<To>::lowest();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Reads element i as a "wide" native value: double for floats, the integer
// type itself otherwise, then writes it converted to the output type.
template <class To>
void cast_into(const Tensor& in, To* out) {
  const int64_t n = in.numel();
  const void* p = in.raw();
  switch (in.dtype()) {
#define TORQ_CASE(DT, T) \
  case DT: { const T* s = static_cast<const T*>(p); for (int64_t i = 0; i < n; ++i) out[i] = convert_one<To>(s[i]); break; }
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
    TORQ_CASE(DType::kBool, bool)
#undef TORQ_CASE
    case DType::kBF16: {
      const uint16_t* s = static_cast<const uint16_t*>(p);
      for (int64_t i = 0; i < n; ++i) out[i] = convert_one<To>(bf16_to_f32(s[i]));
      break;
    }
    case DType::kF16: {
      const uint16_t* s = static_cast<const uint16_t*>(p);
      for (int64_t i = 0; i < n; ++i) out[i] = convert_one<To>(f16_to_f32(s[i]));
      break;
    }
    default: throw EngineError(ErrorKind::kUnsupported, "cast from undefined dtype");
  }
}

}  // namespace

Tensor cast_tensor(const Tensor& t, DType to, Rounding r) {
  if (!t.is_plain()) throw EngineError(ErrorKind::kRuntime, "cast of a blocked tensor");
  if (t.dtype() == to) return t;
  Tensor out(to, t.shape());
  const int64_t n = t.numel();
  switch (to) {
    case DType::kF32: {
      if (t.dtype() == DType::kBF16) {
        convert_bf16_to_f32(t.bf16(), out.data<float>(), static_cast<size_t>(n));
      } else {
        cast_into(t, out.data<float>());
      }
      break;
    }
    case DType::kBF16: {
      Tensor f = t.dtype() == DType::kF32 ? t : cast_tensor(t, DType::kF32, r);
      if (t.dtype() == DType::kF64) {  // avoid double rounding through fp32 for RNE
        const double* s = t.data<double>();
        for (int64_t i = 0; i < n; ++i) out.bf16()[i] = f32_to_bf16(static_cast<float>(s[i]), r);
      } else {
        convert_f32_to_bf16(f.data<float>(), out.bf16(), static_cast<size_t>(n), r);
      }
      break;
    }
    case DType::kF16: {
      std::vector<double> tmp(static_cast<size_t>(n));
      cast_into(t, tmp.data());
      uint16_t* d = static_cast<uint16_t*>(out.raw());
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(static_cast<float>(tmp[static_cast<size_t>(i)]));
      break;
    }
    case DType::kF64: cast_into(t, out.data<double>()); break;
    case DType::kI8: cast_into(t, out.data<int8_t>()); break;
    case DType::kI16: cast_into(t, out.data<int16_t>()); break;
    case DType::kI32: cast_into(t, out.data<int32_t>()); break;
    case DType::kI64: cast_into(t, out.data<int64_t>()); break;
    case DType::kU8: cast_into(t, out.data<uint8_t>()); break;
    case DType::kU16: cast_into(t, out.data<uint16_t>()); break;
    case DType::kU32: cast_into(t, out.data<uint32_t>()); break;
    case DType::kU64: cast_into(t, out.data<uint64_t>()); break;
    case DType::kBool: cast_into(t, out.data<bool>()); break;
    default: throw EngineError(ErrorKind::kUnsupported, "cast to undefined dtype");
  }
  return out;
}

}  // namespace torq::engine
