// torch-mlir ONNX-import text emission and the ONNX node -> line:col mapping.
#include "pipeline/mlir.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <unordered_map>

#include "pipeline/layer_nodes.h"
#include "pipeline/types.h"

namespace torq::pipeline {
namespace {

bool is_constant(const onnx::NodeProto& n) {
  return n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx");
}

// Element type spelling shared by !torch.vtensor and builtin tensor types.
const char* element_type(int32_t dt) {
  switch (dt) {
    case onnx::TensorProto::FLOAT:
      return "f32";
    case onnx::TensorProto::DOUBLE:
      return "f64";
    case onnx::TensorProto::FLOAT16:
      return "f16";
    case onnx::TensorProto::BFLOAT16:
      return "bf16";
    case onnx::TensorProto::INT8:
      return "si8";
    case onnx::TensorProto::INT16:
      return "si16";
    case onnx::TensorProto::INT32:
      return "si32";
    case onnx::TensorProto::INT64:
      return "si64";
    case onnx::TensorProto::UINT8:
      return "ui8";
    case onnx::TensorProto::UINT16:
      return "ui16";
    case onnx::TensorProto::UINT32:
      return "ui32";
    case onnx::TensorProto::UINT64:
      return "ui64";
    case onnx::TensorProto::BOOL:
      return "i1";
    case onnx::TensorProto::COMPLEX64:
      return "complex<f32>";
    case onnx::TensorProto::COMPLEX128:
      return "complex<f64>";
    case onnx::TensorProto::STRING:
      return "!torch.str";
    default:
      return nullptr;
  }
}

std::string vtensor_type(const std::vector<int64_t>& dims, int32_t dt) {
  const char* et = element_type(dt);
  if (!et) return "!torch.vtensor";
  std::string s = "!torch.vtensor<[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]," + et + ">";
}

std::string builtin_tensor_type(const std::vector<int64_t>& dims, int32_t dt) {
  const char* et = element_type(dt);
  std::string s = "tensor<";
  for (int64_t d : dims) s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + (et ? et : "none") + ">";
}

std::string type_string(const onnx::TypeProto& t) {
  if (t.has_tensor_type()) {
    const auto& tt = t.tensor_type();
    const char* et = element_type(tt.elem_type());
    if (!et) return "!torch.vtensor";
    if (!tt.has_shape()) return std::string("!torch.vtensor<*,") + et + ">";
    std::vector<int64_t> dims;
    for (const auto& d : tt.shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    return vtensor_type(dims, tt.elem_type());
  }
  if (t.has_sequence_type()) return "!torch.list<vtensor>";
  if (t.has_optional_type()) return "!torch.optional<vtensor>";
  return "!torch.vtensor";
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

// MLIR's float spelling: 1.000000e-01; non-finite values as hex bits.
std::string float_literal(float f) {
  char buf[32];
  if (std::isfinite(f)) {
    std::snprintf(buf, sizeof buf, "%.6e", static_cast<double>(f));
  } else {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    std::snprintf(buf, sizeof buf, "0x%08X", bits);
  }
  return buf;
}

std::string elided_literal(const std::vector<int64_t>& dims, int32_t dt) {
  return "dense_resource<__elided__> : " + builtin_tensor_type(dims, dt);
}

std::string attribute_value(const onnx::AttributeProto& a) {
  auto list = [&](int n, const std::function<std::string(int)>& item) {
    std::string out = "[";
    for (int i = 0; i < n; ++i) out += (i ? ", " : "") + item(i);
    return out + "]";
  };
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      return std::to_string(a.i()) + " : si64";
    case onnx::AttributeProto::FLOAT:
      return float_literal(a.f()) + " : f32";
    case onnx::AttributeProto::STRING:
      return quote(a.s());
    case onnx::AttributeProto::INTS:
      return list(a.ints_size(), [&](int i) { return std::to_string(a.ints(i)) + " : si64"; });
    case onnx::AttributeProto::FLOATS:
      return list(a.floats_size(), [&](int i) { return float_literal(a.floats(i)) + " : f32"; });
    case onnx::AttributeProto::STRINGS:
      return list(a.strings_size(), [&](int i) { return quote(a.strings(i)); });
    case onnx::AttributeProto::TENSOR:
      return elided_literal(tensor_dims(a.t()), a.t().data_type());
    case onnx::AttributeProto::GRAPH:
      return quote("<graph " + a.g().name() + ": " + std::to_string(a.g().node_size()) + " nodes>");
    case onnx::AttributeProto::GRAPHS:
      return quote("<" + std::to_string(a.graphs_size()) + " graphs>");
    case onnx::AttributeProto::TENSORS:
      return quote("<" + std::to_string(a.tensors_size()) + " tensors>");
    case onnx::AttributeProto::SPARSE_TENSOR:
      return quote("<sparse tensor>");
    case onnx::AttributeProto::SPARSE_TENSORS:
      return quote("<sparse tensors>");
    case onnx::AttributeProto::TYPE_PROTO:
      return quote("<type>");
    case onnx::AttributeProto::TYPE_PROTOS:
      return quote("<types>");
    default:
      return "unit";
  }
}

// The literal (and its dims/dtype) a Constant node produces.
std::string constant_literal(const onnx::NodeProto& n, std::vector<int64_t>& dims, int32_t& dt) {
  for (const auto& a : n.attribute()) {
    if (a.name() == "value" && a.has_t()) {
      dims = tensor_dims(a.t());
      dt = a.t().data_type();
      return elided_literal(dims, dt);
    }
    if (a.name() == "value_float") {
      dims = {};
      dt = onnx::TensorProto::FLOAT;
      return "dense<" + float_literal(a.f()) + "> : tensor<f32>";
    }
    if (a.name() == "value_int") {
      dims = {};
      dt = onnx::TensorProto::INT64;
      return "dense<" + std::to_string(a.i()) + "> : tensor<si64>";
    }
    if (a.name() == "value_floats") {
      dims = {a.floats_size()};
      dt = onnx::TensorProto::FLOAT;
      std::string v;
      for (int i = 0; i < a.floats_size(); ++i) v += (i ? ", " : "") + float_literal(a.floats(i));
      return "dense<[" + v + "]> : " + builtin_tensor_type(dims, dt);
    }
    if (a.name() == "value_ints") {
      dims = {a.ints_size()};
      dt = onnx::TensorProto::INT64;
      std::string v;
      for (int i = 0; i < a.ints_size(); ++i) v += (i ? ", " : "") + std::to_string(a.ints(i));
      return "dense<[" + v + "]> : " + builtin_tensor_type(dims, dt);
    }
    if (a.name() == "value_string" || a.name() == "value_strings") {
      dims = a.name() == "value_strings" ? std::vector<int64_t>{a.strings_size()} : std::vector<int64_t>{};
      dt = onnx::TensorProto::STRING;
      return elided_literal(dims, dt);
    }
    if (a.name() == "sparse_value") {
      dims.assign(a.sparse_tensor().dims().begin(), a.sparse_tensor().dims().end());
      dt = a.sparse_tensor().values().data_type();
      return elided_literal(dims, dt);
    }
  }
  dims = {};
  dt = onnx::TensorProto::UNDEFINED;
  return "dense_resource<__elided__> : tensor<none>";
}

// The op type of a `torch.operator "onnx.<Op>"` on `line` and the 1-based
// column of `torch.operator`, or an empty op when the line has none.
std::pair<std::string, size_t> find_onnx_operator(const std::string& line) {
  static const std::string kOp = "torch.operator";
  for (size_t pos = line.find(kOp); pos != std::string::npos; pos = line.find(kOp, pos + 1)) {
    size_t q = pos + kOp.size();
    if (q >= line.size() || (line[q] != ' ' && line[q] != '\t')) continue;
    while (q < line.size() && (line[q] == ' ' || line[q] == '\t')) ++q;
    if (line.compare(q, 6, "\"onnx.") != 0) continue;
    size_t end = q + 6;
    while (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_')) ++end;
    if (end < line.size() && line[end] == '"' && end > q + 6) return {line.substr(q + 6, end - q - 6), pos + 1};
  }
  return {"", 0};
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

}  // namespace

std::vector<std::string> non_constant_op_types(const onnx::ModelProto& model) {
  std::vector<std::string> out;
  for (const auto& n : model.graph().node())
    if (!is_constant(n)) out.push_back(n.op_type());
  return out;
}

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
  std::unordered_map<std::string, std::string> types;
  const auto& ig = inferred.graph();
  for (const auto& v : ig.value_info()) types[v.name()] = type_string(v.type());
  for (const auto& v : ig.output()) types[v.name()] = type_string(v.type());
  for (const auto& v : ig.input()) types[v.name()] = type_string(v.type());

  const onnx::GraphProto& g = model.graph();
  std::unordered_map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& t : g.initializer()) initializers[t.name()] = &t;
  auto type_of = [&](const std::string& name) {
    auto it = types.find(name);
    return it == types.end() ? std::string("!torch.vtensor") : it->second;
  };

  std::unordered_map<std::string, std::string> ssa;  // ONNX value name -> SSA reference
  std::vector<std::string> arg_decls;
  for (const auto& in : g.input()) {
    if (initializers.count(in.name())) continue;
    const std::string ref = "%arg" + std::to_string(arg_decls.size());
    ssa[in.name()] = ref;
    arg_decls.push_back(ref + ": " + type_of(in.name()));
  }
  std::vector<std::string> result_types;
  for (const auto& out : g.output()) result_types.push_back(type_of(out.name()));

  int64_t opset = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();

  std::ostringstream os;
  os << "module {\n  func.func @main_graph(";
  for (size_t i = 0; i < arg_decls.size(); ++i) os << (i ? ", " : "") << arg_decls[i];
  os << ")";
  if (result_types.size() == 1) {
    os << " -> " << result_types[0];
  } else if (result_types.size() > 1) {
    os << " -> (";
    for (size_t i = 0; i < result_types.size(); ++i) os << (i ? ", " : "") << result_types[i];
    os << ")";
  }
  os << " attributes {torch.onnx_meta.ir_version = " << model.ir_version()
     << " : si64, torch.onnx_meta.opset_version = " << opset
     << " : si64, torch.onnx_meta.producer_name = " << quote(model.producer_name())
     << ", torch.onnx_meta.producer_version = " << quote(model.producer_version()) << "} {\n";

  int next = 0;
  for (const auto& t : g.initializer()) {
    const std::string ref = "%" + std::to_string(next++);
    const std::vector<int64_t> dims = tensor_dims(t);
    ssa[t.name()] = ref;
    types[t.name()] = vtensor_type(dims, t.data_type());
    os << "    " << ref << " = torch.vtensor.literal(" << elided_literal(dims, t.data_type())
       << ") : " << types[t.name()] << "\n";
  }
  const bool needs_none = std::any_of(g.node().begin(), g.node().end(), [](const onnx::NodeProto& n) {
    return std::any_of(n.input().begin(), n.input().end(), [](const std::string& s) { return s.empty(); });
  });
  if (needs_none) os << "    %none = torch.constant.none\n";

  for (int ni = 0; ni < g.node_size(); ++ni) {
    const onnx::NodeProto& n = g.node(ni);
    if (is_constant(n)) {
      std::vector<int64_t> dims;
      int32_t dt = 0;
      const std::string literal = constant_literal(n, dims, dt);
      const std::string ref = "%" + std::to_string(next++);
      const std::string type =
          n.output_size() > 0 && types.count(n.output(0)) ? types[n.output(0)] : vtensor_type(dims, dt);
      for (const auto& out : n.output()) ssa[out] = ref;
      os << "    " << ref << " = torch.vtensor.literal(" << literal << ") : " << type << "\n";
      continue;
    }
    std::vector<std::string> operands, operand_types;
    for (const auto& in : n.input()) {
      if (in.empty()) {
        operands.push_back("%none");
        operand_types.push_back("!torch.none");
        continue;
      }
      auto it = ssa.find(in);
      if (it == ssa.end())
        throw PipelineError("node " + std::to_string(ni) + " (" + n.op_type() + " '" + n.name() + "') reads '" + in +
                            "', which no input, initializer or earlier node defines");
      operands.push_back(it->second);
      operand_types.push_back(type_of(in));
    }
    std::string lhs;
    if (n.output_size() > 0) {
      const std::string base = "%" + std::to_string(next++);
      if (n.output_size() == 1) {
        ssa[n.output(0)] = base;
        lhs = base + " = ";
      } else {
        for (int k = 0; k < n.output_size(); ++k)
          if (!n.output(k).empty()) ssa[n.output(k)] = base + "#" + std::to_string(k);
        lhs = base + ":" + std::to_string(n.output_size()) + " = ";
      }
    }
    std::map<std::string, std::string> attrs;  // MLIR prints dictionaries sorted
    for (const auto& a : n.attribute()) attrs["torch.onnx." + a.name()] = attribute_value(a);
    os << "    " << lhs << "torch.operator \"onnx." << n.op_type() << "\"(";
    for (size_t i = 0; i < operands.size(); ++i) os << (i ? ", " : "") << operands[i];
    os << ")";
    if (!attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, v] : attrs) {
        os << (first ? "" : ", ") << k << " = " << v;
        first = false;
      }
      os << "}";
    }
    os << " : (";
    for (size_t i = 0; i < operand_types.size(); ++i) os << (i ? ", " : "") << operand_types[i];
    os << ") -> ";
    if (n.output_size() == 1) {
      os << type_of(n.output(0));
    } else {
      os << "(";
      for (int k = 0; k < n.output_size(); ++k) os << (k ? ", " : "") << type_of(n.output(k));
      os << ")";
    }
    os << "\n";
  }

  os << "    return";
  for (int i = 0; i < g.output_size(); ++i) {
    auto it = ssa.find(g.output(i).name());
    if (it == ssa.end())
      throw PipelineError("graph output '" + g.output(i).name() + "' is not defined by any input, initializer or node");
    os << (i ? ", " : " ") << it->second;
  }
  if (g.output_size() > 0) {
    os << " : ";
    for (size_t i = 0; i < result_types.size(); ++i) os << (i ? ", " : "") << result_types[i];
  }
  os << "\n  }\n}\n";
  return os.str();
}

MlirMapping map_mlir_locations(const std::string& mlir_text, const std::vector<std::string>& op_types) {
  struct Op {
    std::string type;
    size_t line, col;
  };
  std::vector<Op> ops;
  size_t line_no = 0, start = 0;
  while (start <= mlir_text.size()) {
    size_t end = mlir_text.find('\n', start);
    if (end == std::string::npos) end = mlir_text.size();
    ++line_no;
    auto [type, col] = find_onnx_operator(mlir_text.substr(start, end - start));
    if (!type.empty() && type != "Constant") ops.push_back({type, line_no, col});
    start = end + 1;
  }

  MlirMapping m;
  m.locations.assign(op_types.size(), "");
  if (ops.size() != op_types.size())
    m.problems.push_back("COUNT MISMATCH: model has " + std::to_string(op_types.size()) +
                         " non-Constant nodes, MLIR has " + std::to_string(ops.size()) + " onnx operators");
  std::vector<std::string> mismatches;
  const size_t n = std::min(ops.size(), op_types.size());
  for (size_t i = 0; i < n; ++i) {
    if (ops[i].type == op_types[i]) {
      m.locations[i] = std::to_string(ops[i].line) + ":" + std::to_string(ops[i].col);
    } else {
      mismatches.push_back("node " + std::to_string(i) + " is " + op_types[i] + " but MLIR line " +
                           std::to_string(ops[i].line) + " is onnx." + ops[i].type);
    }
  }
  if (!mismatches.empty()) {
    std::string p = "OP TYPE MISMATCHES: ";
    for (size_t i = 0; i < mismatches.size() && i < 5; ++i) p += (i ? "; " : "") + mismatches[i];
    if (mismatches.size() > 5) p += "; ... and " + std::to_string(mismatches.size() - 5) + " more";
    m.problems.push_back(p);
  }
  return m;
}

MlirMapping map_layer_locations(const std::string& mlir_text, const onnx::ModelProto& model) {
  MlirMapping m = map_mlir_locations(mlir_text, non_constant_op_types(model));
  std::vector<std::string> by_layer;
  for (const LayerNodes& l : layer_nodes(model.graph()))
    by_layer.push_back(static_cast<size_t>(l.operator_index) < m.locations.size()
                           ? m.locations[static_cast<size_t>(l.operator_index)] : "");
  m.locations = std::move(by_layer);
  return m;
}

std::vector<std::string> set_layer_locations(const std::string& mlir_text, const onnx::ModelProto& model,
                                             std::vector<LayerReport>& layers) {
  MlirMapping mm = map_layer_locations(mlir_text, model);
  for (size_t i = 0; i < layers.size() && i < mm.locations.size(); ++i)
    layers[i].info.mlir_location = std::move(mm.locations[i]);
  return std::move(mm.problems);
}

}  // namespace torq::pipeline
