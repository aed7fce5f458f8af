// Where `torq-gen-config run` (and a matrix run-mode test with a `config`)
// takes its assignment from: the report JSON (source of truth; the compiler
// JSON is regenerated from it) or, alone, the compiler JSON (used as it is).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "pipeline/report/full_model.h"
#include "pipeline/core/types.h"

namespace torq::coordinator {

// What `run` executes: one executor (or none: the compiler decides) per layer
// of the range, whether each passed alone, and the comparison rule.
struct AssignmentFile {
  std::vector<std::optional<pipeline::Executor>> assignment;
  std::vector<uint8_t> passed_alone;
  pipeline::FullModelRule rule;
  std::string source;                  // the file the assignment came from
  bool from_report = false;
  nlohmann::ordered_json report;                         // the report JSON as read (from_report)
};

// From report `rpath` by layer id (layers it lacks: the compiler decides);
// writes the compiler JSON regenerated from it to `cpath` (empty: not
// written). PipelineError when the file is malformed or names none of the
// layers.
AssignmentFile assignment_from_report(const std::string& rpath, const std::string& cpath,
                                      const std::vector<pipeline::LayerInfo>& layers);

// From compiler JSON `cpath` by "line:col" of the model's torch-mlir import
// (`mlir_path` when it exists, else emitted from `proto`); never rewritten.
// Strict, as the compiler's pass would read it: `model_name` must be
// `model_name` (or the model it was quantized or cut from: "m" for
// "m_quant" or "m_subgraph_1_3", as the real tool writes it); every op_assignments key a "<line>:<col>" (positive
// integers) of one of `layers` in the import; every value
// {"executor": "nss" | "css" | "host" | null} (the string "null", as the
// seed's `edit --executor null` wrote, is null: the compiler decides); no
// key twice. Anything else is a PipelineError naming the file, the key and
// what was expected.
AssignmentFile assignment_from_compiler(const std::string& cpath, const std::string& mlir_path,
                                        const onnx::ModelProto& proto, const std::string& model_name,
                                        const std::vector<pipeline::LayerInfo>& layers);

// A report or a compiler JSON, told apart by content (`ops` / `op_assignments`);
// `model_name` is the model's (checked against a compiler JSON's).
AssignmentFile assignment_from_file(const std::string& path, const onnx::ModelProto& proto,
                                    const std::string& model_name, const std::vector<pipeline::LayerInfo>& layers);

}  // namespace torq::coordinator
