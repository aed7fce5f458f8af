// `run --debug-ir DIR`: what the seed's debug IR dump is used for, checking
// assignments. Writes <DIR>/<name>.torch.mlir, the torch-mlir-style import
// with each operator annotated {torq-executor = "<executor>"} (the attribute
// the compiler's ExecutorAssignmentPass sets), and <DIR>/<name>.executors.txt,
// one row per op: index, layer id, op, executor, output shape, simulated ms.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "pipeline/core/types.h"

namespace torq::coordinator {

// `model` is the model (or standalone subgraph) whose non-Constant nodes are
// `layers`; placed/layer_ms come from the assigned run (may be shorter when
// it stopped early: the rest are "-"). Returns the two paths written;
// throws PipelineError when DIR cannot be written.
std::vector<std::string> write_debug_ir(const std::string& dir, const std::string& name,
                                        const onnx::ModelProto& model, const std::vector<pipeline::LayerInfo>& layers,
                                        const std::vector<pipeline::Executor>& placed,
                                        const std::vector<double>& layer_ms);

// Adds {torq-executor = "<executor>"} to the line of the i-th non-Constant
// top-level `torch.operator` of `mlir` for each i < executors.size()
// (entries "" are left alone).
std::string annotate_executors(const std::string& mlir, const std::vector<std::string>& executors);

}  // namespace torq::coordinator
