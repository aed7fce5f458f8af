// `torq-gen-config repro --model M [--output-dir D] [--auto-convert-bf16 |
// --quantize] LAYER --executor E [-o DIR]` (issue 28): a self-contained
// folder for one (layer, executor) result of the report in D, with the
// backend that produced it (worker/toolchain/repro_bundle.h).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "pipeline/core/types.h"
#include "pipeline/base/dtype.h"

namespace torq::coordinator {

struct ReproOptions {
  std::string model, output_dir = ".", layer, executor, out_dir;
  bool convert_bf16 = false;
  engine::Rounding rounding = engine::Rounding::kTruncate;
  std::string variant_extra;       // e.g. "int8 (QDQ)" when quantized first
  uint64_t seed = 0;               // discover's input seed (default: discover's)
  bool random_inputs = false;
  float input_lo = -40, input_hi = 40;
  std::string backend = "sim", toolchain_file;
  std::string command;             // how the bundle was asked for (README)
};

// Writes the bundle and prints its folder and how to run it. Returns 0, or
// 2 with "torq-gen-config: error: ..." (no report, no such layer or
// executor, a folder that is not empty, a bad toolchain file).
int run_repro(const ReproOptions& o, std::ostream& out, std::ostream& err);

}  // namespace torq::coordinator
