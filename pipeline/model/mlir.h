// MLIR locations (DESIGN.md §5): the compiler's ExecutorAssignmentPass keys
// executor assignments by the `line:col` of each op in the torch-mlir ONNX
// import. The i-th non-Constant ONNX node maps to the i-th
// `torch.operator "onnx.<Op>"` line (Constant ops skipped), line 1-based,
// column = 1-based position of `torch.operator` on that line.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace torq::pipeline {

// Emits `model` as the torch-mlir ONNX importer (iree-import-onnx, the
// importer the real torq-gen-config runs) writes it, line for line where a
// line decides a location or a name: `module {`, then `func.func @<graph
// name>(%arg0: !torch.vtensor<[1,3,224,224],f32>, ...) -> ... attributes
// {torch.onnx_meta...} {` (the graph's own name, quoted when it is not an
// MLIR identifier), then one `%N = torch.operator "onnx.Constant"() ...`
// line per initializer, `%none = torch.constant.none` (always), one line per
// node (Constant nodes included, as `onnx.Constant` operators), If/Loop/Scan
// bodies as real regions (sorted by attribute name, block arguments on a
// `^bb0(...)` line, `torch.operator_terminator`), and `return`. Values are
// numbered as MLIR's printer numbers them (a region's nested regions start
// after the region's own values). Types come from the graph and from ONNX
// shape inference (with data propagation) run on a copy. Raw initializer
// data is named as a dense_resource, not written out: the text is for
// locations and names, not for compiling.
// Throws PipelineError when a node reads a value nothing defines.
std::string emit_torch_mlir(const onnx::ModelProto& model);

// The name of the function the importer defines for `model` (the graph's
// name), as `torq-run-module --function=` takes it.
std::string mlir_function_name(const onnx::ModelProto& model);

// The name of the first function of an import's text, `func.func @name(` or
// `func.func @"name"(` (escapes \XX undone), as the real tool reads it for
// `--function`; "" when the text has none.
std::string mlir_text_function_name(const std::string& mlir_text);

// One `torch.operator "onnx.<Op>"` line of an import: op type, 1-based line
// and 1-based column of `torch.operator`, region depth.
struct MlirOperator {
  std::string type;
  size_t line, col;
  int depth;
};

// The operators of `mlir_text` in order; with `top_level_only`, those of the
// first function's body only (not in nested regions nor in the private
// functions an importer may append).
std::vector<MlirOperator> mlir_operators(const std::string& mlir_text, bool top_level_only);

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

// Maps the non-Constant nodes (`op_types`, in graph order) to the top-level
// `torch.operator "onnx.<Op>"` lines of `mlir_text`'s first function (a
// user's real import or emit_torch_mlir output) by position, skipping
// `onnx.Constant` ops and operators nested in If/Loop regions. A
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
