// The sim backend: runs a sub-model on the in-repo engine under the
// executor's profile (configs/targets/<executor>.yaml, or the profile file
// the job's target names). runtime_ms is the simulated device time of the
// profile's cost model. A sub-model the profile rejects (an op, dtype or
// shape it does not take, checked when the engine loads it or on its first
// run) is not accepted: class `unsupported`, as a compiler would refuse it.
#pragma once

#include <memory>
#include <string>

#include "worker/engine/profile.h"
#include "worker/engine/session.h"
#include "worker/runner/backend.h"

namespace torq::sim {

class SimBackend : public runner::Backend {
 public:
  explicit SimBackend(int threads = 1) : threads_(threads) {}
  std::string identity() const override;
  runner::BackendResult run(const runner::BackendRequest& req) override;

 private:
  void profile_csvs(const engine::Session& exe, const engine::ExecutorProfile& profile,
                    const runner::BackendRequest& req, runner::BackendResult* r);
  int threads_;
};

// The profile an executor runs under for a target: the built-in one for
// "sim" (or an empty target), else the profile file the target names. Cached per process; throws EngineError for a bad file.
std::shared_ptr<const engine::ExecutorProfile> profile_for(pipeline::Executor e, const std::string& target = "sim");

}  // namespace torq::sim
