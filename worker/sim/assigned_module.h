// The stand-in's model of a whole-model compile with an executor map, the
// way the real torq-compile --torq-executor-map=FILE does it (issue 28):
// the map's "line:col" keys are matched against the operators of the MLIR
// the compile was given (a key on no operator assigns nothing, silently, as
// in the real ExecutorAssignmentPass; an unknown executor name is dropped),
// assigned operators run on their executor, and the compiler places the
// others (here: the first executor in priority order whose profile runs
// the node). The module then runs node by node, each under its executor's
// profile, values narrowed back to the model's float type between nodes as
// the compiler does at an executor transition.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "pipeline/core/types.h"
#include "worker/engine/session.h"
#include "worker/engine/tensor.h"

namespace torq::sim {

// The executor each non-Constant top-level node of the import is assigned
// by the executor map `map_json` (the real pass's two formats:
// {"op_assignments": {"L:C": {"executor": "nss"}}} and {"ops": {ID:
// {"recommended_executor": E, "mlir_location": "L:C"}}}, "ops" winning on
// a duplicate key), matched against `mlir_text`'s top-level operators;
// nullopt where the compiler decides. Throws std::runtime_error for a map
// that is not JSON, not an object, or has neither key (the real pass fails).
std::vector<std::optional<pipeline::Executor>> apply_executor_map(const std::string& map_json,
                                                                  const std::string& mlir_text, size_t operators);

struct AssignedRun {
  std::vector<engine::Tensor> outputs;      // the graph outputs
  std::vector<pipeline::Executor> placed;   // per non-Constant node
  std::vector<engine::RunStats> stats;      // per non-Constant node
  double sim_ms = 0;
};

// Runs `model` node by node on `feeds` (the graph inputs, in order), node k
// (k-th non-Constant node) on assignment[k], or where the compiler decides
// on the first executor in priority order whose profile accepts it. Throws
// engine::EngineError as the node's executor throws it, its message
// prefixed with the node.
AssignedRun run_assigned_module(const onnx::ModelProto& model,
                                const std::vector<std::optional<pipeline::Executor>>& assignment,
                                engine::Rounding rounding, const std::vector<engine::Tensor>& feeds);

}  // namespace torq::sim
