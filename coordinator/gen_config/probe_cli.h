// `torq-gen-config probe [learn DIR | diff A B]`: its command-line options
// (CLI11) and their run (probe_command.h).
#pragma once

#include <CLI/CLI.hpp>

#include "coordinator/gen_config/probe_command.h"

namespace torq::coordinator {

struct ProbeArgs {
  ProbeOptions o;
  std::string skip_execs;
  std::string learn_dir, diff_a, diff_b;
  bool json = false;
  CLI::App *cmd = nullptr, *learn = nullptr, *diff = nullptr;
};

// Adds `probe` (and its `learn` and `diff`) bound to `a`.
void add_probe(CLI::App& app, ProbeArgs& a);
// Runs the probe command parsed into `a` (profiles are checked against
// `catalog`: the engine's kernels); the exit code.
int do_probe(ProbeArgs& a, const targets::OpCatalog& catalog);

}  // namespace torq::coordinator
