#include "coordinator/matrix/quantized_variant.h"

#include <unistd.h>

#include <filesystem>

#include "coordinator/fleet/tool_process.h"
#include "pipeline/core/sha256.h"
#include "pipeline/model/model_import.h"
#include "pipeline/core/types.h"

namespace torq::coordinator {

namespace fs = std::filesystem;

std::string quantized_model(const std::string& fp32_path, bool per_channel, uint64_t seed,
                            const std::string& cache_dir) {
  // Keyed by the fp32 model's bytes, hashed as they are read (a 346 MB
  // model read whole and copied twice cost the coordinator 1.2 GB; issue 32).
  pipeline::Sha256 h;
  if (!h.update_file(fp32_path)) throw pipeline::PipelineError(fp32_path + ": cannot open model");
  h.update("|int8|" + std::string(per_channel ? "pc" : "pt") + "|seed " + std::to_string(seed));
  const std::string name = pipeline::model_name_from_path(fp32_path);
  const std::string key = h.hex().substr(0, 16);
  const fs::path dir = fs::path(cache_dir) / key;
  const fs::path out = dir / (name + "_quant.onnx");
  if (fs::exists(out)) return out.string();
  fs::create_directories(dir);
  const fs::path tmp = dir / ("tmp-" + std::to_string(getpid()));
  // One thread: the workers keep every core busy while the next models are
  // prepared, and a multi-threaded calibration there spent about a third
  // more CPU than one thread (OpenMP's threads spinning at its barriers),
  // CPU the workers lost (the nightly's int8 models: 122 s against 83 s
  // alone, issue 32). The quantized model is the same either way.
  std::vector<std::string> argv{sibling_binary("torq-gen-config", "TORQ_GEN_CONFIG_BIN"), "quantize", "--model",
                                fp32_path, "--output", tmp.string(), "--seed", std::to_string(seed),
                                "--threads", "1"};
  if (per_channel) argv.push_back("--per-channel");
  const ToolRun r = run_tool(argv);
  if (r.exit_code != 0) {
    std::error_code ec;
    fs::remove(tmp, ec);
    std::string msg = r.err.empty() ? "exit " + std::to_string(r.exit_code) : r.err;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    throw pipeline::PipelineError("int8 variant of " + fp32_path + ": torq-gen-config quantize failed: " + msg);
  }
  fs::rename(tmp, out);
  return out.string();
}

}  // namespace torq::coordinator
