#include "coordinator/gen_config/debug_ir.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "pipeline/model/layer_nodes.h"
#include "pipeline/model/mlir.h"
#include "pipeline/report/atomic_file.h"

namespace torq::coordinator {

using namespace pipeline;
namespace fs = std::filesystem;

namespace {

// The attribute inserted into one `%N = torch.operator "onnx.X"(...) ...` line.
std::string annotate_line(const std::string& line, const std::string& executor) {
  const std::string attr = "torq-executor = \"" + executor + "\"";
  size_t open = line.find("torch.operator \"");
  if (open == std::string::npos) return line;
  open = line.find('(', open);
  const size_t close = open == std::string::npos ? std::string::npos : line.find(')', open);
  if (close == std::string::npos) return line;
  if (line.compare(close + 1, 2, " {") == 0) return line.substr(0, close + 3) + attr + ", " + line.substr(close + 3);
  return line.substr(0, close + 1) + " {" + attr + "}" + line.substr(close + 1);
}

std::string shape_of(const onnx::ModelProto& model, const std::string& value) {
  for (const auto* list : {&model.graph().value_info(), &model.graph().output()})
    for (const auto& v : *list)
      if (v.name() == value && v.type().has_tensor_type()) {
        std::string s = "[";
        for (const auto& d : v.type().tensor_type().shape().dim())
          s += (s.size() > 1 ? "," : "") + (d.has_dim_value() ? std::to_string(d.dim_value()) : std::string("?"));
        return s + "]";
      }
  return "?";
}

}  // namespace

std::string annotate_executors(const std::string& mlir, const std::vector<std::string>& executors) {
  // The i-th non-Constant operator of the function's body (not an
  // initializer or Constant node, not an op nested in an If/Loop region).
  std::map<size_t, std::string> by_line;
  size_t op = 0;
  for (const auto& o : mlir_operators(mlir, true)) {
    if (o.type == "Constant") continue;
    if (op < executors.size() && !executors[op].empty()) by_line[o.line] = executors[op];
    ++op;
  }
  std::istringstream in(mlir);
  std::string line, out;
  for (size_t no = 1; std::getline(in, line); ++no) {
    auto it = by_line.find(no);
    out += (it == by_line.end() ? line : annotate_line(line, it->second)) + "\n";
  }
  return out;
}

std::vector<std::string> write_debug_ir(const std::string& dir, const std::string& name, const onnx::ModelProto& model,
                                        const std::vector<LayerInfo>& layers, const std::vector<Executor>& placed,
                                        const std::vector<double>& layer_ms) {
  try {
    prepare_output_dir(dir);
  } catch (const PipelineError& e) {
    throw PipelineError(std::string("--debug-ir: ") + e.what());
  }
  // One executor per MLIR operator: a QDQ layer's Q/DQ run with its compute op.
  const std::vector<LayerNodes> groups = layer_nodes(model.graph());
  std::vector<int> operator_of(static_cast<size_t>(model.graph().node_size()), -1);
  for (int i = 0, k = 0; i < model.graph().node_size(); ++i)
    if (model.graph().node(i).op_type() != "Constant") operator_of[static_cast<size_t>(i)] = k++;
  std::vector<std::string> names(static_cast<size_t>(model.graph().node_size()));
  for (size_t i = groups.size(); i-- > 0;)
    for (int p : groups[i].nodes)
      if (i < placed.size() && operator_of[static_cast<size_t>(p)] >= 0)
        names[static_cast<size_t>(operator_of[static_cast<size_t>(p)])] = executor_name(placed[i]);
  const std::string mlir_path = dir + "/" + name + ".torch.mlir";
  const std::string table_path = dir + "/" + name + ".executors.txt";
  write_file_atomic(mlir_path, annotate_executors(emit_torch_mlir(model), names));
  std::string t;
  char row[512];
  std::snprintf(row, sizeof row, "%-5s %-60s %-20s %-8s %-22s %12s\n", "index", "layer", "op", "executor",
                "output shape", "sim_ms");
  t += row;
  for (size_t i = 0; i < layers.size(); ++i) {
    const onnx::NodeProto* n = i < groups.size() ? &model.graph().node(groups[i].compute) : nullptr;
    const std::string shape = n && n->output_size() ? shape_of(model, n->output(0)) : "?";
    const std::string ms = i < layer_ms.size() ? std::to_string(layer_ms[i]) : "-";
    std::snprintf(row, sizeof row, "%-5zu %-60s %-20s %-8s %-22s %12s\n", i, layers[i].id.c_str(),
                  layers[i].op_type.c_str(), i < placed.size() ? executor_name(placed[i]) : "-", shape.c_str(),
                  ms.c_str());
    t += row;
  }
  write_file_atomic(table_path, t);
  return {mlir_path, table_path};
}

}  // namespace torq::coordinator
