// `discover|run --quantize [--per-channel] [--quant-format F] [--num-calib N]`:
// quantize the fp32 model first (torq-gen-config quantize, worker/quant/)
// into <output-dir>/<model>_quant.onnx and go on with that model, so its
// report is torq_gen_config_<model>_quant.json, as the seed tool names it.
// Quantization is deterministic in the model, the options and the seed:
// discover and a later run (or a resumed discover) quantize to the same
// bytes, hence the same model hash and the same stored results.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace torq::coordinator {

struct QuantizeFirst {
  bool enabled = false;
  bool per_channel = false;
  std::string format = "qdq";
  int num_calib = 16;
};

// Adds --quantize, --per-channel, --quant-format and --num-calib to `sub`.
void add_quantize_flags(CLI::App* sub, QuantizeFirst* q);

// With q.enabled: quantizes *model (calibration seeds after `seed`, which
// stays held out) and points *model at the quantized file. Returns 0, or 2
// with "torq-gen-config: error: ..." on err (bad options, --auto-convert-bf16
// given too, an already quantized model, a model that cannot be quantized).
int quantize_first(const QuantizeFirst& q, bool convert_bf16, uint64_t seed, const std::string& output_dir,
                   std::string* model, std::ostream& out, std::ostream& err);

}  // namespace torq::coordinator
