// `torq-gen-config probe` (issue 34): measure each executor's support
// envelope. Every point of a probe spec (pipeline/probe/probe_spec.h) is a
// single-op model tested on each executor like a layer (cached and
// resumable: the store and cache of DIR); from the statuses the envelope
// is learned per (op, executor) and written as DIR/probe.csv (every point),
// envelope.md and envelope.html (the rules, what they explain, what they
// do not), profiles/<executor>.yaml (a derived profile in the
// configs/targets format) and targets.yaml (the map discover --targets
// reads: calibration). `probe learn DIR` re-derives them from probe.csv;
// `probe diff A B` lists the points whose status changed.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "pipeline/core/types.h"
#include "pipeline/targets/target_profile.h"

namespace torq::coordinator {

struct ProbeOptions {
  std::string spec;
  std::string output_dir = "probe-out";
  std::string backend = "sim";          // sim | toolchain
  std::string toolchain_file;           // --backend toolchain
  std::string targets_file;             // sim: a profile per executor (what is probed)
  std::string base_file;                // profiles the derived ones take cost and unprobed ops from
  std::vector<pipeline::Executor> executors{pipeline::Executor::kNss, pipeline::Executor::kCss,
                                            pipeline::Executor::kHost};
  int workers = 2;
  int threads_per_worker = 1;
  uint32_t timeout_ms = 60000;
  bool recompute = false;               // neither resume nor cache
  bool quiet = false;
  const targets::OpCatalog* op_catalog = nullptr;  // the engine's: derived profiles are checked against it
};

// Exit: 0 done, 2 an error (bad spec, a store or worker failure: what
// finished is kept in DIR's store).
int run_probe(const ProbeOptions& o, std::ostream& out, std::ostream& err);
// Re-learns DIR's envelope and profiles from DIR/probe.csv (no job runs).
int run_probe_learn(const std::string& dir, const std::string& base_file, const targets::OpCatalog& catalog,
                    std::ostream& out, std::ostream& err);
// The points whose status changed from probe run A to B (their probe.csv),
// grouped by the rule of A's derived profile they fall under.
int run_probe_diff(const std::string& a, const std::string& b, bool json, const std::string& base_file,
                   const targets::OpCatalog& catalog, std::ostream& out, std::ostream& err);

}  // namespace torq::coordinator
