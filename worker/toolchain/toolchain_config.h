// The toolchain file (torq-worker --backend toolchain --toolchain FILE.yaml):
// how to run the Torq tools, as argv templates (lists of strings, never shell
// strings), validated strictly like the executor profiles (unknown or
// duplicate keys, bad types, unknown placeholders: "file:line:col: ..." with
// a "did you mean").
//
//   name: torq                     # identity in results (default: file stem)
//   chip: SL2610                   # {chip}: torq-compile --torq-hw takes exactly
//                                  # SL2610 or a custom "id:lram:slices:css:nss..." spec
//   hw_type: sim                   # {hw_type}: sim | astra_machina | aws_fpga | soc_fpga
//   function: ...                  # {function}; default: the function the import
//                                  # step wrote (its first func.func), as the real tool
//   tools: {torq_compile: /opt/torq/bin/torq-compile}   # {torq_compile}; a
//                                  # relative path with '/' is relative to this file
//   compiler_options: []           # {compiler_options}
//   executor_flags: {nss: [...], css: [...], host: [...]}  # {executor_flags}
//   work_dir: /tmp                 # per-job scratch folders (default $TMPDIR or /tmp)
//   keep_work_dir: false
//   stand_in_latency:              # the stand-in only (every step runs {torq_sim}):
//     compile_s: 2                 # seconds each compile takes on top of its work,
//     run_s: {nss: 0.05, css: 1}   # and each run on the board: one figure, or per executor
//   import:  {argv: [...], timeout_s: 300}
//   compile: {argv: [...], timeout_s: 300}
//   run:     {argv: [...], timeout_s: 240}   # the real tool's budgets
//
// Every key is optional; the steps default to the real tools' commands:
//   import:  python3 -m iree.compiler.tools.import_onnx {onnx} -o {mlir} --data-prop
//   compile: torq-compile {mlir} -o {vmfb} --torq-hw={chip} {executor_flags} {compiler_options}
//   run:     torq-run-module --module={vmfb} --function={function} --torq_hw_type={hw_type}
//            --input={shape}x{dtype}=@{in_i} --output=@{out_i}
//
// Placeholders: {onnx} {mlir} {vmfb} {workdir} {chip} {hw_type} {function}
// {executor}, {torq_sim} (torq-sim beside the
// worker binary, or $TORQ_SIM_BIN), {worker_dir}, and each `tools` name.
// {executor_flags} and {compiler_options} must be a whole argv item and
// expand to any number of items. An item with {in_i} is repeated once per
// input, one with {out_i} once per output; {shape} and {dtype} (IREE's
// names: f32, bf16, i8...) describe that tensor and appear only in such
// items ("{shape}x" vanishes for a scalar).
//
// Every step runs with TORQ_FARM_BF16_ROUNDING=rne|truncate in its
// environment (the job's fp32 -> bf16 rounding): the real tools ignore it,
// the stand-in compile computes with it, so no argv carries an option the
// real tools do not have. With stand_in_latency, every step also gets
// TORQ_FARM_STANDIN_COMPILE_MS and TORQ_FARM_STANDIN_RUN_MS (the job's
// executor's): the stand-in compile takes that long and writes the run's
// latency into the module, so the run takes it wherever it runs (on a board
// over ssh too). A file whose steps are not the stand-in's cannot have it: a
// real toolchain's steps take their own time (tests/bench/farm_bench.sh
// simulates a board farm with it, issue 32).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace torq::toolchain {

struct Step {
  std::vector<std::string> argv;
  double timeout_s = 300;
};

struct ToolchainConfig {
  std::string path;          // the file it came from (absolute)
  std::string name;
  std::string chip = "SL2610";
  std::string hw_type = "sim";
  std::string function;  // empty: the import's own function
  std::map<std::string, std::string> tools;  // resolved paths (or PATH names)
  std::vector<std::string> compiler_options;
  std::map<pipeline::Executor, std::vector<std::string>> executor_flags;
  std::string work_dir;
  bool keep_work_dir = false;
  Step import_step, compile_step, run_step;
  // stand_in_latency, per executor (an executor not named: none).
  std::map<pipeline::Executor, double> standin_compile_s, standin_run_s;
  // Not a file key: torq-worker --debug-ir-dir DIR. Every compile then
  // dumps its IR after each pass into DIR/<job> (the real tool's
  // --mlir-print-ir-after-all --mlir-print-ir-tree-dir=...
  // --mlir-elide-elementsattrs-if-larger=50).
  std::string debug_ir_dir;

  // Parses and validates; throws engine::EngineError(kInvalidInput) with
  // "file:line:col: message".
  static ToolchainConfig load(const std::string& path);
  static ToolchainConfig parse(const std::string& text, const std::string& path);

  // A job's budget: each step its own (the run once per timing run), the
  // job the sum, as the real tool gives import, compile and run each theirs.
  uint32_t job_budget_ms(uint32_t runs) const;
};

// Values of one step's placeholders.
struct TemplateValues {
  std::map<std::string, std::string> scalars;             // name -> value
  std::map<std::string, std::vector<std::string>> lists;  // executor_flags, compiler_options
  struct Tensor {
    std::string file, shape, dtype;
  };
  std::vector<Tensor> inputs, outputs;
};

// Expands a step's argv. Throws std::invalid_argument for a placeholder
// without a value (load() has rejected unknown ones).
std::vector<std::string> expand_argv(const std::vector<std::string>& argv, const TemplateValues& v);

// Directory of the running executable (for {worker_dir} and {torq_sim}).
std::string self_dir();
// {torq_sim}: $TORQ_SIM_BIN, else torq-sim beside the running executable
// when there is one, else "torq-sim" (looked up on PATH).
std::string torq_sim_path();

}  // namespace torq::toolchain
