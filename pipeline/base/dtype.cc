#include "pipeline/base/dtype.h"

#include <cmath>

namespace torq::base {

namespace {
struct Entry {
  DType t;
  const char* name;
  size_t size;
  int32_t onnx;
};
// onnx::TensorProto_DataType numbering.
constexpr Entry kTable[] = {
    {DType::kF32, "f32", 4, 1},  {DType::kU8, "u8", 1, 2},
    {DType::kI8, "i8", 1, 3},    {DType::kU16, "u16", 2, 4},
    {DType::kI16, "i16", 2, 5},  {DType::kI32, "i32", 4, 6},
    {DType::kI64, "i64", 8, 7},  {DType::kBool, "bool", 1, 9},
    {DType::kF16, "f16", 2, 10}, {DType::kF64, "f64", 8, 11},
    {DType::kU32, "u32", 4, 12}, {DType::kU64, "u64", 8, 13},
    {DType::kBF16, "bf16", 2, 16},
};
}  // namespace

size_t dtype_size(DType t) {
  for (const auto& e : kTable)
    if (e.t == t) return e.size;
  return 0;
}

const char* dtype_name(DType t) {
  for (const auto& e : kTable)
    if (e.t == t) return e.name;
  return "undefined";
}

DType dtype_from_name(const std::string& name) {
  for (const auto& e : kTable)
    if (name == e.name) return e.t;
  if (name == "fp32" || name == "float32" || name == "float") return DType::kF32;
  if (name == "bfloat16") return DType::kBF16;
  return DType::kUndefined;
}

DType dtype_from_onnx(int32_t onnx_type) {
  for (const auto& e : kTable)
    if (e.onnx == onnx_type) return e.t;
  return DType::kUndefined;
}

int32_t dtype_to_onnx(DType t) {
  for (const auto& e : kTable)
    if (e.t == t) return e.onnx;
  return 0;
}

const char* rounding_name(Rounding r) {
  return r == Rounding::kNearestEven ? "rne" : "truncate";
}

void convert_f32_to_bf16(const float* src, bf16_t* dst, size_t n, Rounding r) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for if (count > 65536) schedule(static)
  for (long long i = 0; i < count; ++i) dst[i] = f32_to_bf16(src[i], r);
}

void convert_bf16_to_f32(const bf16_t* src, float* dst, size_t n) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for if (count > 65536) schedule(static)
  for (long long i = 0; i < count; ++i) dst[i] = bf16_to_f32(src[i]);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while ((man & 0x400u) == 0) {
        man <<= 1;
        --exp;
      }
      man &= 0x3ffu;
      bits = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const int exp = static_cast<int>((bits >> 23) & 0xffu) - 127 + 15;
  uint32_t man = bits & 0x7fffffu;
  if (((bits >> 23) & 0xffu) == 0xffu)
    return sign | 0x7c00u | (man ? 0x200u : 0u);
  if (exp >= 31) return sign | 0x7c00u;
  if (exp <= 0) {
    if (exp < -10) return sign;
    man |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t half = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (man >> 13);
  const uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

}  // namespace torq::base
