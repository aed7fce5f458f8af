// The worker-side job runner: for one job, materialise the layer's
// sub-model with its real (or random) inputs, compute the fp32 host
// reference, run the job's executor under its profile, and compare
// (DESIGN §3). It knows jobs and tensors, no sockets or processes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "pipeline/codec.h"
#include "pipeline/types.h"

namespace torq::runner {

class JobRunner {
 public:
  // Returns the model bytes for a content hash, or throws (e.g. not cached).
  using FetchModel = std::function<std::string(const std::string& hash)>;

  JobRunner(FetchModel fetch, std::string worker_id, int threads = 1);
  ~JobRunner();
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // Runs the job. Never throws: every failure is an `error` result with a
  // class (unsupported, compile, runtime, reference, fetch) and a message.
  pipeline::ExecResult run(const pipeline::JobSpec& job);

 private:
  struct ModelState;
  ModelState& model(const pipeline::JobSpec& job);

  FetchModel fetch_;
  std::string worker_id_;
  int threads_;
  std::map<std::string, std::unique_ptr<ModelState>> models_;  // by hash + activation key
};

// The identity this runner reports (engine version and profile set).
std::string toolchain_identity();

}  // namespace torq::runner
