// The coordinator's side of the fleet (DESIGN.md §6): a ZeroMQ ROUTER that
// leases jobs to registered workers (DEALERs) by credit, matched on executor
// and target, and commits every result to the Store before acknowledging it.
// The whole protocol is one poll loop in fleet_broker.cc: receive, dispatch
// on the message type, then purge silent workers, expire leases, send
// heartbeats and hand out jobs. Model blobs are read from the store off the
// loop and sent in the chunks workers ask for (blob_server.h), so a blob of
// hundreds of MB never holds the loop.
//
// States: a job is queued, leased (to one worker, with a deadline and an
// attempt count) or done; a worker is registered (credits = capacity -
// leased) until it disconnects, misbehaves or is silent for `liveness`
// heartbeat intervals, and then its leased jobs go back to the queue. A job
// leased to `max_attempts` workers that all died ends as error/crash.
// A lease ends at the job's own timeout (plus lease_slack_ms) from the
// holder's STARTED; before it, a prefetched job's wait in the worker's
// queue is allowed for. Leases are stored with their holder's registered
// id: after a restart only that worker may claim the job or answer it.
//
// Contracts:
//  - Every result is committed before the worker gets RESULT_ACK and before
//    `done` is called; the first result of a job wins, later duplicates are
//    acknowledged (after the first is committed) and dropped. Commits are
//    grouped: the results received since the last batch go to the store in
//    one synced batch (Store::commit_results), written on a thread of its
//    own (commit_writer.h) while the broker goes on receiving and
//    dispatching, one batch at a time; only then are they reported and
//    acknowledged.
//    Likewise the leases of one dispatch round are stored in one batch
//    (Store::put_job_states) before any of those jobs is sent.
//  - A frame that is not one valid envelope (verify failure, oversize,
//    unknown type, wrong frame count, wrong direction) is logged and dropped,
//    and its sender is sent DISCONNECT and forgotten; the broker keeps
//    serving everyone else.
//  - Restart: the constructor reads the run's jobs from the store; done jobs
//    stay done (a source asking for one gets the stored result back).
//    Unfinished (leased) ones are held for one liveness interval, so a worker
//    still running one can reconnect and claim it (READY lists its running
//    jobs), then queued again ahead of new jobs.
//  - Binding: without CURVE keys only loopback endpoints (tcp://127.x,
//    tcp://localhost, tcp://[::1], ipc://, inproc://) are accepted unless
//    `insecure` is set; otherwise the constructor throws PipelineError.
//  - Not thread-safe: construct, run and destroy in one thread, except
//    request_stop(), which is async-signal-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/fleet/run_observer.h"
#include "pipeline/wire/codec.h"
#include "pipeline/store/store.h"
#include "pipeline/core/types.h"

namespace torq::coordinator {

struct BrokerOptions {
  std::string bind = "tcp://127.0.0.1:5555";
  bool insecure = false;        // allow non-loopback binds without CURVE
  int heartbeat_ms = 1000;      // heartbeat interval, both ways
  int liveness = 3;             // missed intervals before a worker is dead
  int max_attempts = 3;         // workers a job may outlive before error/crash
  int grace_ms = 30000;         // after request_stop: wait this long for leased jobs
  // Extra time a lease may run past the job's own timeout, counted from the
  // worker's STARTED, before the worker holding it is considered broken:
  // the worker's own timeout kills the job and its result is on its way.
  int lease_slack_ms = 10000;
  size_t max_inbound_bytes = size_t{16} << 20;  // larger frames are bad frames
  size_t max_queued = 100000;   // jobs pulled from the source ahead of dispatch
  bool persist_leases = true;   // write 'L' job states before sending a job
  // Hold dispatch until this many workers have registered (once; later
  // departures do not stop it). For benchmarks: all workers start together.
  int min_workers = 0;
  // Embedded use with local workers: every worker serves every target (the
  // jobs' targets name profile files on this machine), so dispatch matches
  // on executor only.
  bool any_target = false;
  // How long jobs found leased in the store at start wait for their old
  // workers to claim them; -1: one liveness interval. Embedded runs use 0
  // (their old workers died with the old process).
  int recovered_hold_ms = -1;
  // CURVE: the server's secret key (z85, 40 chars) turns encryption on; then
  // only clients whose public key (z85) is in allowed_client_keys connect.
  std::string curve_secret_key;
  std::set<std::string> allowed_client_keys;
  // Set from a signal handler (or another thread) to request a stop, like
  // request_stop(). May be null.
  const std::atomic<bool>* stop_flag = nullptr;
  // A second stop flag, for embedded runs: set when every local worker has
  // exited (the caller then reports the run as failed, not as stopped).
  const std::atomic<bool>* workers_gone = nullptr;
  // A third, set by the run itself when it cannot go on (a store error
  // while it prepares more work). May be null.
  const std::atomic<bool>* halt_flag = nullptr;
  // Jobs requiring device tags that no registered worker offers, and jobs
  // whose every registered worker that could serve them is unusable (Bad,
  // Maintenance, quarantined) this long on end, are reported after this
  // long; with fail_on_missing_tags the run then stops (run() returns
  // false), else it keeps waiting for such a worker. (No worker registered
  // at all is waited for.)
  int missing_tags_wait_ms = 10000;
  bool fail_on_missing_tags = false;
  // Log lines (no trailing newline). Default: stderr.
  std::function<void(const std::string&)> log;
  // A source still being filled (units prepared while others run): while
  // `source_open` returns true an empty source does not end the run, and
  // `source_fd` (if >= 0) becomes readable when the source may have more.
  std::function<bool()> source_open;
  int source_fd = -1;
  // Told of the fleet and of every job's result (issue 33: progress and the
  // --http status); must outlive run(). May be null.
  RunObserver* observer = nullptr;
};

struct BrokerStats {
  size_t dispatched = 0;         // JOB messages sent (leases)
  size_t completed = 0;          // results committed by this broker
  size_t reported_from_store = 0;  // source asked for a job already done in the store
  size_t recovered = 0;          // unfinished jobs found in the store at start
  size_t duplicates = 0;         // results of done jobs, dropped
  // The most jobs the broker held at once: queued, leased, held, or done
  // with their commit pending (a committed job leaves; issue 32).
  size_t table_peak = 0;
  size_t foreign_results = 0;    // results from a worker not holding the job's lease, dropped
  size_t started = 0;            // STARTEDs of lease holders: their leases run the job's own timeout from then
  size_t stray_started = 0;      // STARTEDs for a job the sender does not hold (ignored)
  std::vector<std::string> quarantined;  // workers whose leases kept overrunning: no more jobs this run
  size_t requeued = 0;           // leases returned to the queue
  size_t crashed = 0;            // jobs ended as error/crash after max_attempts
  size_t bad_frames = 0;         // frames dropped as malformed
  size_t workers_seen = 0;       // READY registrations
  size_t workers_expired = 0;    // workers dropped for silence or a late lease
  size_t blobs_served = 0;       // blobs sent to their end (whole, or their last chunk)
  // Dispatch latency of every result received by the worker holding the
  // lease: from sending JOB to receiving its RESULT, in microseconds.
  std::vector<uint32_t> dispatch_latency_us;
  // From the first JOB sent to the last result committed, in seconds (0: none).
  double dispatch_window_s = 0;
  std::optional<std::chrono::steady_clock::time_point> first_dispatch;  // the first JOB sent
  std::optional<std::chrono::steady_clock::time_point> last_commit;     // the last result committed
  size_t result_commits = 0;     // synced store writes of results (group commits)
  size_t lease_commits = 0;      // store writes of leases (dispatch rounds; logged, not synced: store.h)
  // The q-quantile (0..1) of dispatch_latency_us in milliseconds; -1 when empty.
  double dispatch_latency_ms(double q) const;
  size_t infra_requeued = 0;     // jobs lost to an infrastructure error, requeued (not attempts)
  size_t declined = 0;           // leases given back unrun by a device not Good, requeued (not attempts)
  // Every worker seen, by worker id: its device health (LAVA's model).
  struct Board {
    std::string target, health, reason, since;
    std::vector<std::string> tags;
    size_t transitions = 0;
  };
  std::map<std::string, Board> boards;
  // Results taken from each worker (by registered id) this run.
  std::map<std::string, size_t> done_by_worker;
  // Jobs no registered worker could serve in time: none offered their
  // tags, or none that could was usable (each with its health's reason).
  std::string missing_tags;
};

class FleetBroker {
 public:
  // Returns the next job to run, or nullopt when none is ready now (it may
  // have more after `Done` was called).
  using Source = std::function<std::optional<pipeline::JobSpec>()>;
  // Called once per job the source gave, after its result is committed.
  using Done = std::function<void(const pipeline::JobSpec&, const pipeline::ExecResult&)>;

  // Binds the ROUTER and loads the run's job states from `store` (which
  // must outlive the broker). Throws PipelineError for a refused or failing
  // bind, bad CURVE keys, or an unreadable store.
  FleetBroker(pipeline::Store& store, std::string run, BrokerOptions opts);
  ~FleetBroker();  // sends DISCONNECT to every registered worker
  FleetBroker(const FleetBroker&) = delete;
  FleetBroker& operator=(const FleetBroker&) = delete;

  // The endpoint actually bound (e.g. with the port the OS chose for ":*").
  const std::string& endpoint() const { return endpoint_; }

  // Serves until the source has nothing (and is no longer open, see
  // BrokerOptions::source_open), no job is queued or leased and
  // every job the source gave has been reported; or, after request_stop(),
  // until no job is leased or grace_ms has passed. Returns true when the
  // run completed, false when it stopped early. Store errors propagate as
  // PipelineError (nothing is acknowledged that is not stored).
  // `batch_done`, if set, runs after each group of `done` calls (the results
  // of one group commit): the place to write derived data in one batch.
  bool run(const Source& next, const Done& done, const std::function<void()>& batch_done = {});

  // Stop dispatching and wind down (async-signal-safe).
  void request_stop() { stop_.store(true); }

  const BrokerStats& stats() const { return stats_; }
  // Jobs queued or leased right now.
  size_t pending() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  BrokerStats stats_;
};

// True when `endpoint` stays on this machine (loopback tcp, ipc, inproc).
bool is_loopback_endpoint(const std::string& endpoint);

}  // namespace torq::coordinator
