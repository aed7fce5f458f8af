// The fleet broker's the handlers of the workers' messages (READY, STARTED, RESULT, DISCONNECT, blob requests), ZAP and bad frames
// (broker_impl.h; the poll loop that calls them is fleet_broker.cc).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/fleet/broker_impl.h"

namespace torq::coordinator {

std::string FleetBroker::Impl::name(const std::string& identity) const {
  auto it = workers.find(identity);
  return it != workers.end() ? "worker " + it->second.info.worker_id : "peer " + hex(identity);
}

void FleetBroker::Impl::forget(const std::string& identity, const std::string& reason, bool died, bool tell) {
  auto it = workers.find(identity);
  if (it == workers.end()) return;
  if (tell) send(identity, encode_disconnect(reason));
  const std::set<std::string> leases = it->second.leased;
  for (const auto& id : leases) unlease(jobs.at(id), died);
  workers.erase(identity);
}

void FleetBroker::Impl::note_health(const WorkerInfo& info) {
  auto& b = stats.boards[info.worker_id];
  const bool changed = b.health != info.health || b.reason != info.health_reason;
  b.target = info.target;
  b.tags = info.tags;
  if (!changed) return;
  log("worker " + info.worker_id + " health " + (b.health.empty() ? "-" : b.health) + " -> " + info.health +
      (info.health_reason.empty() ? "" : ": " + info.health_reason));
  b.health = info.health;
  b.reason = info.health_reason;
  b.since = info.health_since;
  ++b.transitions;
  try {
    store.append_health(info.worker_id, info.health, info.health_reason, info.health_since);
  } catch (const PipelineError& e) {
    log("health of worker " + info.worker_id + " not stored: " + e.what());
  }
}

std::string FleetBroker::Impl::refuse_id(const std::string& identity, const WorkerInfo& info, const std::string& key) {
  auto it = workers.find(identity);
  if (it != workers.end() && it->second.info.worker_id != info.worker_id)
    return "READY changes this connection's worker id from " + it->second.info.worker_id + " to " + info.worker_id;
  if (key.empty()) return "";
  auto [k, fresh] = id_keys.emplace(info.worker_id, key);
  if (!fresh && k->second != key)
    return "worker id " + info.worker_id + " is registered with another CURVE key (" + k->second + "), not " + key;
  return "";
}

void FleetBroker::Impl::on_ready(const std::string& identity, const WorkerInfo& info, const std::string& key) {
  if (const std::string why = refuse_id(identity, info, key); !why.empty()) return bad(identity, why);
  note_health(info);
  auto it = workers.find(identity);
  if (it != workers.end()) {  // capacity change (0: draining), health or new offer; or a repeat
    const bool took_jobs = it->second.takes_jobs();
    const WorkerInfo was = std::exchange(it->second.info, info);
    if (was.capacity != info.capacity || was.prefetch != info.prefetch || was.health != info.health ||
        was.executors != info.executors || was.tags != info.tags || was.target != info.target)
      log("worker " + info.worker_id + " updated: capacity " + std::to_string(info.capacity) + ", prefetch " +
          std::to_string(info.prefetch) + ", health " + info.health);
    if (!took_jobs && it->second.takes_jobs()) hint_queued_models(it->second);
    return;
  }
  for (auto& [other, w] : workers)
    if (w.info.worker_id == info.worker_id) {  // the same worker on a new connection
      forget(other, "replaced by a new connection of the same worker", false, true);
      break;
    }
  Worker w;
  w.identity = identity;
  w.info = info;
  w.curve_key = key;
  w.last_sent = Clock::now();
  Worker& nw = workers.emplace(identity, std::move(w)).first->second;
  ++stats.workers_seen;
  if (std::find(stats.quarantined.begin(), stats.quarantined.end(), info.worker_id) != stats.quarantined.end()) {
    nw.quarantined = true;
    log("worker " + info.worker_id + " registered again but is quarantined: no jobs for it this run");
  }
  // Jobs it kept running across a reconnect stay with it, if they were
  // leased to it (issue 30: a peer cannot claim others' jobs).
  size_t kept = 0;
  for (const auto& id : info.running) {
    auto j = jobs.find(id);
    if (j == jobs.end() || !may_hold(j->second, info.worker_id)) continue;
    if (j->second.state == Job::State::kQueued) unqueue(j->second);
    else if (j->second.state != Job::State::kHeld) continue;
    j->second.state = Job::State::kLeased;
    j->second.worker = identity;
    j->second.holder_id = info.worker_id;
    j->second.leases = std::max<uint32_t>(1, j->second.leases);
    nw.leased.insert(id);
    j->second.deadline = lease_deadline(nw, j->second);
    j->second.starts = 0;  // queued or running there: its STARTED (sent again after READY) says which
    ++leased;
    ++kept;
  }
  log("worker " + info.worker_id + " ready: target " + info.target + ", executors " +
      executors_csv(info.executors) + ", capacity " + std::to_string(info.capacity) +
      (info.prefetch ? " + prefetch " + std::to_string(info.prefetch) : "") + ", toolchain " +
      info.toolchain + (kept ? ", resumed " + std::to_string(kept) + " running jobs" : ""));
  if (nw.takes_jobs()) hint_queued_models(nw);
}

bool FleetBroker::Impl::may_hold(const Job& j, const std::string& worker_id) {
  if (j.state == Job::State::kHeld && j.holder_id.empty()) return true;
  return !j.holder_id.empty() && j.holder_id == worker_id;
}

void FleetBroker::Impl::on_started(Worker& w, const std::string& id) {
  auto it = jobs.find(id);
  if (it == jobs.end() || it->second.state != Job::State::kLeased || it->second.worker != w.identity) {
    ++stats.stray_started;
    return;
  }
  Job& j = it->second;
  if (++j.starts > static_cast<uint32_t>(std::max(1, opt.max_attempts))) return;
  j.deadline = Clock::now() + milliseconds(j.spec.timeout_ms) + milliseconds(opt.lease_slack_ms);
  ++stats.started;
}

void FleetBroker::Impl::on_result(Worker& w, ExecResult r) {
  auto it = jobs.find(r.job_id);
  if (it == jobs.end() && was_done(r.job_id)) {  // late duplicate of a committed result: the first won
    ++stats.duplicates;
    send(w.identity, encode_result_ack(r.job_id));
    return;
  }
  if (it == jobs.end()) {
    log("result for unknown job " + r.job_id + " from worker " + w.info.worker_id + " dropped");
    send(w.identity, encode_result_ack(r.job_id));
    return;
  }
  Job& j = it->second;
  if (j.state == Job::State::kDone) {  // late duplicate: the first result won
    ++stats.duplicates;
    acks.emplace_back(w.identity, r.job_id);  // after the first one is committed
    return;
  }
  // Only the lease holder's result counts (issue 30): the connection that
  // holds the lease, or once it is back in the queue the worker that last
  // held it, by its registered id (after a restart: the holder stored with
  // its lease); any other peer's is dropped (and acknowledged, so that it
  // stops sending it).
  if (!may_hold(j, w.info.worker_id) || (j.state == Job::State::kLeased && j.worker != w.identity)) {
    ++stats.foreign_results;
    log("result for job " + r.job_id + " from worker " + w.info.worker_id + " (connection " + hex(w.identity) +
        (w.curve_key.empty() ? "" : ", CURVE key " + w.curve_key) + "), which does not hold it" +
        (j.holder_id.empty() ? " (never leased)" : " (held by " + j.holder_id + ")") + ": dropped");
    acks.emplace_back(w.identity, r.job_id);
    return;
  }
  if (r.executor != j.spec.executor) {
    bad(w.identity, "result of job " + r.job_id + " names executor " + executor_name(r.executor));
    return;
  }
  // Lost to the infrastructure (ssh, board unreachable, runner missing)
  // or declined unrun by a device that was not Good: not the op's result
  // and not an attempt; the job goes back to the queue.
  const bool declined = r.error_class == kDeclinedClass, infra = infrastructure_error(r) && !declined;
  if (infra || declined) {
    if (j.state == Job::State::kLeased && j.worker == w.identity) {
      --j.leases;
      ++(infra ? stats.infra_requeued : stats.declined);
      log("job " + j.spec.id + (infra ? " lost to an infrastructure error on worker " : " declined by worker ") +
          w.info.worker_id + " (" + r.error_message + "); requeued, not counted as an attempt");
      unlease(j, false);
      --stats.requeued;  // counted as infra_requeued or declined instead
    }
    acks.emplace_back(w.identity, r.job_id);
    return;
  }
  if (j.state == Job::State::kLeased) {
    if (j.worker == w.identity) {
      const auto us = static_cast<uint32_t>(std::min<int64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - j.sent).count(), UINT32_MAX));
      stats.dispatch_latency_us.push_back(us);
      if (opt.observer) opt.observer->latency(us);
    }
    auto holder = workers.find(j.worker);
    if (holder != workers.end()) holder->second.leased.erase(j.spec.id);
    --leased;
  } else if (j.state == Job::State::kQueued) {
    unqueue(j);
  }
  ++stats.done_by_worker[w.info.worker_id];
  r.attempts = std::max<uint32_t>(1, j.leases);
  const std::string id = j.spec.id;
  complete(j, std::move(r));
  acks.emplace_back(w.identity, id);
}

void FleetBroker::Impl::serve_blobs() {
  stats.blobs_served += blobs.serve([this](const std::string& id, const std::string& msg) { return send(id, msg); },
                                    [this](const std::string& id, const std::string& why) { bad(id, why); });
}

void FleetBroker::Impl::bad(const std::string& identity, const std::string& why) {
  ++stats.bad_frames;
  log("bad frame from " + name(identity) + ": " + why + "; dropped, peer disconnected");
  if (workers.count(identity)) forget(identity, "protocol error: " + why, true, true);
  else send(identity, encode_disconnect("protocol error: " + why));
}

std::string FleetBroker::Impl::curve_key_of(const zmq::message_t& frame) const {
  if (!zap) return "";
  const char* uid = zmq_msg_gets(frame.handle(), "User-Id");
  return uid ? std::string(uid) : std::string();
}

void FleetBroker::Impl::on_frames(const std::string& identity, const std::vector<zmq::message_t>& frames, size_t count) {
  if (count != 2) return bad(identity, "expected 1 frame after the identity, got " + std::to_string(count - 1));
  FleetMessage m;
  try {
    m = decode_fleet_message(frames[1].data(), frames[1].size(), opt.max_inbound_bytes);
  } catch (const PipelineError& e) {
    return bad(identity, e.what());
  }
  auto it = workers.find(identity);
  if (m.type == FleetType::kReady) {
    on_ready(identity, m.ready, curve_key_of(frames[1]));
    it = workers.find(identity);
  } else if (m.type == FleetType::kDisconnect) {
    if (it != workers.end()) {
      log("worker " + it->second.info.worker_id + " left" + (m.reason.empty() ? "" : ": " + m.reason));
      forget(identity, "", false, false);
    }
    return;
  } else if (it == workers.end()) {  // not registered (e.g. we restarted): register first
    if (m.type == FleetType::kJob || m.type == FleetType::kResultAck || m.type == FleetType::kBlobReply)
      return bad(identity, std::string(fleet_type_name(m.type)) + " sent to the coordinator");
    send(identity, encode_disconnect("not registered: send READY"));
    return;
  } else {
    Worker& w = it->second;
    switch (m.type) {
      case FleetType::kResult: on_result(w, std::move(m.result)); break;
      case FleetType::kStarted: on_started(w, m.job_id); break;
      case FleetType::kBlobRequest: blobs.request(identity, "worker " + w.info.worker_id, m); break;
      case FleetType::kHeartbeat: break;
      default: return bad(identity, std::string(fleet_type_name(m.type)) + " sent to the coordinator");
    }
    it = workers.find(identity);  // a bad result may have dropped it
  }
  if (it != workers.end()) it->second.expiry = Clock::now() + milliseconds(opt.heartbeat_ms * opt.liveness);
}

bool FleetBroker::Impl::receive_one() {
  std::vector<zmq::message_t> frames;
  size_t count = 0;
  try {
    for (bool more = true; more; ++count) {
      zmq::message_t msg;
      auto got = router.recv(msg, count == 0 ? zmq::recv_flags::dontwait : zmq::recv_flags::none);
      if (!got) return false;
      more = msg.more();
      if (frames.size() < 3) frames.push_back(std::move(msg));  // drain the rest of an over-long message
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR && count == 0) return false;
    throw PipelineError(std::string("receive: ") + e.what());
  }
  on_frames(frames[0].to_string(), frames, count);
  return true;
}

void FleetBroker::Impl::serve_zap() {
  std::vector<zmq::message_t> req;
  for (bool more = true; more;) {
    zmq::message_t msg;
    if (!zap->recv(msg, zmq::recv_flags::dontwait)) return;
    more = msg.more();
    req.push_back(std::move(msg));
  }
  std::string status = "400", text = "malformed ZAP request", user;
  if (req.size() >= 7 && req[0].to_string() == "1.0") {
    if (req[5].to_string() == "CURVE" && req[6].size() == 32) {
      char z85[41];
      zmq_z85_encode(z85, static_cast<const uint8_t*>(req[6].data()), 32);
      if (opt.allowed_client_keys.count(z85)) {
        status = "200";
        text = "OK";
        user = z85;
      } else {
        text = "key not on the allow-list";
        log("refused a worker with unknown CURVE key " + std::string(z85) + " from " + req[3].to_string());
      }
    } else {
      text = "CURVE required";
    }
  }
  const std::string version = "1.0", request_id = req.size() > 1 ? req[1].to_string() : "";
  zap->send(zmq::buffer(version), zmq::send_flags::sndmore);
  zap->send(zmq::buffer(request_id), zmq::send_flags::sndmore);
  zap->send(zmq::buffer(status), zmq::send_flags::sndmore);
  zap->send(zmq::buffer(text), zmq::send_flags::sndmore);
  zap->send(zmq::buffer(user), zmq::send_flags::sndmore);
  zap->send(zmq::str_buffer(""), zmq::send_flags::none);
}

void FleetBroker::Impl::observe(bool force) {
  const auto now = Clock::now();
  if (!opt.observer || (!force && now < next_observe)) return;
  next_observe = now + RunObserver::kFleetEvery;
  FleetView v;
  v.queued = queued;
  v.leased = leased;
  v.held = held_count();
  std::set<std::string> connected;
  for (const auto& [identity, w] : workers) {
    FleetView::Worker x;
    x.id = w.info.worker_id;
    x.target = w.info.target;
    x.health = w.info.health;
    x.reason = w.info.health_reason;
    x.toolchain = w.info.toolchain;
    x.tags = w.info.tags;
    x.capacity = w.info.capacity;
    x.leased = w.leased.size();
    x.quarantined = w.quarantined;
    if (!w.leased.empty()) {
      const JobSpec& j = jobs.at(*w.leased.begin()).spec;
      x.current_key = result_key_of(j);
      x.current_layer = j.first_node;
      x.current_executor = executor_name(j.executor);
    }
    connected.insert(x.id);
    v.workers.push_back(std::move(x));
  }
  for (const auto& [id, b] : stats.boards)  // seen this run, gone now
    if (!connected.count(id)) {
      FleetView::Worker x;
      x.id = id;
      x.target = b.target;
      x.health = b.health;
      x.reason = b.reason;
      x.tags = b.tags;
      x.connected = false;
      v.workers.push_back(std::move(x));
    }
  const std::vector<std::pair<std::string, size_t>> done(stats.done_by_worker.begin(), stats.done_by_worker.end());
  v.done_by_worker = &done;
  opt.observer->fleet(v);
}

}  // namespace torq::coordinator
