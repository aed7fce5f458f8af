// The fleet worker's connection, jobs, benchmark mode and poll loop (see
// fleet_worker.h): one DEALER socket and the LocalPool's child pipes,
// polled together. Device health: fleet_worker_health.cc; the model cache:
// fleet_worker_cache.cc.
#include "worker/runner/fleet_worker.h"

#include <unistd.h>

#include <zmq.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "pipeline/wire/fleet_codec.h"
#include "worker/runner/fleet_worker_impl.h"
#include "worker/runner/job_runner.h"

namespace torq::runner {

namespace fs = std::filesystem;
using namespace pipeline;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Messages queued to the coordinator at most (ZeroMQ's high-water mark).
constexpr int kSendQueue = 100000;

std::string default_worker_id() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) std::snprintf(host, sizeof host, "worker");
  return std::string(host) + "-" + std::to_string(getpid());
}

// "noop" -> 0, "sleep:MS" -> MS (0..3600000); anything else is an error.
int parse_bench_executor(const std::string& spec) {
  if (spec == "noop") return 0;
  if (spec.rfind("sleep:", 0) == 0 && spec.size() > 6 && spec.size() <= 13 &&
      spec.find_first_not_of("0123456789", 6) == std::string::npos) {
    const long ms = std::stol(spec.substr(6));
    if (ms <= 3600000) return static_cast<int>(ms);
  }
  throw PipelineError("bad bench executor '" + spec + "' (noop or sleep:MS, MS <= 3600000)");
}

BoardHealth::Options health_options(const FleetWorkerOptions& o) {
  BoardHealth::Options h;
  h.checks = o.health_checks && o.bench_executor.empty();
  h.interval = std::chrono::seconds(std::max(1, o.health_interval_s));
  h.retry = std::chrono::seconds(std::max(1, o.health_retry_s));
  return h;
}

// Test aid: TORQ_WORKER_FAULT=infra:ID makes the first job whose id
// contains ID fail once with an infrastructure error (as a lost ssh link
// would), in this process.
std::vector<std::string> infra_faults() {
  std::vector<std::string> out;
  const char* env = std::getenv("TORQ_WORKER_FAULT");
  std::stringstream ss(env ? env : "");
  std::string item;
  while (std::getline(ss, item, ','))
    if (item.rfind("infra:", 0) == 0) out.push_back(item.substr(6));
  return out;
}

}  // namespace

FleetWorker::Impl::Impl(FleetWorkerOptions o) : opt(std::move(o)), health(health_options(opt)), infra(infra_faults()) {
  if (opt.bench_executor.empty()) pool.emplace(pool_options(opt));
  else bench_ms = parse_bench_executor(opt.bench_executor);
}

LocalPoolOptions FleetWorker::Impl::pool_options(const FleetWorkerOptions& o) {
  LocalPoolOptions lo;
  lo.workers = o.capacity;
  lo.lanes = o.lanes;
  // The jobs prefetched beyond capacity wait in the job processes, where
  // a lane that finishes takes the next without a round trip through
  // this process.
  lo.queue_ahead = queue_ahead_for(o.capacity, o.lanes, o.prefetch);
  lo.worker_binary = o.worker_binary;
  lo.cache_dir = o.cache_dir;
  lo.threads_per_worker = o.threads_per_job;
  lo.max_attempts = o.max_attempts;
  lo.id_prefix = o.worker_id;
  lo.backend_args = o.backend_args;
  return lo;
}

void FleetWorker::Impl::send(const std::string& payload) {
  try {
    if (!sock->send(zmq::buffer(payload), zmq::send_flags::dontwait))
      log("send queue full (" + std::to_string(kSendQueue) + " messages): a message to the coordinator was dropped");
  } catch (const zmq::error_t& e) {
    log(std::string("send failed: ") + e.what());  // the next reconnect resends what matters
  }
  last_sent = Clock::now();
}

WorkerInfo FleetWorker::Impl::ready_info() const {
  WorkerInfo w;
  w.worker_id = opt.worker_id;
  w.target = opt.target;
  w.executors = opt.executors;
  w.toolchain = opt.toolchain.empty() ? toolchain_identity() : opt.toolchain;
  w.capacity = draining ? 0 : static_cast<uint32_t>(opt.capacity);
  w.prefetch = static_cast<uint32_t>(opt.prefetch);
  w.running.assign(active.begin(), active.end());
  w.tags = opt.tags;
  w.health = health.state();
  w.health_reason = health.reason();
  w.health_since = health.since();
  return w;
}

void FleetWorker::Impl::connect() {
  sock.emplace(ctx, zmq::socket_type::dealer);
  sock->set(zmq::sockopt::linger, 0);
  // A full queue would drop a RESULT silently (sent again only after a
  // reconnect); what is queued is bounded by the capacity anyway.
  sock->set(zmq::sockopt::sndhwm, kSendQueue);
  sock->set(zmq::sockopt::rcvhwm, kSendQueue);
  // A coordinator not listening yet is tried again after 10 ms, not
  // ZeroMQ's default 100 ms: local workers start while the coordinator
  // imports the model and must not find it a moment too early and then
  // wait. Over tcp:// the interval backs off to 1 s while it stays away;
  // an ipc:// socket file is local and cheap to look for.
  sock->set(zmq::sockopt::reconnect_ivl, 10);
  sock->set(zmq::sockopt::reconnect_ivl_max, opt.connect.rfind("ipc://", 0) == 0 ? 0 : 1000);
  if (!opt.server_public_key.empty()) {
    sock->set(zmq::sockopt::curve_serverkey, opt.server_public_key);
    sock->set(zmq::sockopt::curve_publickey, opt.public_key);
    sock->set(zmq::sockopt::curve_secretkey, opt.secret_key);
  }
  sock->connect(opt.connect);
  heard = false;
  unheard = 0;
  send(encode_ready(ready_info()));
  for (const auto& id : started) send(encode_job_started(id));  // their leases run from their start
  for (const auto& [id, msg] : unacked) send(msg);
  for (auto& [hash, fetch] : fetches) fetch->restart();  // its requests in flight died with the old socket
  broker_seen = Clock::now();
}

milliseconds FleetWorker::Impl::silence_window(milliseconds liveness) const {
  return heard ? liveness : liveness * (1 << std::min(unheard, 6));
}

bool FleetWorker::Impl::on_silence(milliseconds window) {
  if (heard) {
    log("coordinator silent for " + std::to_string(window.count()) + " ms; reconnecting");
    return true;
  }
  if (++unheard == 1) log("no answer from the coordinator yet; READY sent again, then at growing intervals");
  send(encode_ready(ready_info()));
  broker_seen = Clock::now();
  return false;
}

void FleetWorker::Impl::send_result(const JobSpec& job, ExecResult r) {
  r.job_id = job.id;
  r.worker_id = opt.worker_id;
  active.erase(job.id);
  started.erase(job.id);
  if (opt.verbose)
    log("finished " + job.id + ": " + status_name(r.status) + (r.error_class.empty() ? "" : " " + r.error_class));
  std::string msg = encode_result_message(r);
  send(msg);
  unacked[job.id] = std::move(msg);
}

void FleetWorker::Impl::report_started() {
  for (auto& id : pool->take_started()) {
    if (id == health_job || !active.count(id)) continue;
    started.insert(id);
    send(encode_job_started(id));
  }
}

void FleetWorker::Impl::fail(const JobSpec& job, const std::string& cls, const std::string& msg) {
  ExecResult r;
  r.executor = job.executor;
  r.status = Status::kError;
  r.error_class = cls;
  r.error_message = msg;
  send_result(job, std::move(r));
}

void FleetWorker::Impl::bench_answer(const JobSpec& job, Clock::time_point began) {
  ExecResult r;
  r.executor = job.executor;
  r.status = Status::kSuccess;
  r.tolerance_used = job.tolerance;
  r.runtime_ms = bench_ms;
  r.timing_runs = job.timing_runs;
  r.host_ms = std::chrono::duration<double, std::milli>(Clock::now() - began).count();
  r.toolchain = toolchain_identity() + " (bench " + opt.bench_executor + ")";
  send_result(job, std::move(r));
}

void FleetWorker::Impl::bench_service() {
  const auto now = Clock::now();
  while (!sleeping.empty() && sleeping.front().first <= now) {
    auto [due, job] = std::move(sleeping.front());
    sleeping.pop_front();
    bench_answer(job, due - milliseconds(bench_ms));
  }
  while (!bench_waiting.empty() && sleeping.size() < static_cast<size_t>(opt.capacity)) {
    bench_sleep(std::move(bench_waiting.front()), now);
    bench_waiting.pop_front();
  }
}

void FleetWorker::Impl::bench_sleep(JobSpec job, Clock::time_point now) {
  started.insert(job.id);
  send(encode_job_started(job.id));
  sleeping.emplace_back(now + milliseconds(bench_ms), std::move(job));
}

void FleetWorker::Impl::on_job(const JobSpec& job) {
  if (active.count(job.id)) return;  // already running it (a re-sent lease)
  active.insert(job.id);
  // Not Good (a lease sent before the coordinator heard of a health
  // change): declined unrun, back to the queue; neither an attempt nor
  // a job lost to the infrastructure.
  if (pool && !health.takes_jobs())
    return fail(job, kDeclinedClass, "worker " + opt.worker_id + " is " + health.state() + ": " + health.reason());
  for (auto it = infra.begin(); it != infra.end(); ++it)
    if (job.id.find(*it) != std::string::npos) {
      infra.erase(it);
      if (health.infrastructure_error("injected fault on " + job.id, Clock::now())) health_changed();
      fail(job, kInfrastructureClass, "injected infrastructure fault (TORQ_WORKER_FAULT)");
      return;
    }
  if (!pool) {  // benchmark mode: no engine, no model needed
    if (bench_ms == 0) bench_answer(job, Clock::now());
    else {
      bench_waiting.push_back(job);
      bench_service();  // a free lane starts it now
    }
    return;
  }
  submit_or_park(job);
}

bool FleetWorker::Impl::on_message(const zmq::message_t& frame) {
  FleetMessage m;
  try {
    m = decode_fleet_message(frame.data(), frame.size(), kMaxFleetBlobBytes);
  } catch (const PipelineError& e) {
    log(std::string("bad frame from the coordinator dropped: ") + e.what());
    return true;
  }
  broker_seen = Clock::now();
  heard = true;
  switch (m.type) {
    case FleetType::kJob: on_job(m.job); break;
    case FleetType::kBlobReply: on_blob(m); break;
    case FleetType::kModelHint: on_hint(m.hash); break;
    case FleetType::kResultAck: unacked.erase(m.job_id); break;
    case FleetType::kHeartbeat: break;
    case FleetType::kDisconnect:
      log("coordinator disconnected us" + (m.reason.empty() ? "" : " (" + m.reason + ")") + "; reconnecting");
      return false;
    default: log(std::string("unexpected ") + fleet_type_name(m.type) + " from the coordinator ignored");
  }
  return true;
}

FleetWorker::FleetWorker(FleetWorkerOptions o) {
  if (!o.log) o.log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  if (o.connect.empty()) throw PipelineError("no coordinator endpoint (--connect tcp://HOST:PORT)");
  if (o.executors.empty()) throw PipelineError("no executors offered");
  if (o.capacity < 1) throw PipelineError("capacity must be at least 1");
  if (o.prefetch < 0) throw PipelineError("prefetch must not be negative");
  if (o.target.empty()) throw PipelineError("empty target");
  if (o.health_checks && o.health_model.empty()) throw PipelineError("health checks need a health-check model");
  if (o.worker_id.empty()) o.worker_id = default_worker_id();
  if (o.heartbeat_ms < 1) o.heartbeat_ms = 1;
  if (o.liveness < 1) o.liveness = 1;
  const int keys = !o.server_public_key.empty() + !o.public_key.empty() + !o.secret_key.empty();
  if (keys != 0 && keys != 3)
    throw PipelineError("CURVE needs the server's public key and this worker's public and secret keys");
  if (keys && !zmq_has("curve")) throw PipelineError("this libzmq has no CURVE support");
  std::error_code ec;
  fs::create_directories(o.cache_dir, ec);
  if (ec || !fs::is_directory(o.cache_dir))
    throw PipelineError("model cache " + o.cache_dir + ": cannot create (" + ec.message() + ")");
  impl_ = std::make_unique<Impl>(std::move(o));
}

FleetWorker::~FleetWorker() = default;

int FleetWorker::run() {
  Impl& m = *impl_;
  const milliseconds hb(m.opt.heartbeat_ms);
  const milliseconds broker_timeout(m.opt.heartbeat_ms * m.opt.liveness);
  m.connect();
  m.log("connected to " + m.opt.connect + " (target " + m.opt.target + ", capacity " +
        std::to_string(m.opt.capacity) + ")" +
        (m.pool ? "" : "; BENCHMARK MODE: executor " + m.opt.bench_executor + ", no engine"));
  std::optional<Clock::time_point> idle_since;  // draining and nothing left to run
  for (;;) {
    auto now = Clock::now();
    // Stopping: no more jobs, finish what runs, then leave.
    if (stop_.load() && !m.draining) {
      m.draining = true;
      m.log("stopping: finishing " + std::to_string(m.active.size()) + " jobs");
      m.send(encode_ready(m.ready_info()));
    }
    // Stopping while the coordinator is gone (a local worker whose parent
    // was killed gets SIGTERM from PR_SET_PDEATHSIG): nobody will take the
    // running jobs' results, so they are stopped and the worker leaves now
    // instead of holding cores and memory for their whole timeout.
    if (m.draining && !m.active.empty() && now - m.broker_seen > broker_timeout) {
      m.log("stopping: the coordinator is silent; stopping " + std::to_string(m.active.size()) +
            " running jobs (their results would have no taker)");
      m.pool.reset();
      m.log("stopped");
      return 0;
    }
    if (m.draining && m.active.empty()) {
      if (!idle_since) idle_since = now;
      if (m.unacked.empty() || now - *idle_since >= broker_timeout) {
        m.send(encode_disconnect("worker stopping"));
        // A remote coordinator gets a second to take the goodbye; a local
        // one (ipc://, our parent) has usually closed its socket already,
        // and lingering would only hold its exit up.
        m.sock->set(zmq::sockopt::linger, m.opt.connect.rfind("ipc://", 0) == 0 ? 0 : 1000);
        m.log("stopped");
        return 0;
      }
    }

    // Wait on the socket and the running jobs' pipes.
    std::vector<zmq_pollitem_t> items{{m.sock->handle(), 0, ZMQ_POLLIN, 0}};
    if (m.pool)
      for (int fd : m.pool->wait_fds()) items.push_back({nullptr, fd, ZMQ_POLLIN, 0});
    // Wake for the next heartbeat, once the coordinator has spoken (none is
    // sent before: waking for it spun at a full core while a coordinator
    // was unreachable, refused us or restarted, issue 30), or at the end of
    // the silence window, whichever comes first.
    auto wake = m.broker_seen + m.silence_window(broker_timeout) + milliseconds(1);
    if (m.heard) wake = std::min(wake, m.last_sent + hb);
    long wait_ms = std::chrono::ceil<milliseconds>(wake - now).count();
    const int deadline = m.pool ? m.pool->ms_to_deadline() : -1;
    if (deadline >= 0) wait_ms = std::min<long>(wait_ms, deadline);
    if (!m.sleeping.empty())
      wait_ms = std::min<long>(wait_ms, std::chrono::ceil<milliseconds>(m.sleeping.front().first - now).count());
    if (!m.sibling_fetches.empty()) wait_ms = std::min<long>(wait_ms, Impl::kSiblingPollMs);
    wait_ms = std::clamp<long>(wait_ms, 0, m.opt.heartbeat_ms);
    if (zmq_poll(items.data(), static_cast<int>(items.size()), wait_ms) < 0 && zmq_errno() != EINTR)
      throw PipelineError(std::string("zmq_poll: ") + zmq_strerror(zmq_errno()));

    // Coordinator traffic, for at most 50 ms (the blob chunks of a fetch
    // keep coming while they are handled) before the pool and heartbeats.
    bool reconnect = false;
    const auto recv_until = Clock::now() + milliseconds(50);
    for (int n = 0; n < 1000 && !reconnect && (n % 8 != 7 || Clock::now() < recv_until); ++n) {
      zmq::message_t frame;
      try {
        if (!m.sock->recv(frame, zmq::recv_flags::dontwait)) break;
      } catch (const zmq::error_t&) {
        break;  // EINTR
      }
      if (frame.more()) {  // the protocol is one frame per message
        while (frame.more() && m.sock->recv(frame, zmq::recv_flags::none)) {
        }
        m.log("multi-frame message from the coordinator dropped");
        continue;
      }
      reconnect = !m.on_message(frame);
    }

    // Finished jobs go back (and stay until acknowledged).
    if (m.pool) {
      for (auto& [job, r] : m.pool->service()) m.finished(job, std::move(r));
      m.report_started();
    } else
      m.bench_service();
    m.poll_sibling_fetches();
    m.poll_health();

    now = Clock::now();
    const milliseconds window = m.silence_window(broker_timeout);
    if (!reconnect && now - m.broker_seen > window) reconnect = m.on_silence(window);
    if (reconnect) m.connect();
    else if (m.heard && now - m.last_sent >= hb) m.send(encode_heartbeat());
  }
}

}  // namespace torq::runner
