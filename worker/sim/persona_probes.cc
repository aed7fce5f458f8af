#include "worker/sim/persona_probes.h"

#include <algorithm>
#include <cstdio>

namespace torq::sim {

namespace {

bool has_arg(const std::vector<std::string>& args, const std::string& a) {
  return std::find(args.begin(), args.end(), a) != args.end();
}

}  // namespace

// torq-compile is ireeCompilerRunMain: LLVM's option parser prints IREE's
// version (or its option list) as soon as it meets --version (--help) and
// exits 0, whatever else the command line holds.
std::optional<int> compile_probe(const std::vector<std::string>& args) {
  if (has_arg(args, "--version")) {
    std::printf("IREE (https://iree.dev):\n  IREE compiler version torq-farm-standin @ torq-sim\n"
                "  LLVM version none (the stand-in: torq-farm's engine under its executor profiles)\n"
                "  Optimized build\n");
    return 0;
  }
  if (!has_arg(args, "--help")) return std::nullopt;
  std::printf(
      "OVERVIEW: torq-compile (the torq-farm stand-in): compiles what torq-import-onnx wrote\n\n"
      "USAGE: torq-compile [options] <input file>\n\nOPTIONS:\n"
      "  -o <filename>                       Output module\n"
      "  --torq-hw=<SL2610|spec>             Hardware (SL2610, or id:lram:slices:css:nss[:...])\n"
      "  --torq-disable-slices               Do not place ops on the NPU slices (nss)\n"
      "  --torq-disable-css                  Do not place ops on the CPU subsystem (css)\n"
      "  --torq-disable-host                 Do not place ops on the host\n"
      "  --torq-executor-map=<file>          Executor per op (a compiler JSON)\n"
      "  --torq-enable-profiling             Profile the compiled module\n"
      "  --torq-dump-profiling=<file>        Where the profile goes (CSV)\n"
      "  --mlir-print-ir-after-all           Print the IR after each pass\n"
      "  --mlir-print-ir-tree-dir=<dir>      ... into this directory tree\n"
      "  --version                           Display the version of this program\n");
  return 0;
}

// torq-run-module parses IREE's runtime flags in order: --help prints the
// usage and exits 0; it has no --version ("flag not recognized", exit 1).
std::optional<int> run_probe(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help") {
      std::printf(
          "# ============================================================================\n"
          "# IREE: torq-run-module (the torq-farm stand-in)\n"
          "# ============================================================================\n\n"
          "Runs a function within a compiled module (--module=file.vmfb, --function=foo)\n"
          "on raw inputs (--input=SHAPExDTYPE=@file.bin), writing raw outputs\n"
          "(--output=@file.bin) or checking them (--expected_output=TYPE=@file.bin).\n\n"
          "--module= --function= --torq_hw_type=sim|astra_machina|aws_fpga|soc_fpga --input= --output=\n"
          "--expected_output= --torq_profile_host= --device= --help\n");
      return 0;
    }
    if (a == "--version" || a.rfind("--version=", 0) == 0) {
      std::fprintf(stderr, "FLAGS ERROR\nINVALID_ARGUMENT; flag 'version' not recognized\n");
      return 1;
    }
  }
  return std::nullopt;
}

// python -m iree.compiler.tools.import_onnx is argparse: -h/--help prints
// the usage and exits 0.
std::optional<int> import_probe(const std::vector<std::string>& args) {
  if (!has_arg(args, "--help") && !has_arg(args, "-h")) return std::nullopt;
  std::printf("usage: torq-import-onnx [-h] -o OUTPUT [--data-prop] input_file\n\n"
              "ONNX to torch-mlir, as iree.compiler.tools.import_onnx (the torq-farm stand-in)\n");
  return 0;
}

}  // namespace torq::sim
