// `torq-gen-config discover` on one machine: import the model, plan layer
// jobs, run them on a pool of local worker processes, merge results into
// the RocksDB store, and write the report and compiler JSON (DESIGN §3–§5).
// A killed discover run again with the same flags resumes from the store.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "pipeline/core/types.h"
#include "pipeline/base/dtype.h"
#include "pipeline/targets/target_profile.h"

namespace torq::coordinator {

struct DiscoverOptions {
  std::string model;
  std::string quantization;  // set when --quantize made `model`: how (the report's variant)
  std::string output_dir = ".";
  bool skip_mode = false;
  std::vector<pipeline::Executor> executors{pipeline::Executor::kNss, pipeline::Executor::kCss,
                                            pipeline::Executor::kHost};
  bool dedup = false, dedup_exact = false;
  bool collect_timing = false;
  // --collect-profile: every job returns its profiling CSVs (stored with the
  // result); each is exported with its Perfetto trace under
  // <output_dir>/<model>_profiles/<layer id>_<executor>.*.
  bool collect_profile = false;
  uint32_t timing_runs = 5;
  bool recommend_by_timing = false;
  bool convert_bf16 = false;
  engine::Rounding rounding = engine::Rounding::kTruncate;
  std::string save_bf16_model;
  std::string log_file;
  bool recompute_cache = false;
  std::string filter;  // -k
  int workers = 2;
  int threads_per_worker = 1;
  bool random_inputs = false;
  uint64_t seed = 0;
  float input_lo = -40, input_hi = 40;
  std::string mlir_file;
  uint32_t timeout_ms = 120000;
  pipeline::Tolerance tolerance;
  std::string targets_file;  // --targets: YAML {nss|css|host: profile path}
  // The op types a --targets profile may name (the engine's kernels:
  // engine::kernel_catalog(), given by torq-gen-config's main). Required
  // with targets_file.
  const targets::OpCatalog* op_catalog = nullptr;
  // --backend sim|toolchain, --toolchain FILE: what the local workers run
  // the executors with (the engine under the profiles, or the Torq tools
  // per the toolchain file; its jobs' target is toolchain_target(FILE)).
  std::string backend = "sim";
  std::string toolchain_file;
  bool quiet = false;
  // --subgraph-from / --subgraph-to: discover only these layers (layer id,
  // output name or index; inclusive) plus one run of the whole range on the
  // recommended executors; report torq_gen_config_<model>_subgraph_<a>_<b>.json.
  std::string subgraph_from, subgraph_to;
};

// Exit codes: 0 done, 1 critical failures found, 2 bad usage or input.
int run_discover(const DiscoverOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace torq::coordinator
