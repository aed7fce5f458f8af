#include "worker/toolchain/raw_tensor.h"

#include <sys/stat.h>

#include <fstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace torq::toolchain {

using engine::DType;

namespace {
const std::vector<std::pair<DType, const char*>>& names() {
  static const std::vector<std::pair<DType, const char*>> n = {
      {DType::kF32, "f32"},   {DType::kBF16, "bf16"}, {DType::kF16, "f16"},   {DType::kF64, "f64"},
      {DType::kI8, "i8"},     {DType::kI16, "i16"},   {DType::kI32, "i32"},   {DType::kI64, "i64"},
      {DType::kU8, "ui8"},    {DType::kU16, "ui16"},  {DType::kU32, "ui32"},  {DType::kU64, "ui64"},
      {DType::kBool, "i1"}};
  return n;
}
}  // namespace

std::string iree_dtype_name(DType t) {
  for (const auto& [d, n] : names())
    if (d == t) return n;
  throw std::invalid_argument("no IREE element type for an undefined dtype");
}

DType dtype_from_iree(const std::string& name) {
  for (const auto& [d, n] : names())
    if (name == n) return d;
  return DType::kUndefined;
}

std::string shape_text(const engine::Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

std::string iree_type(DType t, const engine::Shape& s) {
  return s.empty() ? iree_dtype_name(t) : shape_text(s) + "x" + iree_dtype_name(t);
}

TensorType parse_iree_type(const std::string& text) {
  TensorType tt;
  size_t pos = 0;
  for (;;) {
    const size_t x = text.find('x', pos);
    const std::string part = text.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (x == std::string::npos || part.empty() || part.find_first_not_of("0123456789") != std::string::npos) {
      tt.dtype = dtype_from_iree(text.substr(pos));
      if (tt.dtype == DType::kUndefined)
        throw std::invalid_argument("bad tensor type '" + text + "' (expected e.g. 1x3x224x224xf32)");
      return tt;
    }
    tt.shape.push_back(std::stoll(part));
    pos = x + 1;
  }
}

void write_raw(const engine::Tensor& t, const std::string& path) {
  const engine::Tensor plain = t.is_plain() ? t : t.clone();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  const size_t n = static_cast<size_t>(plain.numel()) * engine::dtype_size(plain.dtype());
  f.write(static_cast<const char*>(plain.raw()), static_cast<std::streamsize>(n));
  if (!f) throw std::runtime_error(path + ": cannot write");
}

engine::Tensor read_raw(const std::string& path, DType dtype, const engine::Shape& shape) {
  engine::Tensor t(dtype, shape);
  const long long want = static_cast<long long>(t.numel()) * static_cast<long long>(engine::dtype_size(dtype));
  const long long have = file_size(path);
  if (have < 0) throw std::runtime_error(path + ": no such file");
  if (have != want)
    throw std::runtime_error(path + ": " + std::to_string(have) + " bytes, expected " + std::to_string(want) + " (" +
                             iree_type(dtype, shape) + ")");
  std::ifstream f(path, std::ios::binary);
  f.read(static_cast<char*>(t.raw()), want);
  if (!f) throw std::runtime_error(path + ": cannot read");
  return t;
}

long long file_size(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<long long>(st.st_size);
}

}  // namespace torq::toolchain
