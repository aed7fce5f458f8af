// Element types of the engine and bfloat16 conversion.
//
// The engine stores tensors in the ONNX element types it supports. bfloat16
// is stored as its raw 16-bit pattern (uint16_t) and is computed in fp32:
// upcast is exact, downcast rounds by a selectable Rounding mode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace torq::base {

enum class DType : uint8_t {
  kUndefined,
  kF32, kBF16, kF16, kF64,
  kI8, kI16, kI32, kI64,
  kU8, kU16, kU32, kU64,
  kBool,
};

// Size of one element in bytes (0 for kUndefined).
size_t dtype_size(DType t);
// Lower-case name as used in profiles and messages: "f32", "bf16", "i64"...
const char* dtype_name(DType t);
// Parses dtype_name() output; returns kUndefined for an unknown name.
DType dtype_from_name(const std::string& name);
// Maps onnx::TensorProto_DataType values; kUndefined when unsupported
// (string, complex types).
DType dtype_from_onnx(int32_t onnx_type);
int32_t dtype_to_onnx(DType t);
inline bool is_float(DType t) {
  return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16 || t == DType::kF64;
}
inline bool is_integer(DType t) {
  return t >= DType::kI8 && t <= DType::kU64;
}

// How fp32 values become bf16.
enum class Rounding : uint8_t { kNearestEven, kTruncate };
const char* rounding_name(Rounding r);

using bf16_t = uint16_t;

inline float bf16_to_f32(bf16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline bf16_t f32_to_bf16(float f, Rounding r) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return static_cast<bf16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  }
  if (r == Rounding::kNearestEven) {
    uint32_t lsb = (bits >> 16) & 1u;
    bits += 0x7fffu + lsb;
  }
  return static_cast<bf16_t>(bits >> 16);
}

// Rounds an fp32 value to the nearest bf16-representable fp32 value.
inline float round_to_bf16(float f, Rounding r) { return bf16_to_f32(f32_to_bf16(f, r)); }

// Bulk conversions (OpenMP-parallel for large n).
void convert_f32_to_bf16(const float* src, bf16_t* dst, size_t n, Rounding r);
void convert_bf16_to_f32(const bf16_t* src, float* dst, size_t n);

// IEEE half conversions (for fp16 model tensors).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

}  // namespace torq::base

// The engine and everything built on it name these torq::engine::...
namespace torq::engine {
using namespace ::torq::base;  // NOLINT(google-build-using-namespace)
}  // namespace torq::engine
