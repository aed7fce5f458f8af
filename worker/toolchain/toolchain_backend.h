// The toolchain backend: runs a sub-model with the Torq tools (or the
// stand-in personas of torq-sim) as child processes, per the toolchain file:
// import (ONNX -> MLIR), compile for the executor (its --torq-disable-*
// flags), run the module on raw .bin inputs, read the raw outputs back.
// Each job gets a scratch folder (removed afterwards unless keep_work_dir).
//
// Errors are classified by the step that failed: import -> `import`,
// compile -> `compile` (both: not accepted), run -> `runtime` (non-zero
// exit), `crash` (killed by a signal) or `timeout` (past the step's timeout;
// its process group is killed). The message keeps the tool's own diagnostic
// (the first useful lines of its stderr). runtime_ms is the measured wall
// time of the run step (mean over the timing runs).
#pragma once

#include <string>

#include "worker/runner/backend.h"
#include "worker/toolchain/toolchain_config.h"

namespace torq::toolchain {

class ToolchainBackend : public runner::Backend {
 public:
  explicit ToolchainBackend(ToolchainConfig config);
  std::string identity() const override;
  runner::BackendResult run(const runner::BackendRequest& req) override;

 private:
  struct Job;
  // Runs one step; false with r's error set when it failed.
  bool step(const Job& job, const Step& s, const std::string& which, runner::BackendResult* r, double* wall_ms);
  bool read_outputs(const Job& job, runner::BackendResult* r);
  ToolchainConfig cfg_;
};

}  // namespace torq::toolchain
