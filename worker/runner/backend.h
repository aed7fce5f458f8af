// The executor backend interface (DESIGN §3, §7): what the job runner asks
// of "the thing that runs a sub-model on an executor". The job runner
// materialises the sub-model and its feeds and computes the fp32 host
// reference itself; a Backend only runs the sub-model on one executor and
// returns its outputs, its time and its identity, or a classified error.
//
// Backends live in rooms of their own (worker/sim: the engine under an
// executor profile; worker/toolchain: the real Torq tools, or the stand-in)
// and the job runner knows none of their details.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pipeline/core/types.h"
#include "worker/engine/tensor.h"

namespace onnx {
class ModelProto;
}

namespace torq::runner {

// One sub-model run on one executor.
struct BackendRequest {
  // The sub-model: its graph inputs are exactly `feeds`, in order (constants
  // baked in as initializers); its graph outputs are what the caller compares.
  const onnx::ModelProto* model = nullptr;
  const std::vector<engine::Tensor>* feeds = nullptr;
  pipeline::Executor executor = pipeline::Executor::kHost;
  // The job's target for this executor: "sim", a board class, or a sim
  // profile file (contains '/'). Backends that do not use it ignore it.
  std::string target = "sim";
  bool bf16_rne = false;          // fp32 -> bf16 rounding: RNE, else truncation
  uint32_t runs = 1;              // timing runs (>= 1); runtime_ms is their mean
  uint32_t timeout_ms = 60000;    // the whole job's budget (a backend may split it)
  std::string label;              // for diagnostics and scratch names (job id; untrusted text)
  bool collect_profile = false;   // also return the profiling CSVs (DESIGN §5)
  // An assigned run of the whole sub-model, compiled once (a backend whose
  // compiles_assigned() is true; `executor` is then unused): the executor
  // of each layer keyed by the first output of its compute node; a layer
  // absent is left to the compiler.
  bool assigned_run = false;
  std::map<std::string, pipeline::Executor> assignment;
};

struct BackendResult {
  // The executor took the sub-model: it compiled (sim: the profile accepts
  // it). False with ok == false: rejected at compile. The "compiler decides"
  // placement of an assigned run takes the first executor that accepts.
  bool accepted = false;
  bool ok = false;                      // ran and produced every output
  std::vector<engine::Tensor> outputs;  // graph outputs of the sub-model, in order
  double runtime_ms = -1;               // executor time, mean over `runs` (sim: simulated; toolchain: measured)
  uint32_t runs = 0;
  std::string chip;                     // the chip the executor models or runs on, if known
  // When !ok: a class (unsupported, import, compile, runtime, crash,
  // timeout, target) and a human message (the tool's own diagnostic).
  std::string error_class, error_message;
  // With collect_profile: the compile-time trace CSV and the runtime host
  // profile CSV of this run (sim: from the cost model; toolchain: the tools').
  std::string device_csv, host_csv;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The identity results carry in `toolchain` (engine or tool versions).
  virtual std::string identity() const = 0;
  // Runs the request. Never throws: every failure is a classified result.
  virtual BackendResult run(const BackendRequest& req) = 0;
  // True when an assigned run (run, bisect ranges) is one compile of the
  // whole sub-model with the assignment given to the compiler, as the real
  // tool runs it; false: the runner runs layer by layer and chains.
  virtual bool compiles_assigned() const { return false; }
};

}  // namespace torq::runner
