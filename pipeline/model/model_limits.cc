#include "pipeline/model/model_limits.h"

#include <set>
#include <string>

#include <onnx/onnx_pb.h>

#include "pipeline/core/types.h"

namespace torq::pipeline {

namespace {

std::string dims_text(const google::protobuf::RepeatedField<int64_t>& dims) {
  std::string s = "[";
  for (int i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// The element count of `dims`, or throws naming `what` (a negative
// dimension, too many elements or dimensions). Overflow-safe.
int64_t element_count(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& what) {
  if (dims.size() > kMaxTensorRank)
    throw PipelineError(what + ": " + std::to_string(dims.size()) + " dimensions (at most " +
                        std::to_string(kMaxTensorRank) + ")");
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) throw PipelineError(what + ": negative dimension in shape " + dims_text(dims));
    if (d != 0 && n > kMaxTensorElements / d)
      throw PipelineError(what + ": shape " + dims_text(dims) + " has more than " +
                          std::to_string(kMaxTensorElements) + " elements (the limit per tensor)");
    n *= d;
  }
  return n;
}

// Bytes per element of a fixed-size ONNX element type; 0 for strings and
// unknown types.
int64_t element_bytes(int type) {
  using T = onnx::TensorProto;
  switch (type) {
    case T::UINT8: case T::INT8: case T::BOOL: return 1;
    case T::UINT16: case T::INT16: case T::FLOAT16: case T::BFLOAT16: return 2;
    case T::FLOAT: case T::INT32: case T::UINT32: return 4;
    case T::INT64: case T::DOUBLE: case T::UINT64: case T::COMPLEX64: return 8;
    case T::COMPLEX128: return 16;
    default: return 0;
  }
}

// How many typed values (float_data, int32_data, ...) `t` holds, as
// elements of its type (a complex element is two values).
int64_t typed_values(const onnx::TensorProto& t) {
  using T = onnx::TensorProto;
  switch (t.data_type()) {
    case T::FLOAT: return t.float_data_size();
    case T::COMPLEX64: return t.float_data_size() / 2;
    case T::INT32: case T::INT16: case T::INT8: case T::UINT16: case T::UINT8: case T::BOOL: case T::FLOAT16:
    case T::BFLOAT16: return t.int32_data_size();
    case T::INT64: return t.int64_data_size();
    case T::DOUBLE: return t.double_data_size();
    case T::COMPLEX128: return t.double_data_size() / 2;
    case T::UINT32: case T::UINT64: return t.uint64_data_size();
    case T::STRING: return t.string_data_size();
    default: return 0;
  }
}

void check_tensor(const onnx::TensorProto& t, const std::string& what) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
    throw PipelineError(what + ": data stored outside the model file (external data is not accepted: save the "
                               "model with its weights inside)");
  const int64_t n = element_count(t.dims(), what);
  const int64_t size = element_bytes(t.data_type());
  if (t.has_raw_data()) {
    if (size == 0) throw PipelineError(what + ": raw data for an element type without a fixed size");
    const auto bytes = static_cast<int64_t>(t.raw_data().size());
    if (bytes != n * size)
      throw PipelineError(what + ": " + std::to_string(bytes) + " bytes of data for shape " + dims_text(t.dims()) +
                          ", which needs " + std::to_string(n * size));
    return;
  }
  const int64_t values = typed_values(t);
  if (values != n && !(n == 0 && values == 0))
    throw PipelineError(what + ": " + std::to_string(values) + " values for shape " + dims_text(t.dims()) +
                        ", which needs " + std::to_string(n));
}

const std::set<std::string>& windowed_ops() {
  static const std::set<std::string> ops = {"Conv",    "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool",
                                            "AveragePool", "LpPool",   "MaxUnpool",   "DeformConv",  "Col2Im"};
  return ops;
}

void check_node(const onnx::NodeProto& n, const std::string& where) {
  const std::string what = where + "node '" + (n.name().empty() ? n.output_size() ? n.output(0) : "" : n.name()) +
                           "' (" + n.op_type() + ")";
  const bool windowed = windowed_ops().count(n.op_type()) > 0;
  for (const auto& a : n.attribute()) {
    if (windowed && (a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape"))
      for (int64_t v : a.ints())
        if (v < 1) throw PipelineError(what + ": attribute " + a.name() + " holds " + std::to_string(v) + " (must be >= 1)");
    if (windowed && a.name() == "group" && a.i() < 1)
      throw PipelineError(what + ": attribute group is " + std::to_string(a.i()) + " (must be >= 1)");
    if (a.has_t()) check_tensor(a.t(), what + " attribute " + a.name());
  }
}

void check_graph(const onnx::GraphProto& g, const std::string& where) {
  std::set<std::string> inits;
  for (const auto& t : g.initializer()) {
    check_tensor(t, where + "initializer '" + t.name() + "'");
    inits.insert(t.name());
  }
  for (const auto& in : g.input()) {
    if (inits.count(in.name()) || !in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
    google::protobuf::RepeatedField<int64_t> dims;
    for (const auto& d : in.type().tensor_type().shape().dim())
      if (d.has_dim_value()) dims.Add(d.dim_value());
    element_count(dims, where + "input '" + in.name() + "'");
  }
  for (const auto& n : g.node()) {
    check_node(n, where);
    for (const auto& a : n.attribute()) {
      const std::string in = where + n.op_type() + " '" + (n.name().empty() ? a.name() : n.name()) + "' " + a.name() + ": ";
      if (a.has_g()) check_graph(a.g(), in);
      for (const auto& sub : a.graphs()) check_graph(sub, in);
    }
  }
}

}  // namespace

void check_model_limits(const onnx::ModelProto& model) { check_graph(model.graph(), ""); }

}  // namespace torq::pipeline
