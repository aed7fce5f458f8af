// The fleet broker: one ROUTER socket, one poll loop (see fleet_broker.h).
// Read FleetBroker::run top to bottom: pull jobs, dispatch by credit, poll,
// handle each frame by type, then purge silent workers and overdue leases
// and send heartbeats. Every transition is written where it happens.
#include "coordinator/fleet/fleet_broker.h"

#include <zmq.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coordinator/fleet/blob_server.h"
#include "coordinator/fleet/commit_writer.h"
#include "pipeline/wire/fleet_codec.h"

namespace torq::coordinator {

using namespace pipeline;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Where ZeroMQ looks for the ZAP handler (RFC 27).
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// Messages queued to one worker before a send fails (ZMQ_SNDHWM).
constexpr int kSendQueueMessages = 100000;

// (target, required tags joined by ',', executor)
using QueueKey = std::tuple<std::string, std::string, Executor>;

struct Job {
  // kHeld: unfinished in the store at start, waiting one liveness interval
  // for the worker that still runs it to reconnect and claim it.
  enum class State { kHeld, kQueued, kLeased, kDone };
  JobSpec spec;
  std::string encoded;      // encode_job(spec), as stored and sent
  State state = State::kQueued;
  std::string worker;       // identity of the holder while leased
  std::string holder_id;    // registered worker id of the latest lease holder (its result is the only one taken)
  // The lease's end: until the holder says the job started (STARTED), the
  // job's timeout plus the wait a prefetching worker's queue may add; from
  // then, the job's own timeout (plus the slack for its result's way back).
  Clock::time_point deadline;
  uint32_t starts = 0;      // STARTEDs of this lease (a worker retries a crashed job)
  Clock::time_point sent;   // when the current lease's JOB was sent
  uint64_t seq = 0;         // queue order
  uint32_t leases = 0;      // times sent to a worker
  // Workers (registered ids) that died or went silent holding it: a job's
  // attempts count distinct failures, not one worker's re-registrations.
  std::set<std::string> died_on;
  bool wanted = false;      // the source gave it and awaits its result
  // Its queue (queue_key of its spec), made when it is first queued: the
  // spec never changes, and the key's strings cost a job two allocations
  // and a tag sort at every queue transition.
  std::optional<QueueKey> queue;
};

struct Worker {
  std::string identity;     // ROUTER routing id
  WorkerInfo info;
  std::string curve_key;    // its CURVE public key (z85) when CURVE is on
  std::set<std::string> leased;
  Clock::time_point expiry;     // silent past this: dead
  Clock::time_point last_sent;  // heartbeat when nothing sent for an interval
  bool unreachable = false;     // a send failed: dropped in the next purge
  // Only a Good device takes jobs (LAVA: Unknown waits for its health
  // check, Bad and Maintenance take none).
  // Prefetched jobs count as credits only while the worker takes jobs at
  // all (capacity 0: draining).
  bool quarantined = false;     // its leases kept overrunning: no more jobs this run
  // Prefetch is bounded (issue 30): at most 4 jobs per unit of capacity
  // wait on a worker (a peer announcing prefetch 4096 took a whole queue).
  long prefetch() const { return std::min<long>(info.prefetch, 4L * info.capacity); }
  long credits() const {
    if (unreachable || quarantined || info.health != "Good" || info.capacity == 0) return 0;
    return static_cast<long>(info.capacity) + prefetch() - static_cast<long>(leased.size());
  }
};

std::string tag_key(const std::vector<std::string>& tags) {
  std::vector<std::string> t = tags;
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  std::string k;
  for (const auto& x : t) k += (k.empty() ? "" : ",") + x;
  return k;
}

// True when every tag of `key` (as tag_key makes it) is in `offered`.
bool offers(const std::vector<std::string>& offered, const std::string& key) {
  size_t at = 0;
  while (at < key.size()) {
    size_t end = key.find(',', at);
    if (end == std::string::npos) end = key.size();
    if (std::find(offered.begin(), offered.end(), key.substr(at, end - at)) == offered.end()) return false;
    at = end + 1;
  }
  return true;
}

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

std::string executors_csv(const std::vector<Executor>& v) {
  std::string s;
  for (Executor e : v) s += (s.empty() ? "" : ",") + std::string(executor_name(e));
  return s;
}

bool valid_z85_key(const std::string& k) {
  uint8_t raw[32];
  return k.size() == 40 && zmq_z85_decode(raw, k.c_str()) != nullptr;
}

}  // namespace

double BrokerStats::dispatch_latency_ms(double q) const {
  if (dispatch_latency_us.empty()) return -1;
  std::vector<uint32_t> v = dispatch_latency_us;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k] / 1000.0;
}

bool is_loopback_endpoint(const std::string& ep) {
  if (ep.rfind("ipc://", 0) == 0 || ep.rfind("inproc://", 0) == 0) return true;
  if (ep.rfind("tcp://", 0) != 0) return false;
  std::string host = ep.substr(6);
  const auto colon = host.rfind(':');
  if (colon == std::string::npos) return false;
  host = host.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

struct FleetBroker::Impl {
  Impl(Store& s, std::string r, BrokerOptions o, BrokerStats& st)
      : store(s),
        run(std::move(r)),
        opt(std::move(o)),
        stats(st),
        router(ctx, zmq::socket_type::router),
        blobs(s, [this](const std::string& line) { log(line); }) {}

  Store& store;
  std::string run;
  BrokerOptions opt;
  BrokerStats& stats;
  zmq::context_t ctx;
  zmq::socket_t router;
  std::optional<zmq::socket_t> zap;  // ZAP handler when CURVE is on
  std::map<std::string, std::string> id_keys;  // worker id -> the CURVE key that first registered it
  BlobServer blobs;                  // model blobs, read off this loop and sent in chunks
  const FleetBroker::Done* done = nullptr;
  const std::function<void()>* batch_done = nullptr;
  Clock::time_point next_deadline_scan;  // lease deadlines are checked every 50 ms
  static constexpr int kQuarantineOverruns = 2;
  std::map<std::string, int> overruns;   // leases that overran, by registered worker id

  std::unordered_map<std::string, Job> jobs;                             // by job id
  std::map<QueueKey, std::set<std::pair<uint64_t, std::string>>> queues;  // queued jobs by (target, executor)
  std::map<std::string, Worker> workers;                                 // registered, by identity
  uint64_t next_seq = 0;
  size_t queued = 0, leased = 0, wanted_open = 0;
  std::vector<std::string> held;     // recovered jobs (State::kHeld until released)
  // Group commit: jobs done in memory whose results are not yet in the
  // store, and acknowledgements that must wait for that commit (pump()).
  std::vector<std::pair<std::string, ExecResult>> committing;  // job id, result
  std::vector<std::pair<std::string, std::string>> acks;       // identity, job id
  // The commit spans poll rounds: results wait until 256 are pending, the
  // oldest has waited 5 ms, or no job is out (a synced write per result,
  // as millisecond jobs trickle in, was half the coordinator's time in a
  // local discover). Their acknowledgements wait with them.
  static constexpr size_t kCommitBatch = 256;
  static constexpr milliseconds kCommitDelay{5};
  std::optional<Clock::time_point> committing_since;
  // The batch the writer is committing, and the acknowledgements sent after it.
  std::vector<std::pair<std::string, ExecResult>> in_flight;
  std::vector<std::pair<std::string, std::string>> in_flight_acks;
  CommitWriter writer{store, run};
  bool commit_due(Clock::time_point now) const {
    if (committing.empty()) return !acks.empty();
    return committing.size() >= kCommitBatch || leased == 0 || now - *committing_since >= kCommitDelay;
  }
  std::optional<Clock::time_point> release_at;
  std::optional<Clock::time_point> first_sent;  // for stats.dispatch_window_s
  bool min_workers_met = false;

  void log(const std::string& s) const { opt.log(s); }
  std::string name(const std::string& identity) const {
    auto it = workers.find(identity);
    return it != workers.end() ? "worker " + it->second.info.worker_id : "peer " + hex(identity);
  }

  // ---- sending ----
  // False when the peer is gone (EHOSTUNREACH with ROUTER_MANDATORY) or
  // its queue is full; a registered worker is then marked unreachable.
  bool send(const std::string& identity, const std::string& payload) {
    auto it = workers.find(identity);
    bool ok = false;
    try {
      ok = router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait) &&
           router.send(zmq::buffer(payload), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
      ok = false;
    }
    if (it != workers.end()) {
      if (ok) it->second.last_sent = Clock::now();
      else it->second.unreachable = true;
    }
    return ok;
  }

  // ---- queue ----
  // Jobs queue by the worker target that serves them (serving_target: a
  // sim profile file is served by sim workers); embedded runs match any.
  std::string queue_target(const std::string& worker_target) const { return opt.any_target ? "*" : worker_target; }
  std::string queue_target(const JobSpec& spec) const { return opt.any_target ? "*" : serving_target(spec); }
  QueueKey queue_key(const JobSpec& spec) const { return {queue_target(spec), tag_key(spec.tags), spec.executor}; }
  const QueueKey& queue_of(Job& j) const {
    if (!j.queue) j.queue = queue_key(j.spec);
    return *j.queue;
  }
  void enqueue(Job& j) {
    j.state = Job::State::kQueued;
    j.worker.clear();
    queues[queue_of(j)].emplace(j.seq, j.spec.id);
    ++queued;
  }
  void unqueue(Job& j) {
    queues[queue_of(j)].erase({j.seq, j.spec.id});
    --queued;
  }
  // The oldest queued job this worker can run (its target, one of its
  // executors, every tag the job requires), or nullptr.
  Job* next_for(const Worker& w) {
    const std::pair<uint64_t, std::string>* best = nullptr;
    const std::string target = queue_target(w.info.target);
    for (auto& [key, q] : queues) {
      const auto& [qt, tags, e] = key;
      if (q.empty() || qt != target) continue;
      if (std::find(w.info.executors.begin(), w.info.executors.end(), e) == w.info.executors.end()) continue;
      if (!tags.empty() && !offers(w.info.tags, tags)) continue;
      if (!best || q.begin()->first < best->first) best = &*q.begin();
    }
    return best ? &jobs.at(best->second) : nullptr;
  }

  // ---- job transitions ----
  // queued -> leased to `w`, in memory; send_leases() stores and sends it.
  void take(Worker& w, Job& j) {
    unqueue(j);
    j.state = Job::State::kLeased;
    j.worker = w.identity;
    j.holder_id = w.info.worker_id;
    ++j.leases;
    w.leased.insert(j.spec.id);
    j.deadline = lease_deadline(w, j);
    j.starts = 0;
    ++leased;
  }
  // When a lease to `w` that has not started has overrun: the job's timeout
  // and the slack, and on a worker that prefetches, the time the job may
  // wait in its local queue (ceil(prefetch / capacity) jobs ahead, each up
  // to the longest timeout among its leases). STARTED replaces it with the
  // job's own timeout from the start (on_started).
  Clock::time_point lease_deadline(const Worker& w, const Job& j) const {
    auto d = Clock::now() + milliseconds(j.spec.timeout_ms) + milliseconds(opt.lease_slack_ms);
    if (w.prefetch() == 0) return d;
    uint32_t longest = j.spec.timeout_ms;
    for (const auto& id : w.leased) {
      auto it = jobs.find(id);
      if (it != jobs.end()) longest = std::max(longest, it->second.spec.timeout_ms);
    }
    const uint32_t cap = std::max<uint32_t>(1, w.info.capacity);
    return d + milliseconds(static_cast<int64_t>(longest) * ((w.prefetch() + cap - 1) / cap));
  }
  // The leases of one dispatch round: stored in one batch before any job
  // leaves, then sent.
  void send_leases(const std::vector<Job*>& round) {
    if (round.empty()) return;
    if (opt.persist_leases) {
      // With their holders: after a restart only they may claim them.
      std::vector<pipeline::Store::Lease> states;
      states.reserve(round.size());
      for (const Job* j : round) states.push_back({j->spec.id, j->encoded, j->holder_id});
      store.put_leases(run, states);
      ++stats.lease_commits;
    }
    for (Job* j : round) {
      if (j->state != Job::State::kLeased) continue;
      auto w = workers.find(j->worker);
      if (w == workers.end() || !send(j->worker, encode_job_message(j->encoded))) {
        // Never reached the worker (now marked unreachable): not an attempt.
        --j->leases;
        if (w != workers.end()) w->second.leased.erase(j->spec.id);
        --leased;
        enqueue(*j);
        continue;
      }
      j->sent = Clock::now();
      if (!first_sent) first_sent = j->sent;
      ++stats.dispatched;
    }
  }
  // leased -> queued (or -> done as error/crash once max_attempts holders died).
  void unlease(Job& j, bool holder_died) {
    auto w = workers.find(j.worker);
    if (w != workers.end()) w->second.leased.erase(j.spec.id);
    const std::string holder = w != workers.end() ? w->second.info.worker_id : hex(j.worker);
    --leased;
    if (holder_died) j.died_on.insert(holder);
    if (holder_died && j.died_on.size() >= static_cast<size_t>(opt.max_attempts)) {
      ExecResult r;
      r.job_id = j.spec.id;
      r.executor = j.spec.executor;
      r.status = Status::kError;
      r.error_class = "crash";
      r.error_message = "the job was running on " + std::to_string(j.died_on.size()) +
                        " workers that died or went silent (last: " + holder + "); not retried";
      r.worker_id = holder;
      r.attempts = j.leases;
      ++stats.crashed;
      log("job " + j.spec.id + ": " + r.error_message);
      complete(j, std::move(r));
      return;
    }
    ++stats.requeued;
    enqueue(j);
  }
  // queued|leased -> done in memory; flush() commits it, then acknowledges
  // and reports it.
  void complete(Job& j, ExecResult r) {
    r.job_id = j.spec.id;
    j.state = Job::State::kDone;
    j.worker.clear();
    if (committing.empty()) committing_since = Clock::now();
    committing.emplace_back(j.spec.id, std::move(r));
  }
  // Group commit, pipelined: the results completed since the last batch go
  // to the commit writer's thread in one synced batch (Store::commit_results)
  // while this thread goes on receiving and dispatching; only when that
  // batch is on disk are its results reported (`done`) and acknowledged,
  // with the acknowledgements gathered before it was started (duplicates of
  // results it holds, or of results already committed). One batch at a time:
  // the next waits for the one in flight. A store error propagates before
  // anything of its batch is acknowledged.
  void start_commit() {
    std::vector<Store::KeyedCommit> commits;
    commits.reserve(committing.size());
    for (const auto& [id, r] : committing) {
      const Job& j = jobs.at(id);
      commits.push_back({result_key_of(j.spec), {static_cast<int>(j.spec.first_node), r, id, j.encoded}});
    }
    in_flight.swap(committing);
    committing_since.reset();
    in_flight_acks.swap(acks);
    if (commits.empty()) return finish_commit();  // acknowledgements only: their results are on disk
    writer.start(std::move(commits));
  }
  void finish_commit() {
    if (!in_flight.empty()) {
      ++stats.result_commits;
      if (first_sent) stats.dispatch_window_s = std::chrono::duration<double>(Clock::now() - *first_sent).count();
      std::vector<std::pair<std::string, ExecResult>> batch;
      batch.swap(in_flight);
      for (const auto& [id, r] : batch) {
        ++stats.completed;
        Job& j = jobs.at(id);
        if (j.wanted) {
          j.wanted = false;
          --wanted_open;
          (*done)(j.spec, r);
        }
      }
      if (*batch_done) (*batch_done)();
    }
    for (const auto& [identity, id] : in_flight_acks) send(identity, encode_result_ack(id));
    in_flight_acks.clear();
  }
  // Collects the batch in flight once it is written, then starts the next
  // when it is due (`force`: when there is anything to commit or
  // acknowledge). `wait`: blocks until everything so far is committed and
  // acknowledged.
  void pump(bool wait, bool force = false) {
    for (;;) {
      if (writer.busy()) {
        if (!writer.done(wait)) return;
        finish_commit();
      }
      const bool any = !committing.empty() || !acks.empty();
      if (!((wait || force) ? any : commit_due(Clock::now()))) return;
      start_commit();
      if (!wait) return;
    }
  }
  void flush() { pump(true); }

  // ---- worker transitions ----
  // registered -> forgotten. Its leases go back to the queue; `died` counts
  // them as attempts (silence, bad frames, overdue leases).
  void forget(const std::string& identity, const std::string& reason, bool died, bool tell) {
    auto it = workers.find(identity);
    if (it == workers.end()) return;
    if (tell) send(identity, encode_disconnect(reason));
    const std::set<std::string> leases = it->second.leased;
    for (const auto& id : leases) unlease(jobs.at(id), died);
    workers.erase(identity);
  }

  // ---- the source ----
  // A job the source wants: new, already known (recovered), or already done.
  void want(const JobSpec& spec) {
    auto it = jobs.find(spec.id);
    if (it != jobs.end()) {
      Job& j = it->second;
      if (j.state != Job::State::kDone) {
        if (!j.wanted) ++wanted_open;
        j.wanted = true;
        return;
      }
      for (const auto& r : store.layer_results(run, result_key_of(spec), static_cast<int>(spec.first_node)))
        if (r.executor == spec.executor && r.tolerance_used == spec.tolerance && !infrastructure_error(r)) {
          ++stats.reported_from_store;
          (*done)(spec, r);
          return;
        }
      log("job " + spec.id + " is marked done but has no stored result for its tolerance; running it again");
      jobs.erase(it);
    }
    Job j;
    j.spec = spec;
    j.encoded = encode_job(spec);
    j.seq = next_seq++;
    j.wanted = true;
    ++wanted_open;
    enqueue(jobs.emplace(spec.id, std::move(j)).first->second);
  }

  // ---- device tags ----
  // Queued jobs whose required tags no registered worker of their target
  // and executor offers, once the workers had missing_tags_wait_ms to come:
  // said once per kind; true when the run must stop (fail_on_missing_tags).
  std::optional<Clock::time_point> tags_check_from;
  Clock::time_point next_tags_check;
  std::set<QueueKey> tags_reported;
  bool missing_tags(Clock::time_point now) {
    if (!tags_check_from) tags_check_from = now + milliseconds(opt.missing_tags_wait_ms);
    if (now < *tags_check_from || now < next_tags_check) return false;
    next_tags_check = now + milliseconds(1000);
    bool stop = false;
    for (const auto& [key, q] : queues) {
      const auto& [target, tags, e] = key;
      if (q.empty() || tags.empty()) continue;
      bool served = false;
      for (const auto& [id, w] : workers)
        served = served || (queue_target(w.info.target) == target && offers(w.info.tags, tags) &&
                            std::find(w.info.executors.begin(), w.info.executors.end(), e) != w.info.executors.end());
      if (served || !tags_reported.insert(key).second) continue;
      stats.missing_tags += (stats.missing_tags.empty() ? "" : "; ") + std::string("no registered worker of target ") +
                            target + " offers tags [" + tags + "] for " + executor_name(e) + " (" +
                            std::to_string(q.size()) + " jobs wait)";
      log("error: " + stats.missing_tags + (opt.fail_on_missing_tags ? "; stopping" : "; waiting for such a worker"));
      stop = stop || opt.fail_on_missing_tags;
    }
    return stop;
  }

  // ---- handlers, one per message type ----
  // The worker's device health as the summary lists it; a transition is
  // logged and written to the store with its reason and time.
  void note_health(const WorkerInfo& info) {
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

  // A worker id is a name the peer gives itself. A connection keeps the id
  // it registered with, and under CURVE an id belongs to the first key that
  // registered it this run: another key cannot take over its leases and
  // results (issue 30). Returns why `info` is refused, or "".
  std::string refuse_id(const std::string& identity, const WorkerInfo& info, const std::string& key) {
    auto it = workers.find(identity);
    if (it != workers.end() && it->second.info.worker_id != info.worker_id)
      return "READY changes this connection's worker id from " + it->second.info.worker_id + " to " + info.worker_id;
    if (key.empty()) return "";
    auto [k, fresh] = id_keys.emplace(info.worker_id, key);
    if (!fresh && k->second != key)
      return "worker id " + info.worker_id + " is registered with another CURVE key (" + k->second + "), not " + key;
    return "";
  }

  void on_ready(const std::string& identity, const WorkerInfo& info, const std::string& key) {
    if (const std::string why = refuse_id(identity, info, key); !why.empty()) return bad(identity, why);
    note_health(info);
    auto it = workers.find(identity);
    if (it != workers.end()) {  // capacity change (0: draining), health or new offer; or a repeat
      const WorkerInfo was = std::exchange(it->second.info, info);
      if (was.capacity != info.capacity || was.prefetch != info.prefetch || was.health != info.health ||
          was.executors != info.executors || was.tags != info.tags || was.target != info.target)
        log("worker " + info.worker_id + " updated: capacity " + std::to_string(info.capacity) + ", prefetch " +
            std::to_string(info.prefetch) + ", health " + info.health);
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
  }

  // Whether the worker registered as `worker_id` holds `j`, or last held it:
  // its lease, or before a restart the lease stored with it. A job recovered
  // from a store written before holders were stored has none; the first
  // worker that claims it within the hold interval does.
  static bool may_hold(const Job& j, const std::string& worker_id) {
    if (j.state == Job::State::kHeld && j.holder_id.empty()) return true;
    return !j.holder_id.empty() && j.holder_id == worker_id;
  }

  // STARTED from the worker holding the lease: from now the job has its own
  // timeout (and the slack) to answer. A worker retries a job whose process
  // crashed, and says so again: up to max_attempts starts of one lease
  // renew it, no more (a holder cannot keep a lease forever). Any other
  // STARTED (a lease already requeued, a peer that does not hold it)
  // changes nothing.
  void on_started(Worker& w, const std::string& id) {
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

  void on_result(Worker& w, ExecResult r) {
    auto it = jobs.find(r.job_id);
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
      if (j.worker == w.identity) stats.dispatch_latency_us.push_back(static_cast<uint32_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - j.sent).count()));
      auto holder = workers.find(j.worker);
      if (holder != workers.end()) holder->second.leased.erase(j.spec.id);
      --leased;
    } else if (j.state == Job::State::kQueued) {
      unqueue(j);
    }
    r.attempts = std::max<uint32_t>(1, j.leases);
    const std::string id = j.spec.id;
    complete(j, std::move(r));
    acks.emplace_back(w.identity, id);
  }

  // Blobs whose store read has finished go out (chunks or whole).
  void serve_blobs() {
    stats.blobs_served += blobs.serve([this](const std::string& id, const std::string& msg) { return send(id, msg); },
                                      [this](const std::string& id, const std::string& why) { bad(id, why); });
  }

  // A frame that breaks the protocol: log, drop, disconnect the sender.
  void bad(const std::string& identity, const std::string& why) {
    ++stats.bad_frames;
    log("bad frame from " + name(identity) + ": " + why + "; dropped, peer disconnected");
    if (workers.count(identity)) forget(identity, "protocol error: " + why, true, true);
    else send(identity, encode_disconnect("protocol error: " + why));
  }

  // The CURVE public key (z85) the ZAP handler authenticated the message's
  // sender with ("User-Id"), or "" without CURVE.
  std::string curve_key_of(const zmq::message_t& frame) const {
    if (!zap) return "";
    const char* uid = zmq_msg_gets(frame.handle(), "User-Id");
    return uid ? std::string(uid) : std::string();
  }

  // One ROUTER message: [identity][envelope].
  void on_frames(const std::string& identity, const std::vector<zmq::message_t>& frames, size_t count) {
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

  // Receives one message; false when none is waiting.
  bool receive_one() {
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

  // ZAP (RFC 27): allow CURVE clients whose public key is on the list.
  void serve_zap() {
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
};

FleetBroker::FleetBroker(Store& store, std::string run, BrokerOptions opts) {
  if (!opts.log) opts.log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  if (opts.heartbeat_ms < 1) opts.heartbeat_ms = 1;
  if (opts.liveness < 1) opts.liveness = 1;
  if (opts.max_attempts < 1) opts.max_attempts = 1;
  const bool curve = !opts.curve_secret_key.empty();
  if (!curve && !opts.insecure && !is_loopback_endpoint(opts.bind))
    throw PipelineError("refusing to bind " + opts.bind +
                        " without CURVE keys: use a loopback address, give keys, or pass --insecure");
  impl_ = std::make_unique<Impl>(store, std::move(run), std::move(opts), stats_);
  Impl& m = *impl_;
  try {
    if (curve) {
      if (!zmq_has("curve")) throw PipelineError("this libzmq has no CURVE support");
      if (!valid_z85_key(m.opt.curve_secret_key)) throw PipelineError("bad CURVE secret key (need 40 z85 chars)");
      for (const auto& k : m.opt.allowed_client_keys)
        if (!valid_z85_key(k)) throw PipelineError("bad CURVE public key on the allow-list: '" + k + "'");
      m.zap.emplace(m.ctx, zmq::socket_type::rep);
      m.zap->set(zmq::sockopt::linger, 0);
      m.zap->bind(kZapEndpoint);
      m.router.set(zmq::sockopt::curve_server, true);
      m.router.set(zmq::sockopt::curve_secretkey, m.opt.curve_secret_key);
      m.router.set(zmq::sockopt::zap_domain, "torq");
    }
    m.router.set(zmq::sockopt::linger, 500);
    m.router.set(zmq::sockopt::router_mandatory, true);
    // A full queue to a live worker fails a send and drops the worker as
    // unreachable. What one worker is owed is bounded by the protocol (a JOB
    // per credit, an ACK per result, a few blob chunks, heartbeats), but
    // ZeroMQ's default of 1000 messages is less than the ACKs and JOBs of a
    // round to a busy worker of capacity 256 can reach (the fleet bench lost
    // a worker so when they were sent back to back).
    m.router.set(zmq::sockopt::sndhwm, kSendQueueMessages);
    // Far larger frames never reach the application (ZeroMQ drops the peer).
    m.router.set(zmq::sockopt::maxmsgsize,
                 static_cast<int64_t>(std::max<size_t>(m.opt.max_inbound_bytes * 4, size_t{64} << 20)));
    m.router.bind(m.opt.bind);
    endpoint_ = m.router.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    throw PipelineError("cannot bind " + m.opt.bind + ": " + e.what());
  }
  // Resume: done jobs stay done; unfinished ones are held for one liveness
  // interval (their workers may reconnect and claim them), then queued first.
  for (auto& [id, st] : store.jobs(m.run)) {
    Job j;
    j.spec = decode_job(st.encoded.data(), st.encoded.size());
    j.encoded = st.encoded;
    j.holder_id = st.holder;  // '' for a job stored queued, or by an older build
    j.seq = m.next_seq++;
    auto& stored = m.jobs.emplace(id, std::move(j)).first->second;
    if (st.state == 'D') {
      stored.state = Job::State::kDone;
    } else {
      stored.state = Job::State::kHeld;
      m.held.push_back(id);
      ++stats_.recovered;
    }
  }
  if (stats_.recovered)
    m.log("resuming: " + std::to_string(stats_.recovered) + " unfinished jobs, queued again unless their workers " +
          "claim them within " + std::to_string(m.opt.heartbeat_ms * m.opt.liveness) + " ms");
}

FleetBroker::~FleetBroker() {
  if (!impl_) return;
  std::vector<std::string> ids;
  for (auto& [id, w] : impl_->workers) ids.push_back(id);
  for (auto& id : ids) impl_->send(id, encode_disconnect("coordinator shutting down"));
}

size_t FleetBroker::pending() const {
  size_t held = 0;
  for (const auto& id : impl_->held) held += impl_->jobs.at(id).state == Job::State::kHeld;
  return impl_->queued + impl_->leased + held;
}

bool FleetBroker::run(const Source& next, const Done& done, const std::function<void()>& batch_done) {
  Impl& m = *impl_;
  m.done = &done;
  m.batch_done = &batch_done;
  const milliseconds hb(m.opt.heartbeat_ms);
  std::optional<Clock::time_point> stop_by;
  if (!m.release_at)
    m.release_at = Clock::now() + (m.opt.recovered_hold_ms >= 0 ? milliseconds(m.opt.recovered_hold_ms)
                                                                : hb * m.opt.liveness);
  for (;;) {
    auto now = Clock::now();
    // Recovered jobs nobody claimed go back to the queue.
    if (!m.held.empty() && now >= *m.release_at) {
      for (const auto& id : m.held)
        if (Job& j = m.jobs.at(id); j.state == Job::State::kHeld) m.enqueue(j);
      m.held.clear();
    }
    // Winding down: no more dispatch; wait for the leased jobs, up to the grace period.
    if ((stop_.load() || (m.opt.stop_flag && m.opt.stop_flag->load()) ||
         (m.opt.workers_gone && m.opt.workers_gone->load())) &&
        !stop_by) {
      stop_by = now + milliseconds(m.opt.grace_ms);
      m.log("stop requested: dispatching stopped, waiting up to " + std::to_string(m.opt.grace_ms) + " ms for " +
            std::to_string(m.leased) + " leased jobs");
    }
    if (stop_by && (m.leased == 0 || now >= *stop_by)) {
      m.flush();
      return false;
    }
    if (!stop_by && m.missing_tags(now)) {
      stop_by = now;  // opt.fail_on_missing_tags: nothing can serve them
      continue;
    }

    // Pull from the source, hand out jobs by credit (one per worker per round).
    if (!stop_by) {
      bool source_empty = false;
      while (m.queued < m.opt.max_queued) {
        auto j = next();
        if (!j) {
          source_empty = true;
          break;
        }
        m.want(*j);
      }
      if (source_empty && m.queued == 0 && m.leased == 0 && m.wanted_open == 0 && m.held.empty()) {
        m.flush();
        return true;
      }
      std::vector<Job*> round;
      if (!m.min_workers_met) m.min_workers_met = m.workers.size() >= static_cast<size_t>(std::max(0, m.opt.min_workers));
      // Beyond its capacity a worker takes prefetched jobs only up to its
      // share of the work in hand (issue 30): no peer holds more than that.
      size_t serving = 0;
      for (auto& [id, w] : m.workers) serving += w.credits() > 0 || !w.leased.empty();
      const size_t share = serving ? (m.queued + m.leased + serving - 1) / serving : 0;
      for (bool progress = m.min_workers_met; progress && m.queued > 0;) {
        progress = false;
        for (auto& [id, w] : m.workers)
          if (w.credits() > 0 && (w.leased.size() < w.info.capacity || w.leased.size() < share))
            if (Job* j = m.next_for(w)) {
              m.take(w, *j);
              round.push_back(j);
              progress = true;
            }
      }
      m.send_leases(round);
    }

    // Wait for traffic until the next heartbeat or expiry is due.
    auto wake = now + hb;
    if (!m.held.empty()) wake = std::min(wake, *m.release_at);
    for (auto& [id, w] : m.workers) wake = std::min({wake, w.expiry, w.last_sent + hb});
    if (m.blobs.loading()) wake = std::min(wake, now + milliseconds(5));  // a blob being read: look again soon
    // A commit due by its delay; while a batch is being written, the
    // writer's fd wakes the loop instead (a past deadline would spin it).
    if (m.committing_since && !m.writer.busy()) wake = std::min(wake, *m.committing_since + Impl::kCommitDelay);
    const long wait_ms = std::max<long>(0, std::chrono::duration_cast<milliseconds>(wake - now).count());
    // The router, the ZAP handler if any, and the commit writer's batch.
    zmq_pollitem_t items[3] = {{m.router.handle(), 0, ZMQ_POLLIN, 0}};
    int n_items = 1, zap_item = -1;
    if (m.zap) items[zap_item = n_items++] = {m.zap->handle(), 0, ZMQ_POLLIN, 0};
    if (m.writer.busy()) items[n_items++] = {nullptr, m.writer.fd(), ZMQ_POLLIN, 0};
    if (zmq_poll(items, n_items, wait_ms) < 0 && zmq_errno() != EINTR)
      throw PipelineError(std::string("zmq_poll: ") + zmq_strerror(zmq_errno()));
    if (zap_item >= 0 && (items[zap_item].revents & ZMQ_POLLIN)) m.serve_zap();
    // Handle what arrived (bounded, so a flood cannot starve the purge).
    for (int n = 0; n < 10000 && m.receive_one(); ++n) {
    }
    m.pump(false);  // collect a written batch; start the next when due
    m.serve_blobs();

    // Purge: silent workers and overdue leases; then heartbeats.
    now = Clock::now();
    std::vector<std::pair<std::string, std::string>> dead;  // identity, why
    const bool scan_leases = now >= m.next_deadline_scan;
    if (scan_leases) m.next_deadline_scan = now + milliseconds(50);
    for (auto& [id, w] : m.workers) {
      if (w.unreachable) {
        dead.emplace_back(id, "connection lost");
        continue;
      }
      if (now >= w.expiry) {
        dead.emplace_back(id, "silent for " + std::to_string(m.opt.heartbeat_ms * m.opt.liveness) + " ms");
        continue;
      }
      if (scan_leases)
        for (const auto& jid : w.leased)
          if (now >= m.jobs.at(jid).deadline) {
            dead.emplace_back(id, "job " + jid + " overran its timeout");
            // A worker whose leases keep overrunning (one that takes jobs
            // and never answers, re-registering when dropped) is
            // quarantined: it gets no more jobs this run (issue 30).
            if (++m.overruns[w.info.worker_id] == Impl::kQuarantineOverruns &&
                std::find(stats_.quarantined.begin(), stats_.quarantined.end(), w.info.worker_id) ==
                    stats_.quarantined.end()) {
              stats_.quarantined.push_back(w.info.worker_id);
              m.log("worker " + w.info.worker_id + " quarantined: " + std::to_string(Impl::kQuarantineOverruns) +
                    " of its leases overran their timeout; it gets no more jobs this run");
            }
            break;
          }
    }
    for (auto& [id, why] : dead) {
      ++stats_.workers_expired;
      const size_t held = m.workers.at(id).leased.size();
      m.log(m.name(id) + " expired (" + why + "); " + std::to_string(held) + " leased jobs back to the queue");
      m.forget(id, "expired: " + why, true, true);
    }
    m.pump(false, !dead.empty());  // and at once for jobs the purge ended as error/crash
    for (auto& [id, w] : m.workers)
      if (now - w.last_sent >= hb) m.send(id, encode_heartbeat());
  }
}

}  // namespace torq::coordinator
