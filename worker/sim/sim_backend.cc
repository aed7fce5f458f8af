#include "worker/sim/sim_backend.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "worker/engine/error.h"
#include "worker/engine/session.h"
#include "worker/runner/job_runner.h"

namespace torq::sim {

using engine::EngineError;
using engine::ErrorKind;
using runner::BackendRequest;
using runner::BackendResult;

std::shared_ptr<const engine::ExecutorProfile> profile_for(pipeline::Executor e, const std::string& target) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const engine::ExecutorProfile>> cache;
  const bool builtin = target.empty() || target == "sim";
  const std::string key = builtin ? std::string("builtin:") + pipeline::executor_name(e) : target;
  std::lock_guard<std::mutex> lock(mu);
  auto& p = cache[key];
  if (!p)
    p = std::make_shared<engine::ExecutorProfile>(builtin ? engine::ExecutorProfile::resolve(pipeline::executor_name(e))
                                                          : engine::ExecutorProfile::load(target));
  return p;
}

std::string SimBackend::identity() const { return runner::toolchain_identity(); }

namespace {

// r as an error of class `cls`.
BackendResult& fail(BackendResult& r, const std::string& cls, const std::string& msg) {
  r.ok = false;
  r.error_class = cls;
  r.error_message = msg;
  return r;
}

}  // namespace

BackendResult SimBackend::run(const BackendRequest& req) {
  BackendResult r;
  std::shared_ptr<const engine::ExecutorProfile> profile;
  try {
    profile = profile_for(req.executor, req.target);
  } catch (const std::exception& e) {
    return fail(r, "target", e.what());
  }
  r.chip = profile->chip();
  engine::SessionOptions so;
  so.threads = threads_;
  so.rounding = req.bf16_rne ? engine::Rounding::kNearestEven : engine::Rounding::kTruncate;
  so.profile = profile;
  std::unique_ptr<engine::Session> exe;
  try {
    exe = engine::Session::from_proto(*req.model, so);
  } catch (const EngineError& e) {
    return fail(r, e.kind() == ErrorKind::kUnsupported ? "unsupported" : "compile", e.what());
  } catch (const std::exception& e) {
    return fail(r, "compile", e.what());
  }
  // The profile checks each node on its first run: a rejection there is the
  // compiler's refusal too (not accepted); anything else is a runtime error.
  r.accepted = true;
  double sim_ms = 0;
  const uint32_t runs = std::max<uint32_t>(1, req.runs);
  try {
    for (uint32_t k = 0; k < runs; ++k) {
      r.outputs = exe->run(*req.feeds);
      sim_ms += exe->last_stats().sim_ms;
    }
  } catch (const EngineError& e) {
    r.accepted = e.kind() != ErrorKind::kUnsupported;
    return fail(r, e.kind() == ErrorKind::kUnsupported ? "unsupported" : "runtime", e.what());
  } catch (const std::exception& e) {
    return fail(r, "runtime", e.what());
  }
  r.ok = true;
  r.runtime_ms = sim_ms / runs;
  r.runs = runs;
  return r;
}

}  // namespace torq::sim
