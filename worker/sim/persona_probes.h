// What torq-sim's stand-in personas (worker/sim/personas.h) answer to the
// probe torq-worker --check-backend runs (worker/toolchain/toolchain_probe.h),
// exactly as the real tool answers it: the same exit code, the answer on the
// same stream. Each returns the exit code when args hold a probe flag the
// persona answers instead of running, else nullopt (run as usual).
//
//  torq-compile: --version (IREE's version text) or --help (the options),
//    exit 0, anywhere on the command line (LLVM's parser exits on meeting it).
//  torq-run-module: --help, exit 0; --version is not one of IREE's runtime
//    flags: "flag 'version' not recognized" on stderr, exit 1 (flags in order).
//  torq-import-onnx: -h/--help (argparse's usage), exit 0.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace torq::sim {

std::optional<int> compile_probe(const std::vector<std::string>& args);
std::optional<int> run_probe(const std::vector<std::string>& args);
std::optional<int> import_probe(const std::vector<std::string>& args);

}  // namespace torq::sim
