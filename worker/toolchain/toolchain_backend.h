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
// (the first useful lines of its stderr). A step that exits 0 without the
// file its argv names ({mlir} for the import, {vmfb} for the compile), or
// with it empty, failed ("torq-compile exited 0 but wrote no module at P":
// `compile`). Each output file must be exactly its declared shape and dtype
// in size (a bf16 MatMul/Gemm output on nss may also be f32's: nss widens
// it); any other size is the run's error (`runtime`) with both sizes. A
// scratch folder that is gone after a step (or another folder at its path:
// a /tmp cleaner) is `infrastructure`, whatever the step said: requeued,
// never the op's result. runtime_ms is the measured wall time of the run
// step (mean over the timing runs).
//
// Board mode (torq-worker --board [USER@]HOST[:PORT], issue 10): import and
// compile run here as above; the run step runs on the board over ssh
// (worker/board/ssh_board.h): under the board lock, the module and the raw
// inputs are staged to /tmp/<stem>/ (<stem>: torq-board-XXXXXX, per job),
// the run argv runs there with {vmfb}, {in_i}, {out_i} and {workdir}
// expanded to the remote paths, the outputs are pulled back into the scratch
// folder, the remote folder is removed and the lock released. runtime_ms is
// the board's wall time (`time { ...; }`). One SshBoard (one ControlMaster
// connection) serves every job of the process; a job that finds it gone
// reconnects. Any InfraError (unreachable, auth, ssh, runner_missing,
// lock_timeout, staging) is the error class `infrastructure` with the
// InfraError's message, never the op's error; a runner that fails on the
// board is `runtime` (non-zero exit), `crash` (exit 128+signal) or `timeout`.
// With compile_lanes, a job imports and compiles holding one of the worker's
// compile slots (board::CompileSlot) and gives it back before the board; a
// job that finds every slot kept past its wait is declined (requeued).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "worker/board/ssh_board.h"
#include "worker/runner/backend.h"
#include "worker/toolchain/toolchain_config.h"

namespace torq::toolchain {

// Where the run step runs in board mode.
struct BoardSettings {
  board::BoardAddress address;       // parse_board() plus the key file
  std::string control_dir;           // ControlPath socket and known_hosts (short)
  std::string owner;                 // who holds the lock, e.g. "torq-worker w1 pid N on host"
  std::chrono::milliseconds lock_timeout{std::chrono::minutes(10)};
  std::string remote_base = "/tmp";  // staging folders are <remote_base>/<stem>
  // > 0: at most this many of the worker's job processes import and compile
  // at once (board::CompileSlot); the slot is given back before the board.
  int compile_lanes = 0;
  board::BoardOptions options;
};

// The control directory for a board of a worker whose model cache is
// cache_dir: <cache_dir>/ssh-<host>-<port> when short enough for a unix
// socket path, else /tmp/torq-ssh-<uid>/<host>-<port>.
std::string board_control_dir(const std::string& cache_dir, const board::BoardAddress& a);

class ToolchainBackend : public runner::Backend {
 public:
  explicit ToolchainBackend(ToolchainConfig config, std::optional<BoardSettings> board = std::nullopt);
  ~ToolchainBackend() override;
  std::string identity() const override;
  runner::BackendResult run(const runner::BackendRequest& req) override;
  // Assigned runs compile the whole sub-model once with
  // --torq-executor-map=<a compiler JSON keyed on the import the tool
  // made>, as the real tool's `run` does.
  bool compiles_assigned() const override { return true; }

 private:
  struct Job;
  // Runs one step; false with r's error set when it failed. `writes`: the
  // placeholder ("mlir", "vmfb") of the file an exit 0 must leave non-empty.
  bool step(const Job& job, const Step& s, const std::string& which, runner::BackendResult* r, double* wall_ms,
            const std::string& writes = "");
  // Reads the raw outputs, each of exactly its type's size; false with r's
  // error set otherwise.
  bool read_outputs(const Job& job, runner::BackendResult* r);
  // An assigned run: writes the compiler JSON (op_assignments keyed on the
  // import's line:col) into the job folder; its path, or "" with *why_not.
  std::string write_executor_map(const Job& job, std::string* why_not) const;
  // Board mode: the timing runs on the board; false with r's error set.
  bool run_on_board(const Job& job, const Step& run_step, bool profile, uint32_t runs, runner::BackendResult* r,
                    double* total_ms);
  ToolchainConfig cfg_;
  std::optional<BoardSettings> board_settings_;
  std::unique_ptr<board::SshBoard> board_;
};

}  // namespace torq::toolchain
