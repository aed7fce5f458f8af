#include "coordinator/matrix/quantized_variant.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "coordinator/fleet/fmt.h"
#include "coordinator/fleet/tool_process.h"
#include "pipeline/core/sha256.h"
#include "pipeline/base/temp_files.h"
#include "pipeline/base/thread_name.h"
#include "pipeline/model/model_import.h"
#include "pipeline/core/types.h"

namespace torq::coordinator {

namespace fs = std::filesystem;

std::string quantized_model(const std::string& fp32_path, bool per_channel, uint64_t seed,
                            const std::string& cache_dir, std::atomic<pid_t>* running) {
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
  base::sweep_dead_temp_files(dir.string());
  // One thread: the workers keep every core busy while the next models are
  // prepared, and a multi-threaded calibration there spent about a third
  // more CPU than one thread (OpenMP's threads spinning at its barriers),
  // CPU the workers lost (the nightly's int8 models: 122 s against 83 s
  // alone, issue 32). The quantized model is the same either way. Not
  // measured by the tool: its report goes nowhere here, and the variant's
  // tests measure the model against its fp32 original themselves.
  std::vector<std::string> argv{sibling_binary("torq-gen-config", "TORQ_GEN_CONFIG_BIN"), "quantize", "--model",
                                fp32_path, "--output", out.string(), "--seed", std::to_string(seed),
                                "--threads", "1", "--no-measure"};
  if (per_channel) argv.push_back("--per-channel");
  const ToolRun r = run_tool(argv, running);
  if (r.exit_code != 0) {
    std::string msg = r.err.empty() ? "exit " + std::to_string(r.exit_code) : r.err;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    throw pipeline::PipelineError("int8 variant of " + fp32_path + ": torq-gen-config quantize failed: " + msg);
  }
  if (!fs::exists(out))
    throw pipeline::PipelineError("int8 variant of " + fp32_path + ": torq-gen-config quantize exited 0 without writing " +
                                  out.string());
  return out.string();
}

QuantizeAhead::QuantizeAhead(std::vector<Request> requests, std::string cache_dir,
                             std::function<void(const std::string&)> log)
    : requests_(std::move(requests)), cache_dir_(std::move(cache_dir)), log_(std::move(log)), paths_(requests_.size()),
      errors_(requests_.size()) {
  // A killed run's half-written variants, in any key's directory.
  std::error_code ec;
  if (!requests_.empty())
    for (const auto& e : fs::directory_iterator(cache_dir_, ec))
      if (e.is_directory(ec)) base::sweep_dead_temp_files(e.path().string());
  if (!requests_.empty()) thread_ = std::thread([this] {
    base::name_this_thread("torq-quantize");
    run();
  });
}

QuantizeAhead::~QuantizeAhead() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void QuantizeAhead::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  // A calibration of a big model takes minutes on one thread: not waited for.
  if (const pid_t pid = tool_.load(); pid > 0) ::kill(pid, SIGTERM);
  cv_.notify_all();
}

void QuantizeAhead::run() {
  for (size_t i = 0; i < requests_.size(); ++i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    const Request& r = requests_[i];
    std::optional<std::string> path;
    std::string error;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      path = quantized_model(r.fp32_path, r.per_channel, r.seed, cache_dir_, &tool_);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "int8 variant of " + r.fp32_path + ": quantization failed";
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;  // killed or not: a stop is nobody's failure, and get() says Stopped
    }
    if (log_) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      log_("int8 variant " + std::to_string(i + 1) + "/" + std::to_string(requests_.size()) + " of " + r.fp32_path +
           (r.per_channel ? " (per channel)" : "") + (error.empty() ? " made ahead in " + fmt(s, 2) + " s"
                                                                     : " failed: " + error));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      paths_[i] = std::move(path);
      errors_[i] = std::move(error);
      done_ = i + 1;
    }
    cv_.notify_all();
  }
}

std::string QuantizeAhead::get(size_t i) {
  if (i >= requests_.size())
    throw std::out_of_range("QuantizeAhead::get: request " + std::to_string(i) + " of " +
                            std::to_string(requests_.size()));
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_ > i || stop_; });
  if (done_ <= i) throw Stopped("int8 variant of " + requests_[i].fp32_path + ": the run stopped before it was made");
  if (!errors_[i].empty()) throw pipeline::PipelineError(errors_[i]);
  return *paths_[i];
}

}  // namespace torq::coordinator
