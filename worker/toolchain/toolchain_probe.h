// Probing a toolchain file's tools before any job (torq-worker
// --check-backend, which torq-gen-config and a coordinator's local workers
// run first): each step's program is run once with the flag its real tool
// answers without an input, so a file whose tools cannot run is refused up
// front instead of making every op an error.
//
//   import:  PROGRAM --help     (python3 -m iree.compiler.tools.import_onnx:
//                                argparse prints its usage, exit 0)
//   compile: PROGRAM --version  (torq-compile is ireeCompilerRunMain, LLVM's
//                                option parser: "IREE compiler version ...", exit 0)
//   run:     PROGRAM --help     (torq-run-module parses IREE's runtime flags:
//                                it has no --version, --help prints the usage, exit 0)
//
// PROGRAM is the step's argv[0] expanded ({torq_sim}, {worker_dir}, a
// `tools` name), plus `-m MODULE` right after it (a python module) and,
// after torq-sim, the persona's name (torq-compile ...). Items after that
// are the job's and are not given. Each distinct probe runs once, in a
// scratch folder, with the steps' environment, for at most 60 s (or the
// step's timeout when shorter).
//
// A tool is refused, with its step, its path and why, when argv[0] is not
// found on PATH, is a directory, a device or another non-file, is not
// executable, or is an empty file (which exec would run as an empty shell
// script, exit 0); when the probe cannot start, is killed by a signal,
// times out or exits non-zero (its diagnostic kept); and when it exits 0
// having printed nothing (no real tool answers its probe silently).
#pragma once

#include <string>
#include <vector>

#include "worker/toolchain/toolchain_config.h"

namespace torq::toolchain {

struct ToolProbe {
  std::string step;                // import | compile | run
  std::vector<std::string> argv;   // what was run (PROGRAM and the probe flag)
  bool ok = false;
  std::string answer;              // ok: the first line the tool printed
  std::string why;                 // !ok: why it cannot run
};

// The probe argv of a step (PROGRAM + its flag); throws std::invalid_argument
// when argv[0] has a placeholder with no value without a job.
std::vector<std::string> probe_argv(const ToolchainConfig& c, const Step& s, const std::string& step);

// Probes the import, compile and (unless skip_run: a board runs it) run
// steps' tools, each distinct argv once, in that order.
std::vector<ToolProbe> probe_tools(const ToolchainConfig& c, bool skip_run);

// "compile step: /dev/zero cannot run: it is a character device, not a program"
std::string describe(const ToolProbe& p);

}  // namespace torq::toolchain
