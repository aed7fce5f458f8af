// torch-mlir ONNX-import text emission: the text iree-import-onnx writes,
// line for line where a line decides a location or a name (mlir.h).
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <unordered_map>

#include "pipeline/model/layer_nodes.h"
#include "pipeline/model/mlir.h"
#include "pipeline/core/types.h"

namespace torq::pipeline {
namespace {

// Element type spelling shared by !torch.vtensor and builtin tensor types
// (the importer's ELEM_TYPE_TO_IR_TYPE table).
const char* element_type(int32_t dt) {
  switch (dt) {
    case onnx::TensorProto::FLOAT: return "f32";
    case onnx::TensorProto::DOUBLE: return "f64";
    case onnx::TensorProto::FLOAT16: return "f16";
    case onnx::TensorProto::BFLOAT16: return "bf16";
    case onnx::TensorProto::INT8: return "si8";
    case onnx::TensorProto::INT16: return "si16";
    case onnx::TensorProto::INT32: return "si32";
    case onnx::TensorProto::INT64: return "si64";
    case onnx::TensorProto::UINT8: return "ui8";
    case onnx::TensorProto::UINT16: return "ui16";
    case onnx::TensorProto::UINT32: return "ui32";
    case onnx::TensorProto::UINT64: return "ui64";
    case onnx::TensorProto::BOOL: return "i1";
    case onnx::TensorProto::COMPLEX64: return "complex<f32>";
    case onnx::TensorProto::COMPLEX128: return "complex<f64>";
    case onnx::TensorProto::STRING: return "!torch.str";
    default: return nullptr;
  }
}

std::string dims_text(const std::vector<int64_t>& dims, const char* sep) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? sep : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s;
}

std::string vtensor_type(const std::vector<int64_t>& dims, int32_t dt) {
  const char* et = element_type(dt);
  if (!et) return "!torch.vtensor";
  return "!torch.vtensor<[" + dims_text(dims, ",") + "]," + et + ">";
}

std::string builtin_tensor_type(const std::vector<int64_t>& dims, int32_t dt) {
  const char* et = element_type(dt);
  std::string s = "tensor<";
  for (int64_t d : dims) s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + (et ? et : "none") + ">";
}

// A tensor type's dims as the importer reads them: a dim_param is unknown,
// any other dim is its dim_value (0 when unset).
std::vector<int64_t> shape_dims(const onnx::TensorShapeProto& shape) {
  std::vector<int64_t> dims;
  for (const auto& d : shape.dim()) dims.push_back(d.has_dim_param() && !d.dim_param().empty() ? -1 : d.dim_value());
  return dims;
}

std::string element_of_list(const onnx::TypeProto& t) {
  if (t.has_tensor_type() && t.tensor_type().elem_type()) {
    const char* et = element_type(t.tensor_type().elem_type());
    return "vtensor<[" + dims_text(shape_dims(t.tensor_type().shape()), ",") + "]," + (et ? et : "none") + ">";
  }
  if (t.has_sequence_type()) return "list<" + element_of_list(t.sequence_type().elem_type()) + ">";
  return "none";
}

// The importer's type_proto_to_type: tensors as !torch.vtensor, sequences as
// !torch.list, optionals as !torch.optional, anything empty as !torch.none.
std::string type_string(const onnx::TypeProto& t) {
  if (t.has_tensor_type() && t.tensor_type().elem_type()) {
    const auto& tt = t.tensor_type();
    const char* et = element_type(tt.elem_type());
    if (!et) return "!torch.vtensor";
    if (!tt.has_shape()) return std::string("!torch.vtensor<*,") + et + ">";
    return vtensor_type(shape_dims(tt.shape()), tt.elem_type());
  }
  if (t.has_sequence_type()) return "!torch.list<" + element_of_list(t.sequence_type().elem_type()) + ">";
  if (t.has_optional_type()) return "!torch.optional<" + element_of_list(t.optional_type().elem_type()) + ">";
  return "!torch.none";
}

std::vector<int64_t> tensor_dims(const onnx::TensorProto& t) {
  return std::vector<int64_t>(t.dims().begin(), t.dims().end());
}

// An MLIR string literal: quotes, backslashes and non-printable bytes escaped
// as \XX.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || !std::isprint(c)) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "\\%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// MLIR's float spelling: 6-digit exponent form when it reads back exactly
// (1.000000e-01), else the type's natural precision (1.76405239); non-finite
// values as hex bits.
std::string float_literal(float f) {
  char buf[48];
  if (std::isfinite(f)) {
    std::snprintf(buf, sizeof buf, "%.6e", static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f) return buf;
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
    std::string s = buf;
    if (s.find('.') == std::string::npos && s.find('e') == std::string::npos) s += ".0";
    return s;
  }
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  std::snprintf(buf, sizeof buf, "0x%08X", bits);
  return buf;
}

// A dense_resource's name as the importer derives it (_sanitize_name): a
// name that is not a Python identifier gets a leading '_', and every
// character but [A-Za-z0-9_.] becomes '_'.
std::string resource_name(const std::string& name) {
  bool identifier = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (unsigned char c : name) identifier = identifier && (std::isalnum(c) || c == '_' || c >= 0x80);
  std::string out = identifier ? name : "_" + name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') c = '_';
  return out;
}

// Inline values of a tensor given in typed fields, nested by dims; a splat
// as one value (MLIR prints dense<v> when every element is equal).
std::string inline_values(const onnx::TensorProto& t, const std::vector<int64_t>& dims) {
  std::vector<std::string> v;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      for (float f : t.float_data()) v.push_back(float_literal(f));
      break;
    case onnx::TensorProto::INT64:
      for (int64_t x : t.int64_data()) v.push_back(std::to_string(x));
      break;
    case onnx::TensorProto::BOOL:
      for (int32_t x : t.int32_data()) v.push_back(x ? "true" : "false");
      break;
    case onnx::TensorProto::INT8: case onnx::TensorProto::INT16: case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT8: case onnx::TensorProto::UINT16:
      for (int32_t x : t.int32_data()) v.push_back(std::to_string(x));
      break;
    case onnx::TensorProto::UINT32: case onnx::TensorProto::UINT64:
      for (uint64_t x : t.uint64_data()) v.push_back(std::to_string(x));
      break;
    case onnx::TensorProto::DOUBLE:
      for (double d : t.double_data()) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.6e", d);
        v.push_back(buf);
      }
      break;
    default:
      return "\"__unsupported__\"";
  }
  if (v.empty()) return "[]";
  if (std::all_of(v.begin(), v.end(), [&](const std::string& s) { return s == v[0]; })) return v[0];
  size_t pos = 0;
  std::function<std::string(size_t)> nest = [&](size_t axis) -> std::string {
    if (axis == dims.size()) return pos < v.size() ? v[pos++] : "0";
    std::string s = "[";
    for (int64_t i = 0; i < dims[axis]; ++i) s += (i ? ", " : "") + nest(axis + 1);
    return s + "]";
  };
  return nest(0);
}

// The importer's tensor_proto_to_attr: raw data as a dense_resource named
// after the tensor, typed fields inline.
std::string tensor_attr(const onnx::TensorProto& t) {
  const std::vector<int64_t> dims = tensor_dims(t);
  if (t.has_raw_data() || t.data_location() == onnx::TensorProto::EXTERNAL)
    return "dense_resource<" + resource_name(t.name()) + "> : " + builtin_tensor_type(dims, t.data_type());
  return "dense<" + inline_values(t, dims) + "> : " + builtin_tensor_type(dims, t.data_type());
}

// One attribute as the importer writes it; an empty string for a graph
// attribute (a region, not an attribute).
std::string attribute_value(const onnx::AttributeProto& a) {
  auto list = [&](int n, const std::function<std::string(int)>& item) {
    std::string out = "[";
    for (int i = 0; i < n; ++i) out += (i ? ", " : "") + item(i);
    return out + "]";
  };
  switch (a.type()) {
    case onnx::AttributeProto::INT: return std::to_string(a.i()) + " : si64";
    case onnx::AttributeProto::FLOAT: return float_literal(a.f()) + " : f32";
    case onnx::AttributeProto::STRING: return quote(a.s());
    case onnx::AttributeProto::INTS:
      return list(a.ints_size(), [&](int i) { return std::to_string(a.ints(i)) + " : si64"; });
    case onnx::AttributeProto::FLOATS:
      return list(a.floats_size(), [&](int i) { return float_literal(a.floats(i)) + " : f32"; });
    case onnx::AttributeProto::STRINGS: return list(a.strings_size(), [&](int i) { return quote(a.strings(i)); });
    case onnx::AttributeProto::TENSOR: return tensor_attr(a.t());
    case onnx::AttributeProto::TENSORS: return list(a.tensors_size(), [&](int i) { return tensor_attr(a.tensors(i)); });
    case onnx::AttributeProto::GRAPH: return "";
    default: return quote("<unsupported attribute>");
  }
}

// A symbol as MLIR prints it: bare when it is an identifier, else quoted.
std::string symbol(const std::string& name) {
  bool bare = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (unsigned char c : name) bare = bare && (std::isalnum(c) || c == '_' || c == '$' || c == '.');
  return "@" + (bare ? name : quote(name));
}

// A copy of `model` for shape inference without the payload of large
// initializers (inference needs their dims and dtype; only small ones, such
// as Reshape shapes, are read as data), so big models are not duplicated.
onnx::ModelProto inference_copy(const onnx::ModelProto& model) {
  constexpr int64_t kMaxCopiedElements = 1024;
  onnx::ModelProto copy;
  copy.set_ir_version(model.ir_version());
  *copy.mutable_opset_import() = model.opset_import();
  *copy.mutable_functions() = model.functions();
  const onnx::GraphProto& g = model.graph();
  onnx::GraphProto* cg = copy.mutable_graph();
  cg->set_name(g.name());
  *cg->mutable_node() = g.node();
  *cg->mutable_input() = g.input();
  *cg->mutable_output() = g.output();
  *cg->mutable_value_info() = g.value_info();
  for (const auto& t : g.initializer()) {
    int64_t elements = 1;
    for (int64_t d : t.dims()) elements *= std::max<int64_t>(d, 0);
    onnx::TensorProto* ct = cg->add_initializer();
    if (elements <= kMaxCopiedElements) {
      *ct = t;
    } else {
      ct->set_name(t.name());
      ct->set_data_type(t.data_type());
      *ct->mutable_dims() = t.dims();
    }
  }
  return copy;
}

struct Value {
  std::string ref, type;
};
using ValueMap = std::unordered_map<std::string, Value>;

// Emits one graph as the body of a function or of a region, numbering values
// the way MLIR's printer does: every value of a region first, in order; the
// regions nested in it afterwards, each starting from the number the
// enclosing region ended with (sibling regions share that start).
class RegionEmitter {
 public:
  explicit RegionEmitter(std::ostringstream& os) : os_(os) {}

  // `g` is the model's graph or a subgraph; `inferred` is the same graph
  // after shape inference (types only). Returns nothing; writes to os_.
  void emit(const onnx::GraphProto& g, const onnx::GraphProto& inferred, ValueMap values, int first_value,
            int first_arg, bool is_function, const std::string& indent) {
    std::unordered_map<std::string, std::string> types;
    for (const auto& v : inferred.value_info()) types[v.name()] = type_string(v.type());
    for (const auto& v : inferred.output()) types[v.name()] = type_string(v.type());
    for (const auto& v : inferred.input()) types[v.name()] = type_string(v.type());
    std::unordered_map<std::string, const onnx::TensorProto*> inits;
    for (const auto& t : g.initializer()) inits.emplace(t.name(), &t);
    auto result_type = [&](const std::string& name) -> std::string {
      if (auto it = types.find(name); it != types.end()) return it->second;
      if (auto it = inits.find(name); it != inits.end())
        return vtensor_type(tensor_dims(*it->second), it->second->data_type());
      return "!torch.none";
    };

    int next = first_value;
    const int region_end = first_value + count_values(g);
    int next_arg = first_arg + (is_function ? 0 : g.input_size());
    if (!is_function && g.input_size() > 0) {
      os_ << indent.substr(2) << "^bb0(";
      for (int i = 0; i < g.input_size(); ++i) {
        const std::string ref = "%arg" + std::to_string(first_arg + i);
        values[g.input(i).name()] = {ref, type_string(g.input(i).type())};
        os_ << (i ? ", " : "") << ref << ": " << values[g.input(i).name()].type;
      }
      os_ << "):\n";
    }

    std::vector<std::string> init_order;  // the importer's initializer_map: first position, last value
    for (const auto& t : g.initializer())
      if (std::find(init_order.begin(), init_order.end(), t.name()) == init_order.end()) init_order.push_back(t.name());
    std::unordered_map<std::string, const onnx::TensorProto*> last_init;
    for (const auto& t : g.initializer()) last_init[t.name()] = &t;
    for (const auto& name : init_order) {
      const onnx::TensorProto& t = *last_init[name];
      const std::string ref = "%" + std::to_string(next++);
      const std::string type = vtensor_type(tensor_dims(t), t.data_type());
      values[name] = {ref, type};
      os_ << indent << ref << " = torch.operator \"onnx.Constant\"() {torch.onnx.value = " << tensor_attr(t)
          << "} : () -> " << type << " \n";
    }
    if (is_function) {
      os_ << indent << "%none = torch.constant.none\n";
      values[""] = {"%none", "!torch.none"};
    }

    for (int ni = 0; ni < g.node_size(); ++ni) {
      const onnx::NodeProto& n = g.node(ni);
      const onnx::NodeProto* in = ni < inferred.node_size() ? &inferred.node(ni) : nullptr;
      if (is_value_constant(n)) {
        const onnx::TensorProto* t = nullptr;
        for (const auto& a : n.attribute())
          if (a.name() == "value") t = &a.t();
        onnx::TensorProto named = *t;
        named.set_name(n.output(0));
        const std::string ref = "%" + std::to_string(next++);
        const std::string type = vtensor_type(tensor_dims(named), named.data_type());
        values[n.output(0)] = {ref, type};
        os_ << indent << ref << " = torch.operator \"onnx.Constant\"() {torch.onnx.value = " << tensor_attr(named)
            << "} : () -> " << type << " \n";
        continue;
      }
      emit_node(n, in, ni, values, next, region_end, next_arg, result_type, indent);
    }

    std::vector<std::string> outs, out_types;
    for (const auto& o : g.output()) {
      auto it = values.find(o.name());
      if (it == values.end())
        throw PipelineError("graph output '" + o.name() + "' is not defined by any input, initializer or node");
      outs.push_back(it->second.ref);
      out_types.push_back(it->second.type);
    }
    os_ << indent << (is_function ? "return" : "torch.operator_terminator");
    for (size_t i = 0; i < outs.size(); ++i) os_ << (i ? ", " : " ") << outs[i];
    if (!outs.empty()) {
      os_ << " : ";
      for (size_t i = 0; i < out_types.size(); ++i) os_ << (i ? ", " : "") << out_types[i];
    }
    os_ << "\n";
  }

 private:
  static bool is_value_constant(const onnx::NodeProto& n) {
    if (!is_constant_node(n) || n.output_size() != 1) return false;
    for (const auto& a : n.attribute())
      if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) return true;
    return false;
  }

  // How many names a region's values take (one per op with results, %N:k
  // for k results; block arguments and %none are named apart).
  static int count_values(const onnx::GraphProto& g) {
    std::vector<std::string> seen;
    for (const auto& t : g.initializer())
      if (std::find(seen.begin(), seen.end(), t.name()) == seen.end()) seen.push_back(t.name());
    int n = static_cast<int>(seen.size());
    for (const auto& node : g.node()) n += node.output_size() > 0 ? 1 : 0;
    return n;
  }

  void emit_node(const onnx::NodeProto& n, const onnx::NodeProto* inferred, int ni, ValueMap& values, int& next,
                 int region_end, int next_arg, const std::function<std::string(const std::string&)>& result_type,
                 const std::string& indent) {
    std::vector<std::string> operands, operand_types;
    for (const auto& in : n.input()) {
      auto it = values.find(in);
      if (it == values.end())
        throw PipelineError("node " + std::to_string(ni) + " (" + n.op_type() + " '" + n.name() + "') reads '" + in +
                            "', which no input, initializer or earlier node defines");
      operands.push_back(it->second.ref);
      operand_types.push_back(it->second.type);
    }
    std::vector<std::string> results;
    std::string lhs;
    if (n.output_size() > 0) {
      const std::string base = "%" + std::to_string(next++);  // one name for all results: %N:k, used as %N#i
      lhs = base + (n.output_size() > 1 ? ":" + std::to_string(n.output_size()) : "") + " = ";
      for (int k = 0; k < n.output_size(); ++k) {
        const std::string type = result_type(n.output(k));
        results.push_back(type);
        if (!n.output(k).empty()) values[n.output(k)] = {n.output_size() > 1 ? base + "#" + std::to_string(k) : base, type};
      }
    }
    std::map<std::string, std::string> attrs;  // MLIR prints dictionaries sorted
    std::map<std::string, std::pair<const onnx::GraphProto*, const onnx::GraphProto*>> regions;  // sorted by name
    for (int ai = 0; ai < n.attribute_size(); ++ai) {
      const auto& a = n.attribute(ai);
      if (a.type() == onnx::AttributeProto::GRAPH) {
        const onnx::GraphProto* ig = &a.g();
        if (inferred && ai < inferred->attribute_size() && inferred->attribute(ai).name() == a.name())
          ig = &inferred->attribute(ai).g();
        regions[a.name()] = {&a.g(), ig};
        continue;
      }
      attrs["torch.onnx." + a.name()] = attribute_value(a);
    }
    os_ << indent << lhs << "torch.operator \"onnx." << n.op_type() << "\"(";
    for (size_t i = 0; i < operands.size(); ++i) os_ << (i ? ", " : "") << operands[i];
    os_ << ")";
    if (!attrs.empty()) {
      os_ << " {";
      bool first = true;
      for (const auto& [k, v] : attrs) {
        os_ << (first ? "" : ", ") << k << " = " << v;
        first = false;
      }
      os_ << "}";
    }
    os_ << " : (";
    for (size_t i = 0; i < operand_types.size(); ++i) os_ << (i ? ", " : "") << operand_types[i];
    os_ << ") -> ";
    if (results.size() == 1) {
      os_ << results[0];
    } else {
      os_ << "(";
      for (size_t k = 0; k < results.size(); ++k) os_ << (k ? ", " : "") << results[k];
      os_ << ")";
    }
    if (regions.empty()) {
      os_ << " \n";
      return;
    }
    os_ << " {\n";
    bool first = true;
    for (const auto& [name, graphs] : regions) {
      if (!first) os_ << indent << "}, {\n";
      first = false;
      emit(*graphs.first, *graphs.second, values, region_end, next_arg, false, indent + "  ");
    }
    os_ << indent << "}\n";
  }

  std::ostringstream& os_;
};

}  // namespace

std::string mlir_function_name(const onnx::ModelProto& model) { return model.graph().name(); }

std::string emit_torch_mlir(const onnx::ModelProto& model) {
  // Types: graph declarations first, then shape inference (with data
  // propagation, like iree-import-onnx --data-prop) on a copy.
  onnx::ModelProto inferred = inference_copy(model);
  try {
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
    // Inference is best effort: whatever it recorded before failing is kept,
    // the rest prints as unknown.
  }
  const onnx::GraphProto& g = model.graph();
  const onnx::GraphProto& ig = inferred.graph();
  std::unordered_map<std::string, std::string> declared;
  for (const auto& v : ig.input()) declared[v.name()] = type_string(v.type());
  for (const auto& v : ig.output()) declared[v.name()] = type_string(v.type());
  std::unordered_map<std::string, bool> is_init;
  for (const auto& t : g.initializer()) is_init[t.name()] = true;

  ValueMap values;
  std::vector<std::string> arg_decls;
  for (const auto& in : g.input()) {
    if (is_init.count(in.name())) continue;
    const std::string ref = "%arg" + std::to_string(arg_decls.size());
    values[in.name()] = {ref, declared[in.name()]};
    arg_decls.push_back(ref + ": " + declared[in.name()]);
  }
  std::vector<std::string> result_types;
  for (const auto& out : g.output()) result_types.push_back(declared[out.name()]);

  int64_t opset = 0;
  std::map<std::string, int64_t> other_opsets;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty()) opset = o.version();
    else other_opsets[o.domain()] = o.version();
  }

  std::ostringstream os;
  os << "module {\n  func.func " << symbol(mlir_function_name(model)) << "(";
  for (size_t i = 0; i < arg_decls.size(); ++i) os << (i ? ", " : "") << arg_decls[i];
  os << ")";
  if (result_types.size() == 1) {
    os << " -> " << result_types[0];
  } else if (result_types.size() > 1) {
    os << " -> (";
    for (size_t i = 0; i < result_types.size(); ++i) os << (i ? ", " : "") << result_types[i];
    os << ")";
  }
  os << " attributes {torch.onnx_meta.ir_version = " << model.ir_version() << " : si64";
  if (opset) os << ", torch.onnx_meta.opset_version = " << opset << " : si64";
  if (!other_opsets.empty()) {
    os << ", torch.onnx_meta.opset_versions = {";
    bool first = true;
    for (const auto& [d, v] : other_opsets) {
      os << (first ? "" : ", ") << (symbol(d).substr(1)) << " = " << v << " : si64";
      first = false;
    }
    os << "}";
  }
  os << ", torch.onnx_meta.producer_name = " << quote(model.producer_name())
     << ", torch.onnx_meta.producer_version = " << quote(model.producer_version()) << "} {\n";
  RegionEmitter(os).emit(g, ig, values, 0, static_cast<int>(arg_decls.size()), true, "    ");
  os << "  }\n}\n";
  return os.str();
}

}  // namespace torq::pipeline
