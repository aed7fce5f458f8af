// MLIR locations (DESIGN.md §5): the compiler's ExecutorAssignmentPass keys
// executor assignments by the `line:col` of each op in the torch-mlir ONNX
// import. The i-th non-Constant ONNX node maps to the i-th
// `torch.operator "onnx.<Op>"` line (Constant ops skipped), line 1-based,
// column = 1-based position of `torch.operator` on that line.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "pipeline/types.h"

namespace torq::pipeline {

// Emits `model` in the textual form of the torch-mlir ONNX importer
// (iree-import-onnx): `module { func.func @main_graph(%arg0:
// !torch.vtensor<[1,3,224,224],f32>, ...) -> ... attributes
// {torch.onnx_meta.ir_version = ..., torch.onnx_meta.opset_version = ...} {`,
// initializers as `torch.vtensor.literal(dense_resource<__elided__> : ...)`
// lines, one `%N = torch.operator "onnx.<OpType>"(...) {torch.onnx.<attr> =
// ...} : (...) -> ...` line per non-Constant node in graph order, ONNX
// Constant nodes as `torch.vtensor.literal` lines (so they are not counted),
// `%none = torch.constant.none` for omitted optional inputs, and `return`.
// Types come from the graph and from ONNX shape inference (with data
// propagation) run on a copy; unknown dims print as `?`, unknown ranks as
// `*`. Weights are elided and subgraph attributes (If/Loop bodies) are
// summarised as strings: the text is for locations, not for compiling.
// Throws PipelineError when a node reads a value nothing defines.
std::string emit_torch_mlir(const onnx::ModelProto& model);

// The op types of the non-Constant nodes of `model`'s graph, in order.
std::vector<std::string> non_constant_op_types(const onnx::ModelProto& model);

struct MlirMapping {
  // One entry per non-Constant node: "line:col", or "" when the MLIR has no
  // op of the same type at that position.
  std::vector<std::string> locations;
  // Human-readable verification problems, empty when the MLIR matches:
  //   "COUNT MISMATCH: model has N non-Constant nodes, MLIR has M onnx operators"
  //   "OP TYPE MISMATCHES: node 3 is Relu but MLIR line 17 is onnx.Clip; ..."
  // (node = position among non-Constant nodes, i.e. _node_index; at most
  // five listed, then "; ... and N more").
  std::vector<std::string> problems;
};

// Maps the non-Constant nodes (`op_types`, in graph order) to the
// `torch.operator "onnx.<Op>"` lines of `mlir_text` (a user's real import or
// emit_torch_mlir output) by position, skipping `onnx.Constant` ops. A
// position whose op type differs is reported and left without a location;
// matching positions still get theirs.
MlirMapping map_mlir_locations(const std::string& mlir_text, const std::vector<std::string>& op_types);

// The same for the layers of `model` (layer_nodes.h): one location per
// layer, its compute node's. In a QDQ model the Q/DQ operators are mapped
// (and verified) too but name no layer, as the seed tool's `_quant` reports.
MlirMapping map_layer_locations(const std::string& mlir_text, const onnx::ModelProto& model);

// map_layer_locations() written into each report layer's info.mlir_location
// (layers beyond the mapping keep theirs); returns the mapping's problems.
std::vector<std::string> set_layer_locations(const std::string& mlir_text, const onnx::ModelProto& model,
                                             std::vector<LayerReport>& layers);

}  // namespace torq::pipeline
