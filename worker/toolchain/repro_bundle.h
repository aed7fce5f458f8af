// Repro bundles (issue 28): one (layer, executor) result as a folder a
// compiler engineer attaches to a bug and runs anywhere:
//   model.onnx                the layer's sub-model (its graph inputs are
//                             the layer's inputs, constants baked in)
//   model.mlir                its import, as iree-import-onnx writes it
//   input_<i>.bin             the layer's inputs, raw (IREE's layout)
//   expected_<i>.bin          the fp32 host reference of its outputs
//   run_module_io_flags.txt   --input=<type>=@input_i.bin and
//                             --expected_output=<type>=@expected_i.bin
//   run.sh                    the exact import / compile / run argv of the
//                             toolchain (tools overridable by environment
//                             variables), then compare.py with the report's
//                             tolerance: exit 0 when the executor matches
//                             the reference, 1 when it differs or a step
//                             fails (the status and the tool's message
//                             printed), 2 when the bundle itself is broken
//   compare.py                the comparison of DESIGN §4, plain Python 3
//   README.md                 what failed and how, tolerance, toolchain
//                             identity, the command that made the bundle
#pragma once

#include <string>
#include <vector>

#include "pipeline/core/types.h"
#include "worker/runner/job_runner.h"
#include "worker/toolchain/toolchain_config.h"

namespace torq::toolchain {

struct ReproSpec {
  std::string dir;                  // the bundle's folder (created; must be empty or absent)
  std::string model_name, layer_id;
  int layer_index = 0;
  pipeline::Executor executor = pipeline::Executor::kNss;
  pipeline::Tolerance tolerance;    // the report's tolerance_used (else the default)
  bool bf16_rne = false;
  std::string variant;              // e.g. "fp32", "bf16 (truncate)", "int8 (QDQ)"
  // What the report recorded for this (layer, executor); empty: untested.
  std::string status, failure_type, failure_summary, toolchain_identity;
  double max_abs = -1, max_rel = -1;
  std::string command;              // the command that made the bundle
  // The steps run.sh runs: this toolchain's argv (a sim result: the
  // stand-in's, which gives the sim backend's results).
  ToolchainConfig toolchain;
  std::string backend;              // "sim" or "toolchain"
};

// Writes the bundle; returns its files. Throws std::runtime_error when the
// folder cannot be written or holds files already.
std::vector<std::string> write_repro_bundle(const ReproSpec& spec, const runner::JobRunner::LayerCase& layer);

}  // namespace torq::toolchain
