// Tensors as the real Torq/IREE tools exchange them: raw binary files
// (row-major, little-endian, no header) described by an IREE tensor type
// "1x3x224x224xf32" (a scalar is just "f32"). Element type names are IREE's:
// f32, bf16, f16, f64, i8, i16, i32, i64, ui8, ui16, ui32, ui64, i1 (bool,
// one byte per element).
#pragma once

#include <string>

#include "worker/engine/tensor.h"

namespace torq::toolchain {

// IREE's name of a dtype; throws std::invalid_argument for kUndefined.
std::string iree_dtype_name(engine::DType t);
// Parses an IREE element type name; kUndefined when unknown.
engine::DType dtype_from_iree(const std::string& name);
// "1x3x224x224" ("" for a scalar).
std::string shape_text(const engine::Shape& s);
// "1x3x224x224xf32" / "f32".
std::string iree_type(engine::DType t, const engine::Shape& s);

struct TensorType {
  engine::DType dtype = engine::DType::kUndefined;
  engine::Shape shape;
};
// Parses "1x3xf32" / "f32"; throws std::invalid_argument with a message.
TensorType parse_iree_type(const std::string& text);

// Writes t's elements (plain, row-major) to `path`; throws on I/O errors.
void write_raw(const engine::Tensor& t, const std::string& path);
// Reads a raw file of exactly numel(shape) * size(dtype) bytes; throws
// std::runtime_error naming the file and both sizes otherwise.
engine::Tensor read_raw(const std::string& path, engine::DType dtype, const engine::Shape& shape);
// Size of a file in bytes, or -1 when it does not exist.
long long file_size(const std::string& path);

}  // namespace torq::toolchain
