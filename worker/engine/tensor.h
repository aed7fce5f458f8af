// Tensor: a typed, shaped, reference-counted buffer.
//
// Copies of a Tensor share the buffer (like a shared_ptr); clone() copies
// the data. A tensor is "plain" (row-major, ONNX order) unless it carries a
// Layout: then its bytes are in a oneDNN memory format chosen by a oneDNN
// primitive (for example nChw16c), or a strided view of such bytes that
// Reshape or Transpose made without copying (movement_strided.h). Only kernels that declare
// accepts_blocked_inputs() ever see non-plain tensors; the session reorders
// to plain for all others. data<T>() requires a plain tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/base/dtype.h"

namespace torq::engine {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[1,3,224,224]"

struct Layout;  // oneDNN memory descriptor; see dnnl_util.h

template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kI16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kU16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kU32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kU64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialised plain tensor (64-byte aligned).
  Tensor(DType dtype, Shape shape);
  // Allocates a zero-filled plain tensor.
  static Tensor zeros(DType dtype, Shape shape);
  // A tensor in a oneDNN layout; `bytes` is the layout's buffer size.
  static Tensor blocked(DType dtype, Shape shape, std::shared_ptr<const Layout> layout,
                        size_t bytes);
  template <class T>
  static Tensor scalar(T v) {
    Tensor t(DTypeOf<T>::value, {});
    *t.data<T>() = v;
    return t;
  }
  template <class T>
  static Tensor from_vector(const std::vector<T>& v, Shape shape);

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numel() const { return numel_; }
  // Bytes of the buffer (for blocked tensors, including padding).
  size_t nbytes() const { return nbytes_; }
  bool is_plain() const { return layout_ == nullptr; }
  const std::shared_ptr<const Layout>& layout() const { return layout_; }

  void* raw() { return data_.get(); }
  const void* raw() const { return data_.get(); }
  template <class T>
  T* data() {
    check_access(DTypeOf<T>::value);
    return static_cast<T*>(raw());
  }
  template <class T>
  const T* data() const {
    check_access(DTypeOf<T>::value);
    return static_cast<const T*>(raw());
  }
  // bf16 storage access (raw bits).
  bf16_t* bf16() { check_access(DType::kBF16); return static_cast<bf16_t*>(raw()); }
  const bf16_t* bf16() const { check_access(DType::kBF16); return static_cast<const bf16_t*>(raw()); }

  // Same buffer, new shape (element count must match; plain only).
  Tensor reshaped(Shape shape) const;
  // The same bytes seen with another shape and layout (null: plain), for a
  // layout that describes this buffer without copying (a oneDNN view such
  // as a permuted or reshaped strided descriptor).
  Tensor viewed(Shape shape, std::shared_ptr<const Layout> layout) const;
  // Deep copy (plain result).
  Tensor clone() const;
  // Number of Tensor objects sharing the buffer.
  long use_count() const { return data_.use_count(); }

  // Element i (plain, row-major) as double / int64, for any dtype; used by
  // shape-like inputs and tests, not by hot loops.
  double get_as_double(int64_t i) const;
  int64_t get_as_int(int64_t i) const;
  // All elements as int64 (for shape / axes / indices inputs).
  std::vector<int64_t> to_int_vector() const;
  // All elements as fp32 (any numeric dtype).
  std::vector<float> to_float_vector() const;

 private:
  void check_access(DType want) const;

  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  size_t nbytes_ = 0;
  std::shared_ptr<uint8_t> data_;
  std::shared_ptr<const Layout> layout_;
};

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& v, Shape shape) {
  Tensor t(DTypeOf<T>::value, std::move(shape));
  T* d = t.data<T>();
  for (size_t i = 0; i < v.size() && static_cast<int64_t>(i) < t.numel(); ++i) d[i] = v[i];
  return t;
}

// Converts a plain tensor of any float type to fp32 (shares when already f32).
Tensor to_f32(const Tensor& t);
// Converts a plain fp32 tensor to `dtype` (f32, bf16, f16, f64), rounding
// bf16 by `r`.
Tensor from_f32(const Tensor& t, DType dtype, Rounding r);
// Element-wise cast between any two dtypes (ONNX Cast semantics; float to
// int truncates toward zero, to bool is != 0).
Tensor cast_tensor(const Tensor& t, DType to, Rounding r);

}  // namespace torq::engine
