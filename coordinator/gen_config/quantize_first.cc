#include "coordinator/gen_config/quantize_first.h"

#include <filesystem>
#include <ostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "pipeline/model/model_import.h"
#include "pipeline/base/progress.h"
#include "worker/quant/quantize_model.h"

namespace torq::coordinator {

void add_quantize_flags(CLI::App* sub, QuantizeFirst* q) {
  sub->add_flag("--quantize", q->enabled,
                "Quantize the fp32 model to static int8 first (as `quantize`; written to OUTPUT_DIR/<model>_quant.onnx) "
                "and use that model");
  sub->add_flag("--per-channel", q->per_channel, "With --quantize: per-output-channel weight scales");
  sub->add_option("--quant-format", q->format, "With --quantize: qdq or qoperator")
      ->check(CLI::IsMember({"qdq", "qoperator"}))
      ->capture_default_str();
  sub->add_option("--num-calib", q->num_calib, "With --quantize: calibration inputs")->capture_default_str();
}

int quantize_first(const QuantizeFirst& q, bool convert_bf16, uint64_t seed, const std::string& output_dir,
                   std::string* model, std::ostream& out, std::ostream& err) {
  if (!q.enabled) {
    if (q.per_channel || q.format != "qdq" || q.num_calib != 16) {
      err << "torq-gen-config: error: --per-channel, --quant-format and --num-calib need --quantize\n";
      return 2;
    }
    return 0;
  }
  if (convert_bf16) {
    err << "torq-gen-config: error: --auto-convert-bf16 and --quantize are mutually exclusive "
           "(an int8 model keeps its fp32 scales)\n";
    return 2;
  }
  quant::QuantizeOptions o;
  o.model = *model;
  o.output_dir = output_dir;
  o.per_channel = q.per_channel;
  o.format = q.format;
  o.num_calib = q.num_calib;
  o.seed = seed;
  o.output = (std::filesystem::path(output_dir) / (pipeline::model_name_from_path(*model) + "_quant.onnx")).string();
  std::ostringstream msg;
  const base::Progress progress("torq-gen-config --quantize");
  if (quant::quantize_command(o, out, msg) != 0) {
    err << "torq-gen-config: error: --quantize " << *model << ": " << msg.str().substr(msg.str().find(' ') + 1);
    return 2;
  }
  *model = o.output;
  return 0;
}

}  // namespace torq::coordinator
