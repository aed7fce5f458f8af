#include "coordinator/matrix/quantized_variant.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "coordinator/fleet/tool_process.h"
#include "pipeline/model/model_import.h"
#include "pipeline/core/types.h"

namespace torq::coordinator {

namespace fs = std::filesystem;

std::string quantized_model(const std::string& fp32_path, bool per_channel, uint64_t seed,
                            const std::string& cache_dir) {
  std::ifstream f(fp32_path, std::ios::binary);
  if (!f) throw pipeline::PipelineError(fp32_path + ": cannot open model");
  std::stringstream bytes;
  bytes << f.rdbuf();
  const std::string name = pipeline::model_name_from_path(fp32_path);
  const std::string key = pipeline::sha256_hex(bytes.str() + "|int8|" + (per_channel ? "pc" : "pt") + "|seed " +
                                               std::to_string(seed)).substr(0, 16);
  const fs::path dir = fs::path(cache_dir) / key;
  const fs::path out = dir / (name + "_quant.onnx");
  if (fs::exists(out)) return out.string();
  fs::create_directories(dir);
  const fs::path tmp = dir / ("tmp-" + std::to_string(getpid()));
  std::vector<std::string> argv{sibling_binary("torq-gen-config", "TORQ_GEN_CONFIG_BIN"), "quantize", "--model",
                                fp32_path, "--output", tmp.string(), "--seed", std::to_string(seed)};
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
