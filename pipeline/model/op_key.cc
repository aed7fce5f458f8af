// Op keys of layers (op_key.h): op type, attributes with values, input
// dtypes and shapes, from the graph's types and initializers.
#include "pipeline/model/op_key.h"

#include <onnx/onnx_pb.h>

#include <cstdio>
#include <map>
#include <string>

#include "pipeline/base/dtype.h"
#include "pipeline/model/model_import.h"

namespace torq::pipeline {

namespace {

std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

template <class List, class Fn>
std::string list(const List& items, Fn text) {
  std::string s = "[";
  for (int i = 0; i < items.size(); ++i) s += (i ? "," : "") + text(items.Get(i));
  return s + "]";
}

std::string attribute_value(const onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT:
      return std::to_string(a.i());
    case A::FLOAT:
      return number(a.f());
    case A::STRING:
      return "'" + a.s() + "'";
    case A::INTS:
      return list(a.ints(), [](int64_t v) { return std::to_string(v); });
    case A::FLOATS:
      return list(a.floats(), [](float v) { return number(v); });
    case A::STRINGS:
      return list(a.strings(), [](const std::string& v) { return "'" + v + "'"; });
    case A::GRAPH:
    case A::GRAPHS:
      return "<graph>";
    default:
      return "<tensor>";
  }
}

std::string tensor_text(int32_t elem_type, const std::vector<std::string>& dims) {
  const base::DType t = base::dtype_from_onnx(elem_type);
  std::string s = t == base::DType::kUndefined ? "type" + std::to_string(elem_type) : base::dtype_name(t);
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + dims[i];
  return s + "]";
}

// Types of every named value of the graph: inputs, value_info, outputs,
// initializers and Constant outputs.
struct ValueTypes {
  std::map<std::string, std::string> text;
  explicit ValueTypes(const onnx::GraphProto& g) {
    auto add_value = [this](const onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type()) return;
      std::vector<std::string> dims;
      for (const auto& d : v.type().tensor_type().shape().dim())
        dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param().empty() ? "?" : d.dim_param());
      text[v.name()] = tensor_text(v.type().tensor_type().elem_type(), dims);
    };
    auto add_tensor = [this](const std::string& name, const onnx::TensorProto& t) {
      std::vector<std::string> dims;
      for (int64_t d : t.dims()) dims.push_back(std::to_string(d));
      text[name] = tensor_text(t.data_type(), dims);
    };
    for (const auto& v : g.input()) add_value(v);
    for (const auto& v : g.value_info()) add_value(v);
    for (const auto& v : g.output()) add_value(v);
    for (const auto& t : g.initializer()) add_tensor(t.name(), t);
    for (const auto& n : g.node())
      if (n.op_type() == "Constant" && n.output_size())
        for (const auto& a : n.attribute())
          if (a.name() == "value" && a.has_t()) add_tensor(n.output(0), a.t());
  }
  std::string of(const std::string& name) const {
    if (name.empty()) return "-";
    const auto it = text.find(name);
    return it == text.end() ? "?" : it->second;
  }
};

std::string key_of(const onnx::GraphProto& g, const ValueTypes& types, const LayerNodes& layer) {
  const onnx::NodeProto& n = g.node(layer.compute);
  // Inputs a DequantizeLinear of this layer makes: described by its input.
  std::map<std::string, std::string> dequantized;
  for (int p : layer.nodes) {
    const onnx::NodeProto& q = g.node(p);
    if (p != layer.compute && q.op_type() == "DequantizeLinear" && q.output_size() && q.input_size())
      dequantized[q.output(0)] = q.input(0);
  }
  std::map<std::string, std::string> attrs;
  for (const auto& a : n.attribute()) attrs[a.name()] = attribute_value(a);
  std::string key =
      (layer.nodes.size() > 1 ? "QDQ " : "") + (n.domain().empty() ? "" : n.domain() + "::") + n.op_type();
  key += "(";
  bool first = true;
  for (const auto& [name, value] : attrs) key += (first ? "" : ", ") + name + "=" + value, first = false;
  key += ")";
  for (int i = 0; i < n.input_size(); ++i) {
    const auto dq = dequantized.find(n.input(i));
    key += (i ? ", " : " ") + types.of(dq == dequantized.end() ? n.input(i) : dq->second);
  }
  return key;
}

}  // namespace

std::string op_key(const onnx::ModelProto& model, const LayerNodes& layer) {
  return key_of(model.graph(), ValueTypes(model.graph()), layer);
}

std::vector<std::string> layer_op_keys(const ImportedModel& model) {
  const ValueTypes types(model.proto().graph());
  std::vector<std::string> out;
  for (const LayerNodes& l : model.layer_nodes()) out.push_back(key_of(model.proto().graph(), types, l));
  return out;
}

}  // namespace torq::pipeline
