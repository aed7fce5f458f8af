// torch-mlir ONNX-import text emission and the ONNX node -> line:col mapping.
#include "pipeline/model/mlir.h"

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

#include "pipeline/model/layer_nodes.h"
#include "pipeline/core/types.h"

namespace torq::pipeline {
namespace {

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

}  // namespace

std::vector<std::string> non_constant_op_types(const onnx::ModelProto& model) {
  std::vector<std::string> out;
  for (const auto& n : model.graph().node())
    if (!is_constant_node(n)) out.push_back(n.op_type());
  return out;
}

std::vector<MlirOperator> mlir_operators(const std::string& mlir_text, bool top_level_only) {
  std::vector<MlirOperator> ops;
  // Depth of the region a line is in (the module's body is 1, so the first
  // function's body is usually 2). A line ending in '{' opens a region (a function's body or an
  // operator's first region), one starting with '}' closes one ("}, {"
  // closes one and opens the next at the same depth).
  int depth = 0, functions = 0, body_depth = -1;
  size_t line_no = 0, start = 0;
  while (start <= mlir_text.size()) {
    size_t end = mlir_text.find('\n', start);
    if (end == std::string::npos) end = mlir_text.size();
    ++line_no;
    const std::string line = mlir_text.substr(start, end - start);
    size_t first = line.find_first_not_of(" \t");
    size_t last = line.find_last_not_of(" \t\r");
    const bool closes = first != std::string::npos && line[first] == '}';
    const bool opens = last != std::string::npos && line[last] == '{' && line.compare(first, 3, "{-#") != 0;
    if (closes) --depth;
    if (line.find("func.func ") != std::string::npos && opens && ++functions == 1) body_depth = depth + 1;
    auto [type, col] = find_onnx_operator(line);
    // A text without a function (a hand-written fragment): its operators'
    // own depth is the top level.
    if (!type.empty() && functions == 0 && body_depth < 0) body_depth = depth;
    if (!type.empty() && (!top_level_only || (depth == body_depth && functions <= 1)))
      ops.push_back({type, line_no, col, depth});
    if (opens) ++depth;
    start = end + 1;
  }
  return ops;
}

MlirMapping map_mlir_locations(const std::string& mlir_text, const std::vector<std::string>& op_types) {
  std::vector<MlirOperator> ops;
  for (MlirOperator& op : mlir_operators(mlir_text, true))
    if (op.type != "Constant") ops.push_back(std::move(op));
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

// The name of an import's first function, `func.func @name(` or
// `func.func @"name"(` (escapes \XX undone), as the real tool reads it.
std::string mlir_text_function_name(const std::string& mlir) {
  const size_t f = mlir.find("func.func ");
  if (f == std::string::npos) return "";
  size_t at = mlir.find('@', f);
  if (at == std::string::npos || at > mlir.find('\n', f)) return "";
  std::string name;
  if (at + 1 < mlir.size() && mlir[at + 1] == '"') {
    for (size_t i = at + 2; i < mlir.size() && mlir[i] != '"'; ++i) {
      if (mlir[i] == '\\' && i + 2 < mlir.size()) {
        name += static_cast<char>(std::stoi(mlir.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        name += mlir[i];
      }
    }
    return name;
  }
  for (size_t i = at + 1; i < mlir.size(); ++i) {
    const char c = mlir[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.')) break;
    name += c;
  }
  return name;
}

}  // namespace torq::pipeline
