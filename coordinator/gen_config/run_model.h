// `torq-gen-config run` (seed workflow step 3): run the whole model (or a
// subgraph) with every op on its assigned executor, each fed what the ops
// before it produced there, compare the graph outputs with the fp32 host
// reference, and record the result in the report's `full_model` section.
//
// File rules (the seed's): the report JSON is the source of truth and the
// compiler JSON is regenerated from it; with only a compiler JSON it is
// used as it is (hand edits stick, nothing is rewritten); with neither,
// exit 2 telling to run discover first. The report's recorded layer results
// are never rewritten. An op with no assignment (null or missing): the
// compiler decides (first executor in priority order whose profile accepts
// it). When the run fails although every layer passed alone, the
// auto-bisect finds the smallest failing range.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "pipeline/base/dtype.h"

namespace torq::coordinator {

struct RunOptions {
  std::string model;
  std::string quantization;  // set when --quantize made `model` (checked against the report's variant)
  // The fp32 model a converted variant was made from: set when --quantize
  // made `model`; with convert_bf16 it is `model` itself. A run of the
  // whole model runs it on the same input and reports the end-to-end
  // figures against it (issue 29).
  std::string original_model;
  std::string output_dir = ".";
  bool convert_bf16 = false;
  engine::Rounding rounding = engine::Rounding::kTruncate;
  bool debug_ir = false;
  std::string debug_ir_dir;          // empty with debug_ir: <output_dir>/debug_ir
  bool recompute_cache = false;
  std::string subgraph_from, subgraph_to;
  std::string log_file;
  int workers = 1;
  uint64_t seed = 0;
  uint32_t timeout_ms = 300000;
  std::string targets_file;          // as discover --targets
  std::string backend = "sim";       // as discover --backend / --toolchain
  std::string toolchain_file;
  bool bisect = true;
  // --collect-profile: the run's compile-time trace and runtime host profile
  // CSVs (per layer, laid end to end), a Chrome/Perfetto trace JSON and the
  // "Host Profile Overview", written next to the report and printed.
  bool collect_profile = false;
  bool quiet = false;
};

// Exit codes: 0 passed, 1 failed (comparators, crash, or an op no executor
// accepts), 2 bad usage or input.
int run_model(const RunOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace torq::coordinator
