#include "worker/engine/tensor_io.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "pipeline/base/error.h"
#include "pipeline/base/file_bytes.h"

namespace torq::engine {

namespace {

template <class Dst, class Src>
void copy_field(const Src& field, Tensor& t) {
  Dst* d = static_cast<Dst*>(t.raw());
  int64_t i = 0;
  for (auto v : field) d[i++] = static_cast<Dst>(v);
}

[[noreturn]] void bad_input(const std::string& msg) {
  throw EngineError(ErrorKind::kInvalidInput, msg);
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p) {
  const std::string what = p.name().empty() ? std::string("tensor") : "tensor '" + p.name() + "'";
  if (p.data_location() == onnx::TensorProto::EXTERNAL)
    throw_unsupported(what + " uses external data");
  const DType dt = dtype_from_onnx(p.data_type());
  if (dt == DType::kUndefined)
    throw_unsupported(what + " has unsupported element type " + std::to_string(p.data_type()));
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw_invalid(what + " has a negative dimension");
  Tensor t(dt, shape);
  const int64_t n = t.numel();
  if (p.has_raw_data()) {
    if (p.raw_data().size() != t.nbytes())
      throw_invalid(what + " raw_data has " + std::to_string(p.raw_data().size()) +
                    " bytes, expected " + std::to_string(t.nbytes()));
    if (t.nbytes()) std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return t;
  }
  int64_t count = 0;
  switch (dt) {
    case DType::kF32: count = p.float_data_size(); break;
    case DType::kF64: count = p.double_data_size(); break;
    case DType::kI64: count = p.int64_data_size(); break;
    case DType::kU32: case DType::kU64: count = p.uint64_data_size(); break;
    default: count = p.int32_data_size(); break;
  }
  if (count != n)
    throw_invalid(what + " has " + std::to_string(count) + " values, expected " + std::to_string(n));
  switch (dt) {
    case DType::kF32: copy_field<float>(p.float_data(), t); break;
    case DType::kF64: copy_field<double>(p.double_data(), t); break;
    case DType::kI64: copy_field<int64_t>(p.int64_data(), t); break;
    case DType::kU32: copy_field<uint32_t>(p.uint64_data(), t); break;
    case DType::kU64: copy_field<uint64_t>(p.uint64_data(), t); break;
    case DType::kI32: copy_field<int32_t>(p.int32_data(), t); break;
    case DType::kI16: copy_field<int16_t>(p.int32_data(), t); break;
    case DType::kI8: copy_field<int8_t>(p.int32_data(), t); break;
    case DType::kU16: case DType::kF16: case DType::kBF16: copy_field<uint16_t>(p.int32_data(), t); break;
    case DType::kU8: copy_field<uint8_t>(p.int32_data(), t); break;
    case DType::kBool: copy_field<bool>(p.int32_data(), t); break;
    default: throw_unsupported(what + " element type not supported");
  }
  return t;
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto* p, const std::string& name) {
  if (!t.is_plain()) throw EngineError(ErrorKind::kRuntime, "tensor_to_proto of a blocked tensor");
  p->Clear();
  if (!name.empty()) p->set_name(name);
  p->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  p->set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
}

static bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Tensor read_tensor_file(const std::string& path) {
  if (ends_with(path, ".npy")) return read_npy(path);
  std::string why;
  const std::optional<std::string> bytes = base::read_file_bytes(path, &why);
  if (!bytes) bad_input(path + ": cannot open: " + why);
  onnx::TensorProto p;
  if (!p.ParseFromString(*bytes)) bad_input(path + ": not a serialized ONNX TensorProto");
  try {
    return tensor_from_proto(p);
  } catch (const EngineError& e) {
    throw EngineError(ErrorKind::kInvalidInput, path + ": " + e.what());
  }
}

void write_tensor_file(const Tensor& t, const std::string& path) {
  if (ends_with(path, ".npy")) return write_npy(t, path);
  onnx::TensorProto p;
  tensor_to_proto(t, &p);
  if (const std::string why = base::not_a_writable_file(path); !why.empty()) bad_input(path + ": cannot write: " + why);
  std::ofstream f(path, std::ios::binary);
  if (!f || !p.SerializeToOstream(&f)) bad_input(path + ": cannot write");
}

// ---- .npy (format version 1.0/2.0/3.0, little-endian, C order) ----

static const char* npy_descr(DType t) {
  switch (t) {
    case DType::kF32: return "<f4";
    case DType::kF64: return "<f8";
    case DType::kF16: return "<f2";
    case DType::kI8: return "|i1";
    case DType::kI16: return "<i2";
    case DType::kI32: return "<i4";
    case DType::kI64: return "<i8";
    case DType::kU8: return "|u1";
    case DType::kU16: return "<u2";
    case DType::kU32: return "<u4";
    case DType::kU64: return "<u8";
    case DType::kBool: return "|b1";
    default: return nullptr;
  }
}

Tensor read_npy(const std::string& path) {
  if (const std::string why = base::not_a_regular_file(path); !why.empty()) bad_input(path + ": cannot open: " + why);
  std::ifstream f(path, std::ios::binary);
  if (!f) bad_input(path + ": cannot open");
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    bad_input(path + ": not a .npy file (bad magic)");
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2)) bad_input(path + ": truncated header");
    hlen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4)) bad_input(path + ": truncated header");
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  }
  if (hlen > (1u << 20)) bad_input(path + ": header too large");
  std::string header(hlen, '\0');
  if (!f.read(header.data(), hlen)) bad_input(path + ": truncated header");
  auto field = [&](const std::string& key) -> std::string {
    auto pos = header.find("'" + key + "'");
    if (pos == std::string::npos) bad_input(path + ": header lacks '" + key + "'");
    pos = header.find(':', pos);
    if (pos == std::string::npos) bad_input(path + ": malformed header");
    return header.substr(pos + 1);
  };
  std::string descr = field("descr");
  auto q1 = descr.find('\'');
  auto q2 = descr.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos) bad_input(path + ": malformed descr");
  descr = descr.substr(q1 + 1, q2 - q1 - 1);
  if (field("fortran_order").find("True") < field("fortran_order").find(','))
    throw EngineError(ErrorKind::kUnsupported, path + ": Fortran-order arrays are not supported");
  DType dt = DType::kUndefined;
  for (DType c : {DType::kF32, DType::kF64, DType::kF16, DType::kI8, DType::kI16, DType::kI32,
                  DType::kI64, DType::kU8, DType::kU16, DType::kU32, DType::kU64, DType::kBool}) {
    std::string d = npy_descr(c);
    if (descr == d || (descr.size() == 3 && d.size() == 3 && descr[0] == '=' && descr.substr(1) == d.substr(1)))
      dt = c;
  }
  if (dt == DType::kUndefined) bad_input(path + ": unsupported dtype '" + descr + "'");
  std::string shape_s = field("shape");
  auto p1 = shape_s.find('(');
  auto p2 = shape_s.find(')');
  if (p1 == std::string::npos || p2 == std::string::npos) bad_input(path + ": malformed shape");
  Shape shape;
  std::stringstream ss(shape_s.substr(p1 + 1, p2 - p1 - 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    try {
      shape.push_back(std::stoll(item));
    } catch (...) {
      bad_input(path + ": malformed shape");
    }
  }
  Tensor t(dt, shape);
  if (!f.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes())))
    bad_input(path + ": truncated data (expected " + std::to_string(t.nbytes()) + " bytes)");
  return t;
}

void write_npy(const Tensor& t, const std::string& path) {
  Tensor src = t;
  if (t.dtype() == DType::kBF16) src = cast_tensor(t, DType::kF32, Rounding::kNearestEven);
  const char* descr = npy_descr(src.dtype());
  if (!descr) throw EngineError(ErrorKind::kUnsupported, std::string("cannot write dtype ") + dtype_name(src.dtype()) + " to .npy");
  std::string shape = "(";
  for (size_t i = 0; i < src.shape().size(); ++i) shape += std::to_string(src.shape()[i]) + (src.shape().size() == 1 ? "," : (i + 1 < src.shape().size() ? ", " : ""));
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (const std::string why = base::not_a_writable_file(path); !why.empty()) bad_input(path + ": cannot write: " + why);
  std::ofstream f(path, std::ios::binary);
  if (!f) bad_input(path + ": cannot write");
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t hl = static_cast<uint16_t>(header.size());
  const char hb[2] = {static_cast<char>(hl & 0xff), static_cast<char>(hl >> 8)};
  f.write(hb, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(src.raw()), static_cast<std::streamsize>(src.nbytes()));
  if (!f) bad_input(path + ": write failed");
}

}  // namespace torq::engine
