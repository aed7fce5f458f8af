// The fleet worker's poll loop (see fleet_worker.h): one DEALER socket and
// the LocalPool's child pipes, polled together.
#include "worker/runner/fleet_worker.h"
#include "pipeline/base/file_bytes.h"

#include <fcntl.h>
#include <unistd.h>

#include <zmq.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "pipeline/wire/fleet_codec.h"
#include "pipeline/model/model_import.h"
#include "worker/runner/blob_fetch.h"
#include "worker/runner/board_health.h"
#include "worker/runner/cache_claim.h"
#include "worker/runner/job_runner.h"
#include "worker/runner/local_pool.h"

namespace torq::runner {

namespace fs = std::filesystem;
using namespace pipeline;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Model blobs come in chunks of this size, this many asked for at a time
// (blob_fetch.h): each is a few ms of the poll loop's time.
constexpr uint32_t kBlobChunkBytes = uint32_t{1} << 20;
constexpr int kBlobWindow = 8;
// How often a worker whose model another process sharing the cache is
// fetching looks whether that fetch ended.
constexpr int kSiblingPollMs = 50;
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

struct FleetWorker::Impl {
  explicit Impl(FleetWorkerOptions o) : opt(std::move(o)), health(health_options(opt)), infra(infra_faults()) {
    if (opt.bench_executor.empty()) pool.emplace(pool_options(opt));
    else bench_ms = parse_bench_executor(opt.bench_executor);
  }

  static LocalPoolOptions pool_options(const FleetWorkerOptions& o) {
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

  FleetWorkerOptions opt;
  std::optional<LocalPool> pool;  // real jobs; none in benchmark mode
  int bench_ms = 0;               // benchmark mode: answer after this many ms
  std::deque<std::pair<Clock::time_point, JobSpec>> sleeping;  // benchmark mode, by due time: at most --capacity
  std::deque<JobSpec> bench_waiting;  // benchmark mode: prefetched beyond --capacity, in arrival order
  zmq::context_t ctx;
  std::optional<zmq::socket_t> sock;
  std::map<std::string, std::vector<JobSpec>> parked;  // model hash -> jobs waiting for its blob
  std::map<std::string, std::unique_ptr<BlobFetch>> fetches;  // model hash -> its blob coming in chunks
  std::map<std::string, CacheClaim> claims;            // model hash -> this worker's claim on fetching it
  std::set<std::string> sibling_fetches;               // models another process sharing the cache fetches
  Clock::time_point siblings_checked;
  std::set<std::string> active;                        // job ids parked or in the pool
  std::set<std::string> started;                       // of those, the ones a lane took (STARTED sent)
  std::map<std::string, std::string> unacked;          // job id -> RESULT message
  std::set<std::string> verified;                      // cached models checked this process
  std::set<std::string> timed_out_once;                // jobs whose first timeout here was taken for the board's
  Clock::time_point broker_seen, last_sent;
  bool heard = false;  // the coordinator has spoken on the current socket
  int unheard = 0;     // announces since, unanswered: each waits twice as long
  bool draining = false;
  BoardHealth health;
  std::vector<std::string> infra;     // injected one-shot infrastructure faults (test aid)
  std::string health_job;             // id of the running health check
  int health_seq = 0;

  void log(const std::string& s) const { opt.log("[worker " + opt.worker_id + "] " + s); }

  void send(const std::string& payload) {
    try {
      if (!sock->send(zmq::buffer(payload), zmq::send_flags::dontwait))
        log("send queue full (" + std::to_string(kSendQueue) + " messages): a message to the coordinator was dropped");
    } catch (const zmq::error_t& e) {
      log(std::string("send failed: ") + e.what());  // the next reconnect resends what matters
    }
    last_sent = Clock::now();
  }

  WorkerInfo ready_info() const {
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

  // ---- health (LAVA's model) ----
  // The coordinator hears of a change before any result that caused it:
  // it must not lease the requeued job straight back to a device that is
  // no longer Good.
  void health_changed() {
    log("health " + health.state() + ": " + health.reason());
    send(encode_ready(ready_info()));
  }
  // The check: the built-in demo CNN, every layer where the compiler
  // decides (the executors this device accepts), against the fp32 host
  // reference computed here; it passes when it runs and matches.
  // Why the model cache takes no write ("" when it does): a probe file of
  // 64 KiB written and removed. A full or read-only disk fails every fetch
  // (issue 30); the device is then Bad, not a source of fetch errors.
  std::string cache_unwritable() const {
    const std::string probe = opt.cache_dir + "/.health-probe." + std::to_string(getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return "model cache " + opt.cache_dir + " takes no file: " + std::strerror(errno);
    static const std::string block(64 * 1024, '\0');
    size_t written = 0;
    int err = 0;
    while (written < block.size()) {  // a short write is followed by the error that ended it
      const ssize_t n = ::write(fd, block.data() + written, block.size() - written);
      if (n <= 0) {
        err = n < 0 ? errno : ENOSPC;
        break;
      }
      written += static_cast<size_t>(n);
    }
    ::close(fd);
    ::unlink(probe.c_str());
    if (written < block.size()) return "model cache " + opt.cache_dir + " takes no write: " + std::strerror(err);
    return "";
  }
  void fail_health_check(const std::string& why) {
    health.check_started();
    log("health check failed: " + why);
    if (health.check_done(false, why, Clock::now())) health_changed();
  }
  void start_health_check() {
    if (const std::string why = cache_unwritable(); !why.empty()) return fail_health_check(why);
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
  void health_check_done(const ExecResult& r) {
    health_job.clear();
    const bool passed = r.status != Status::kError && r.pcc >= 0.999;
    const std::string why = r.status == Status::kError ? r.error_class + ": " + r.error_message
                                                      : "pcc " + std::to_string(r.pcc) + " < 0.999";
    if (health.check_done(passed, why, Clock::now())) health_changed();
  }
  // A finished job: the health check's result stays here; an
  // infrastructure error makes the device Unknown (checked at once).
  void finished(const JobSpec& job, ExecResult r) {
    if (job.id == health_job) return health_check_done(r);
    if (opt.timeouts_check_device && r.status == Status::kError && r.error_class == "timeout" &&
        timed_out_once.insert(job.id).second) {
      r.error_class = kInfrastructureClass;
      r.error_message = "timed out on the board, which is checked before its next job; the job is requeued (" +
                        r.error_message + ")";
    }
    const bool infra_error = infrastructure_error(r) && r.error_class != kDeclinedClass;
    const std::string why = job.id + ": " + r.error_message;
    if (infra_error && health.infrastructure_error(why, Clock::now())) health_changed();
    send_result(job, std::move(r));
  }
  void poll_health() {
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

  // A fresh connection: READY, then everything the coordinator may have lost.
  void connect() {
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
  // The coordinator silent for the liveness window. Once it has spoken on
  // this socket, silence means it died or restarted: a fresh connection.
  // Before that, ZeroMQ is still connecting (a coordinator starting slower
  // than this worker) and what is queued would be lost with the socket, the
  // first READY among it. Only the READY is sent again on the same socket
  // (for a coordinator that took it and died before answering), backing off
  // to 64 windows; no heartbeat is queued meanwhile, so a worker waiting all
  // night queues a few hundred READYs. (Results and blob requests follow
  // jobs, which only a coordinator that has spoken sends.)
  milliseconds silence_window(milliseconds liveness) const {
    return heard ? liveness : liveness * (1 << std::min(unheard, 6));
  }
  bool on_silence(milliseconds window) {
    if (heard) {
      log("coordinator silent for " + std::to_string(window.count()) + " ms; reconnecting");
      return true;
    }
    if (++unheard == 1) log("no answer from the coordinator yet; READY sent again, then at growing intervals");
    send(encode_ready(ready_info()));
    broker_seen = Clock::now();
    return false;
  }

  // True when <cache>/<hash>.onnx is present and its SHA-256 matches (or,
  // with a trusted cache, when it is present).
  bool have_model(const std::string& hash) {
    if (verified.count(hash)) return true;
    const std::string path = opt.cache_dir + "/" + hash + ".onnx";
    if (opt.trusted_cache) {
      std::error_code ec;
      if (!fs::is_regular_file(path, ec)) return false;
      verified.insert(hash);
      return true;
    }
    const base::MappedFile file(path);  // hashed where it lies: no 30 MB copy
    if (!file.data()) return false;
    if (sha256_hex(file.data(), file.size()) != hash) {
      log("cached model " + path + " is corrupt; fetching it again");
      std::error_code ec;
      fs::remove(path, ec);
      return false;
    }
    verified.insert(hash);
    return true;
  }

  void store_model(const std::string& hash, const std::string& bytes) {
    const std::string path = opt.cache_dir + "/" + hash + ".onnx";
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!f) throw PipelineError(tmp + ": cannot write the model cache");
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) throw PipelineError(path + ": cannot write the model cache (" + ec.message() + ")");
    verified.insert(hash);
  }

  void send_result(const JobSpec& job, ExecResult r) {
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

  // STARTED for every job a lane took since the last call (the coordinator's
  // lease then runs for the job's own timeout; issue 30). The health
  // check is this worker's own job.
  void report_started() {
    for (auto& id : pool->take_started()) {
      if (id == health_job || !active.count(id)) continue;
      started.insert(id);
      send(encode_job_started(id));
    }
  }

  void fail(const JobSpec& job, const std::string& cls, const std::string& msg) {
    ExecResult r;
    r.executor = job.executor;
    r.status = Status::kError;
    r.error_class = cls;
    r.error_message = msg;
    send_result(job, std::move(r));
  }

  // Benchmark mode: the result a job gets without running anything.
  void bench_answer(const JobSpec& job, Clock::time_point began) {
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
  // Benchmark mode: answers the sleeping jobs that are due, then starts
  // the prefetched ones a lane is free for. Like a lane, a sleep runs one
  // job at a time: --capacity of them at once, so --prefetch cannot turn
  // the sleep into more parallel work than the worker offers.
  void bench_service() {
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
  // Benchmark mode: a lane starts sleeping on the job (STARTED, as a pool
  // lane says it: its timeout and lease run from now).
  void bench_sleep(JobSpec job, Clock::time_point now) {
    started.insert(job.id);
    send(encode_job_started(job.id));
    sleeping.emplace_back(now + milliseconds(bench_ms), std::move(job));
  }

  // ---- handlers ----
  void on_job(const JobSpec& job) {
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

  // To the pool once every model the job reads is in the cache (its model,
  // and the fp32 original of an end-to-end comparison); else parked on the
  // first missing one, whose fetch starts unless it is under way.
  void submit_or_park(const JobSpec& job) {
    for (const std::string* hash : {&job.model_hash, &job.original_hash}) {
      if (hash->empty() || have_model(*hash)) continue;
      if (!fetch_under_way(*hash) && !fetch_or_wait(*hash)) continue;  // (under way: a hint's fetch)
      parked[*hash].push_back(job);
      return;
    }
    pool->submit(job);
  }

  // Fetched here, or by the process sharing the cache that holds its claim.
  bool fetch_under_way(const std::string& hash) const {
    return fetches.count(hash) != 0 || sibling_fetches.count(hash) != 0;
  }

  // A model missing from the cache: fetched here when this worker can claim
  // it (cache_claim.h), else left to the process sharing the cache that
  // holds the claim. False when the model turned up meanwhile (that process
  // finished between have_model() and the claim).
  bool fetch_or_wait(const std::string& hash) {
    std::optional<CacheClaim> claim = CacheClaim::try_take(opt.cache_dir, hash);
    if (!claim) {
      sibling_fetches.insert(hash);
      log("model " + hash.substr(0, 16) + ": another process sharing the cache " + opt.cache_dir +
          " is fetching it; its jobs wait for that");
      return true;
    }
    if (have_model(hash)) return false;
    start_fetch(hash, std::move(*claim));
    return true;
  }

  void start_fetch(const std::string& hash, CacheClaim claim) {
    claims.insert_or_assign(hash, std::move(claim));
    fetches[hash] = std::make_unique<BlobFetch>(hash, opt.cache_dir, kBlobChunkBytes, kBlobWindow,
                                                [this](const std::string& msg) { send(msg); });
  }

  // The models other processes sharing the cache were fetching: once their
  // claim is free, the model is in the cache (verified like any cached
  // model) and its jobs go on, or it is not (that fetch failed, or its
  // process died) and this worker fetches it.
  void poll_sibling_fetches() {
    if (sibling_fetches.empty() || Clock::now() - siblings_checked < milliseconds(kSiblingPollMs)) return;
    siblings_checked = Clock::now();
    std::vector<std::string> ended;
    for (const std::string& hash : sibling_fetches) {
      std::optional<CacheClaim> claim = CacheClaim::try_take(opt.cache_dir, hash);
      if (!claim) continue;
      ended.push_back(hash);
      if (!have_model(hash)) {
        log("model " + hash.substr(0, 16) + ": the other process let go without it; fetching it here");
        start_fetch(hash, std::move(*claim));
      }
    }
    for (const std::string& hash : ended) {
      sibling_fetches.erase(hash);
      if (fetches.count(hash)) continue;
      log("cached model " + hash.substr(0, 16) + " (fetched by another process sharing the cache)");
      std::vector<JobSpec> jobs = std::move(parked[hash]);
      parked.erase(hash);
      for (const auto& j : jobs) submit_or_park(j);
    }
  }

  // Jobs on this model are coming: fetch it now (or let the process sharing
  // the cache that fetches it do so), while the jobs before them run. A
  // benchmark-mode worker needs no model.
  void on_hint(const std::string& hash) {
    if (!pool || fetch_under_way(hash) || have_model(hash)) return;
    fetch_or_wait(hash);
  }

  // One chunk of a blob being fetched; when it is complete (or failed), its
  // parked jobs go to the pool (or fail as error/fetch).
  void on_blob(const FleetMessage& m) {
    auto f = fetches.find(m.hash);
    if (f == fetches.end()) return;  // not fetching it (a late or duplicate reply)
    const BlobFetch::State state = f->second->on_chunk(m);
    if (state == BlobFetch::State::kRunning) return;
    const std::string problem = state == BlobFetch::State::kFailed ? f->second->error() : "";
    if (problem.empty()) {
      verified.insert(m.hash);
      log("cached model " + m.hash.substr(0, 16) + " (" + std::to_string(f->second->total()) + " bytes)");
    }
    fetches.erase(f);
    claims.erase(m.hash);  // after the rename: a waiting process finds the model
    std::vector<JobSpec> jobs = std::move(parked[m.hash]);
    parked.erase(m.hash);
    // A model that cannot be fetched or cached (a full or read-only disk,
    // a corrupt transfer) says nothing about the op (issue 30): its jobs go
    // back as infrastructure errors (requeued, not attempts) and the device
    // checks its health, which probes the cache, before it takes another.
    if (!problem.empty() && health.infrastructure_error("model " + m.hash.substr(0, 16) + ": " + problem, Clock::now()))
      health_changed();
    for (const auto& j : jobs) {
      if (problem.empty()) submit_or_park(j);
      else fail(j, kInfrastructureClass, "model " + m.hash.substr(0, 16) + " could not be fetched: " + problem);
    }
  }

  // One message from the coordinator. Returns false when it asks us to
  // reconnect (DISCONNECT).
  bool on_message(const zmq::message_t& frame) {
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
};

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
    if (!m.sibling_fetches.empty()) wait_ms = std::min<long>(wait_ms, kSiblingPollMs);
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
