#include "worker/sim/sim_backend.h"

#include "worker/engine/profile_csv.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "pipeline/base/error.h"
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

// The two profiling CSVs of the last run from the cost model (the sim's
// stand-in for what the device writes): one entry per node.
void SimBackend::profile_csvs(const engine::Session& exe, const engine::ExecutorProfile& profile,
                              const BackendRequest& req, BackendResult* r) {
  std::vector<engine::LayerProfileInput> layers;
  uint64_t out_bytes = 0;
  for (const auto& t : r->outputs) out_bytes += static_cast<uint64_t>(t.numel()) * engine::dtype_size(t.dtype());
  const auto& nodes = exe.last_stats().nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    engine::LayerProfileInput l;
    l.name = nodes[i].name;
    l.op_type = nodes[i].op_type;
    l.location = nodes[i].name;
    l.cost = nodes[i].cost;
    // A layer job is one node: its outputs are the run's; the rest of the
    // bytes it moved came in.
    l.output_bytes = nodes.size() == 1 ? out_bytes : 0;
    l.input_bytes = l.cost.bytes > l.output_bytes ? l.cost.bytes - l.output_bytes : 0;
    layers.push_back(l);
  }
  const auto ex = engine::trace_executor_from_name(pipeline::executor_name(req.executor));
  const engine::ProfileCsvs csvs = engine::make_profile_csvs(layers, profile.cost(), *ex);
  r->device_csv = csvs.device_trace;
  r->host_csv = csvs.host_profile;
}

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
  if (req.collect_profile) profile_csvs(*exe, *profile, req, &r);
  return r;
}

}  // namespace torq::sim
