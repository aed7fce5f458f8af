// The fleet worker's device health (fleet_worker_impl.h, board_health.h):
// its health check, what a finished job says about the device, and what
// the coordinator is told.
#include <onnx/onnx_pb.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "pipeline/model/model_import.h"
#include "pipeline/wire/fleet_codec.h"
#include "worker/runner/cache_room.h"
#include "worker/runner/fleet_worker_impl.h"
#include "worker/runner/job_runner.h"

namespace torq::runner {

namespace fs = std::filesystem;
using namespace pipeline;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

void FleetWorker::Impl::health_changed() {
  log("health " + health.state() + ": " + health.reason() + next_check_note());
  send(encode_ready(ready_info()));
}

std::string FleetWorker::Impl::next_check_note() const {
  if (health.state() != "Bad" && health.state() != "Unknown") return "";
  const long s = health.seconds_to_check(Clock::now());
  return s > 0 ? "; next check in " + std::to_string(s) + " s" : "";
}

void FleetWorker::Impl::fail_health_check(const std::string& why) {
  health.check_started();
  if (health.check_done(false, why, Clock::now())) health_changed();
  else health_unchanged();
}

std::string FleetWorker::Impl::cache_still_full() {
  for (auto it = no_room.begin(); it != no_room.end();) {
    if (have_model(it->first)) {  // a process sharing the cache fetched it
      it = no_room.erase(it);
      continue;
    }
    const uint64_t free = cache_free_bytes(opt.cache_dir);
    if (free < it->second) return no_room_reason(opt.cache_dir, it->first, it->second, free);
    ++it;
  }
  no_room.clear();
  return "";
}

void FleetWorker::Impl::start_health_check() {
  if (const std::string why = cache_still_full(); !why.empty()) {
    if (health.fault(why, Clock::now())) health_changed();
    else health_unchanged();
    return;
  }
  if (!opt.health_checks) {  // Bad for a fault alone (a full cache), which is gone
    health.check_started();
    if (health.check_done(true, "", Clock::now())) health_changed();
    return;
  }
  if (const std::string why = cache_unwritable(opt.cache_dir); !why.empty()) return fail_health_check(why);
  const std::string& bytes = opt.health_model;
  const std::string hash = sha256_hex(bytes);
  try {
    if (!have_model(hash)) store_model(hash, bytes);
  } catch (const std::exception& e) {
    return fail_health_check(e.what());
  }
  onnx::ModelProto proto;
  proto.ParseFromString(bytes);
  const size_t layers = list_layers(proto, nullptr).size();
  JobSpec j;
  j.id = "health-check/" + std::to_string(++health_seq);
  j.model_hash = hash;
  j.first_node = 0;
  j.last_node = static_cast<uint32_t>(layers - 1);
  j.executor = Executor::kHost;
  j.assignment.assign(layers, Executor::kHost);
  j.decide.assign(layers, 1);
  j.executor_targets.assign(3, "");
  j.timeout_ms = opt.health_timeout_ms;
  health_job = j.id;
  health.check_started();
  log("health check " + j.id + " started");
  pool->submit(j);
}

void FleetWorker::Impl::health_check_done(const ExecResult& r) {
  health_job.clear();
  const bool passed = r.status != Status::kError && r.pcc >= 0.999;
  const std::string why = r.status == Status::kError ? r.error_class + ": " + r.error_message
                                                    : "pcc " + std::to_string(r.pcc) + " < 0.999";
  if (health.check_done(passed, why, Clock::now())) health_changed();
  else if (!passed) health_unchanged();
}

void FleetWorker::Impl::finished(const JobSpec& job, ExecResult r) {
  if (job.id == health_job) return health_check_done(r);
  if (opt.timeouts_check_device && r.status == Status::kError && r.error_class == "timeout" &&
      timed_out_once.insert(job.id).second) {
    r.error_class = kInfrastructureClass;
    r.error_message = "timed out on the board, which is checked before its next job; the job is requeued (" +
                      r.error_message + ")";
  }
  const bool infra_error = infrastructure_error(r) && r.error_class != kDeclinedClass;
  const std::string why = job.id + ": " + r.error_message;
  if (infra_error) {
    if (health.infrastructure_error(why, Clock::now())) health_changed();
  } else if (r.error_class != kDeclinedClass) {
    health.job_done();  // the op's result: the device works
  }
  send_result(job, std::move(r));
}

void FleetWorker::Impl::poll_health() {
  if (!pool) return;
  const auto now = Clock::now();
  if (!opt.maintenance_file.empty()) {
    const bool on = fs::exists(opt.maintenance_file);
    if (health.maintenance(on, (on ? "maintenance file " : "maintenance file removed: ") + opt.maintenance_file,
                           now))
      health_changed();
  }
  if (!draining && health.check_due(now)) start_health_check();
}

}  // namespace torq::runner
