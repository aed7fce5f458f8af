// The matrix's int8 variants ({dtype: int8[, per_channel: true]}): the
// model quantized by `torq-gen-config quantize` (a sibling tool: the
// coordinator holds no tensors), with the variant's seed held out as
// discover's own input. Cached by content: <cache_dir>/<key>/<name>_quant.onnx
// where key hashes the fp32 bytes and the options. The tool writes it as
// <name>_quant.onnx.tmp.<its pid> (flock held) and renames it, so a killed
// run never leaves half a model under the final name; what a killed
// quantization left is removed by the next quantized_model() of that key and
// by the next QuantizeAhead on the cache (pipeline/base/temp_files.h).
#pragma once

#include <condition_variable>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace torq::coordinator {

// Path of the quantized model (made if not cached). Throws PipelineError
// with the tool's message when it cannot quantize the model.
// `running` (optional) holds the quantizing tool's pid while it runs
// (run_tool).
std::string quantized_model(const std::string& fp32_path, bool per_channel, uint64_t seed,
                            const std::string& cache_dir, std::atomic<pid_t>* running = nullptr);

// A run's int8 variants made one after another on a thread of their own,
// from the run's start and in the order the run prepares them, so that a
// variant's quantization (seconds of calibration in a sibling process) is
// done before the preparing thread reaches its unit instead of while the
// workers wait for it: the preparer holds at most a few units ahead, and
// the workers ran those out during each quantization (issue 32). The
// coordinator holds no tensors and no model here: each variant is a file.
//
// Contracts:
//  - get(i) returns request i's path once it is made, waiting for it (and
//    for the ones before it); a request that failed rethrows its
//    PipelineError; after stop() a request not yet made throws Stopped
//    (never a PipelineError: a stop is not the variant's failure).
//  - get() may be called from any thread. stop() kills the quantization in
//    hand (its tool process) and makes no more; the destructor stops and
//    joins the thread.
class QuantizeAhead {
 public:
  struct Stopped : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  struct Request {
    std::string fp32_path;
    bool per_channel = false;
    uint64_t seed = 0;
  };
  // `log` (optional) gets a line per variant made or failed.
  QuantizeAhead(std::vector<Request> requests, std::string cache_dir,
                std::function<void(const std::string&)> log = nullptr);
  ~QuantizeAhead();
  QuantizeAhead(const QuantizeAhead&) = delete;
  QuantizeAhead& operator=(const QuantizeAhead&) = delete;

  std::string get(size_t i);
  void stop();

 private:
  void run();
  const std::vector<Request> requests_;
  const std::string cache_dir_;
  const std::function<void(const std::string&)> log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::optional<std::string>> paths_;  // made
  std::vector<std::string> errors_;                // failed: the error
  size_t done_ = 0;                                // requests [0, done_) are made or failed
  bool stop_ = false;
  std::atomic<pid_t> tool_{0};                     // the quantizing tool's pid while it runs
  std::thread thread_;
};

}  // namespace torq::coordinator
