// The fleet broker's state and its helpers (fleet_broker.h is the API):
// the private header of fleet_broker.cc (the poll loop, FleetBroker::run),
// broker_queue.cc (the job queue, leases and the group commit) and
// broker_peers.cc (the handlers of the workers' messages). Include nowhere
// else.
#pragma once

#include <zmq.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "coordinator/fleet/blob_server.h"
#include "coordinator/fleet/commit_writer.h"
#include "coordinator/fleet/fleet_broker.h"
#include "pipeline/wire/fleet_codec.h"

namespace torq::coordinator {

namespace broker {

using namespace ::torq::pipeline;  // NOLINT(google-build-using-namespace): the broker's three sources only
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

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
  // Takes jobs (and so MODEL_HINTs): reachable, not quarantined, Good and
  // not draining.
  bool takes_jobs() const { return !unreachable && !quarantined && info.health == "Good" && info.capacity > 0; }
  long credits() const {
    if (!takes_jobs()) return 0;
    return static_cast<long>(info.capacity) + prefetch() - static_cast<long>(leased.size());
  }
};

std::string tag_key(const std::vector<std::string>& tags);
// True when every tag of `key` (as tag_key makes it) is in `offered`.
bool offers(const std::vector<std::string>& offered, const std::string& key);
std::string hex(const std::string& s);
std::string executors_csv(const std::vector<Executor>& v);
bool valid_z85_key(const std::string& k);

}  // namespace broker

using namespace broker;  // NOLINT(google-build-using-namespace)

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

  // Jobs queued, leased, held or done but not yet committed, by job id. A
  // job leaves once its result is committed (retire()): the table stays
  // bounded by the queue and the leases, not by the run (issue 32: a
  // million-job run). The store has every done job.
  std::unordered_map<std::string, Job> jobs;
  // Hashes of the ids of the jobs retired this run or stored done: a late
  // duplicate RESULT is told from a stranger's, and a job the source wants
  // again is answered from the store. A hash collision only costs a store
  // lookup that finds nothing (the job then runs) or an acknowledgement.
  std::unordered_set<uint64_t> done_ids;
  static uint64_t id_hash(const std::string& id) { return std::hash<std::string>{}(id); }
  bool was_done(const std::string& id) const { return done_ids.count(id_hash(id)) > 0; }
  // A committed job leaves the table.
  void retire(std::unordered_map<std::string, Job>::iterator it);
  std::map<QueueKey, std::set<std::pair<uint64_t, std::string>>> queues;  // queued jobs by (target, executor)
  std::map<std::string, Worker> workers;                                 // registered, by identity
  uint64_t next_seq = 0;
  size_t queued = 0, leased = 0, wanted_open = 0;
  std::vector<std::string> held;     // recovered jobs (State::kHeld until released)
  size_t held_count() const;         // those still held (not claimed, done or retired since)
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
  bool commit_due(Clock::time_point now) const;
  std::optional<Clock::time_point> release_at;
  std::optional<Clock::time_point> first_sent;  // for stats.dispatch_window_s
  bool min_workers_met = false;

  void log(const std::string& s) const { opt.log(s); }
  std::string name(const std::string& identity) const;

  // ---- sending ----
  // False when the peer is gone (EHOSTUNREACH with ROUTER_MANDATORY) or
  // its queue is full; a registered worker is then marked unreachable.
  bool send(const std::string& identity, const std::string& payload);

  // ---- queue ----
  // Jobs queue by the worker target that serves them (serving_target: a
  // sim profile file is served by sim workers); embedded runs match any.
  std::string queue_target(const std::string& worker_target) const { return opt.any_target ? "*" : worker_target; }
  std::string queue_target(const JobSpec& spec) const { return opt.any_target ? "*" : serving_target(spec); }
  QueueKey queue_key(const JobSpec& spec) const { return {queue_target(spec), tag_key(spec.tags), spec.executor}; }
  const QueueKey& queue_of(Job& j) const;
  void enqueue(Job& j);
  void unqueue(Job& j);
  // The oldest queued job this worker can run (its target, one of its
  // executors, every tag the job requires), or nullptr.
  Job* next_for(const Worker& w);

  // ---- job transitions ----
  // queued -> leased to `w`, in memory; send_leases() stores and sends it.
  void take(Worker& w, Job& j);
  // When a lease to `w` that has not started has overrun: the job's timeout
  // and the slack, and on a worker that prefetches, the time the job may
  // wait in its local queue (ceil(prefetch / capacity) jobs ahead, each up
  // to the longest timeout among its leases). STARTED replaces it with the
  // job's own timeout from the start (on_started).
  Clock::time_point lease_deadline(const Worker& w, const Job& j) const;
  // The leases of one dispatch round: stored in one batch before any job
  // leaves, then sent.
  void send_leases(const std::vector<Job*>& round);
  // leased -> queued (or -> done as error/crash once max_attempts holders died).
  void unlease(Job& j, bool holder_died);
  // queued|leased -> done in memory; flush() commits it, then acknowledges
  // and reports it.
  void complete(Job& j, ExecResult r);
  // Group commit, pipelined: the results completed since the last batch go
  // to the commit writer's thread in one synced batch (Store::commit_results)
  // while this thread goes on receiving and dispatching; only when that
  // batch is on disk are its results reported (`done`) and acknowledged,
  // with the acknowledgements gathered before it was started (duplicates of
  // results it holds, or of results already committed). One batch at a time:
  // the next waits for the one in flight. A store error propagates before
  // anything of its batch is acknowledged.
  void start_commit();
  void finish_commit();
  // Collects the batch in flight once it is written, then starts the next
  // when it is due (`force`: when there is anything to commit or
  // acknowledge). `wait`: blocks until everything so far is committed and
  // acknowledged.
  void pump(bool wait, bool force = false);
  void flush() { pump(true); }

  // ---- worker transitions ----
  // registered -> forgotten. Its leases go back to the queue; `died` counts
  // them as attempts (silence, bad frames, overdue leases).
  void forget(const std::string& identity, const std::string& reason, bool died, bool tell);

  // ---- the source ----
  // A job the source wants: new, already known (recovered), or already done.
  void want(const JobSpec& spec);
  // MODEL_HINT for the models of a job just queued, once per model, to the
  // workers of its target that take jobs (a draining worker would fetch a
  // model it will not run): they fetch the model while they run the
  // jobs before it, not after its first job reached them.
  void hint_models(const JobSpec& spec);
  std::set<std::string> hinted;  // models named to the workers so far
  // The models of the next jobs queued for w's target, named to w: a worker
  // that registered, turned Good or stopped draining after they were named.
  void hint_queued_models(const Worker& w);

  // ---- jobs no registered worker can serve ----
  // Queued jobs whose required tags no registered worker of their target
  // and executor offers, once the workers had missing_tags_wait_ms to come:
  // said once per kind; true when the run must stop (fail_on_missing_tags).
  // Likewise (issue 60) queued jobs whose every registered worker that
  // could serve them is unusable (Bad, in Maintenance, quarantined) for
  // missing_tags_wait_ms on end: said once while it lasts (again after a
  // worker became usable), each worker with its health's reason.
  std::optional<Clock::time_point> tags_check_from;
  Clock::time_point next_tags_check;
  std::set<QueueKey> tags_reported;
  std::map<QueueKey, Clock::time_point> unusable_since;  // queue -> since when no worker for it is usable
  std::set<QueueKey> unusable_reported;
  bool missing_tags(Clock::time_point now);
  bool no_usable_worker(Clock::time_point now);
  void unserved(const std::string& what);  // into stats.missing_tags, and the log

  // ---- handlers, one per message type ----
  // The worker's device health as the summary lists it; a transition is
  // logged and written to the store with its reason and time.
  void note_health(const WorkerInfo& info);

  // A worker id is a name the peer gives itself. A connection keeps the id
  // it registered with, and under CURVE an id belongs to the first key that
  // registered it this run: another key cannot take over its leases and
  // results (issue 30). Returns why `info` is refused, or "".
  std::string refuse_id(const std::string& identity, const WorkerInfo& info, const std::string& key);

  void on_ready(const std::string& identity, const WorkerInfo& info, const std::string& key);

  // Whether the worker registered as `worker_id` holds `j`, or last held it:
  // its lease, or before a restart the lease stored with it. A job recovered
  // from a store written before holders were stored has none; the first
  // worker that claims it within the hold interval does.
  static bool may_hold(const Job& j, const std::string& worker_id);

  // STARTED from the worker holding the lease: from now the job has its own
  // timeout (and the slack) to answer. A worker retries a job whose process
  // crashed, and says so again: up to max_attempts starts of one lease
  // renew it, no more (a holder cannot keep a lease forever). Any other
  // STARTED (a lease already requeued, a peer that does not hold it)
  // changes nothing.
  void on_started(Worker& w, const std::string& id);

  void on_result(Worker& w, ExecResult r);

  // Blobs whose store read has finished go out (chunks or whole).
  void serve_blobs();

  // A frame that breaks the protocol: log, drop, disconnect the sender.
  void bad(const std::string& identity, const std::string& why);

  // The CURVE public key (z85) the ZAP handler authenticated the message's
  // sender with ("User-Id"), or "" without CURVE.
  std::string curve_key_of(const zmq::message_t& frame) const;

  // One ROUTER message: [identity][envelope].
  void on_frames(const std::string& identity, const std::vector<zmq::message_t>& frames, size_t count);

  // Receives one message; false when none is waiting.
  bool receive_one();

  // ZAP (RFC 27): allow CURVE clients whose public key is on the list.
  void serve_zap();

  // ---- the observer (BrokerOptions::observer) ----
  // Tells it of the fleet every RunObserver::kFleetEvery, and always when `force`.
  Clock::time_point next_observe;
  void observe(bool force);
};

}  // namespace torq::coordinator
