// The fleet worker's state and the steps of its poll loop (fleet_worker.h),
// private to its three files: fleet_worker.cc (the connection, jobs,
// benchmark mode and the loop), fleet_worker_health.cc (device health and
// its check) and fleet_worker_cache.cc (the model cache: blobs fetched in
// chunks, claims shared with other processes, room).
#pragma once

#include <zmq.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/wire/fleet_codec.h"
#include "worker/runner/blob_fetch.h"
#include "worker/runner/board_health.h"
#include "worker/runner/cache_claim.h"
#include "worker/runner/fleet_worker.h"
#include "worker/runner/local_pool.h"

namespace torq::runner {

struct FleetWorker::Impl {
  using Clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;
  using JobSpec = pipeline::JobSpec;
  using ExecResult = pipeline::ExecResult;
  using WorkerInfo = pipeline::WorkerInfo;
  using FleetMessage = pipeline::FleetMessage;

  // Model blobs come in chunks of this size, this many asked for at a time
  // (blob_fetch.h): each is a few ms of the poll loop's time.
  static constexpr uint32_t kBlobChunkBytes = uint32_t{1} << 20;
  static constexpr int kBlobWindow = 8;
  // How often a worker whose model another process sharing the cache is
  // fetching looks whether that fetch ended.
  static constexpr int kSiblingPollMs = 50;

  explicit Impl(FleetWorkerOptions o);

  static LocalPoolOptions pool_options(const FleetWorkerOptions& o);

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
  // Models sent here that the cache had no room for, with their size: the
  // device is Bad until the cache has room for each (checked by the health
  // check, which then forgets them; the next job on one fetches it again).
  std::map<std::string, uint64_t> no_room;
  Clock::time_point broker_seen, last_sent;
  bool heard = false;  // the coordinator has spoken on the current socket
  int unheard = 0;     // announces since, unanswered: each waits twice as long
  bool draining = false;
  BoardHealth health;
  std::vector<std::string> infra;     // injected one-shot infrastructure faults (test aid)
  std::string health_job;             // id of the running health check
  int health_seq = 0;

  void log(const std::string& s) const { opt.log("[worker " + opt.worker_id + "] " + s); }

  void send(const std::string& payload);

  WorkerInfo ready_info() const;

  // ---- health (LAVA's model) ----
  // The coordinator hears of a change before any result that caused it:
  // it must not lease the requeued job straight back to a device that is
  // no longer Good.
  void health_changed();
  // "; next check in N s" while the device is Bad or waits for its check.
  std::string next_check_note() const;
  // A failure that changes nothing the coordinator knows (the same reason
  // again): one line, with the backoff's next check.
  void health_unchanged() { log("health still " + health.state() + ": " + health.reason() + next_check_note()); }
  void fail_health_check(const std::string& why);
  // Why the cache still has no room for a model that did not fit ("" when
  // it has room for all; those are forgotten).
  std::string cache_still_full();
  // The check: the cache must have room for every model sent here that did
  // not fit (else Bad with that reason, as the fetch found it) and take a
  // write (cache_room.h: a full or read-only disk fails every fetch, issue
  // 30; the device is then Bad, not a source of fetch errors); then the
  // built-in demo CNN, every layer where the compiler decides (the
  // executors this device accepts), against the fp32 host reference
  // computed here; it passes when it runs and matches.
  void start_health_check();
  void health_check_done(const ExecResult& r);
  // A finished job: the health check's result stays here; an
  // infrastructure error makes the device Unknown (checked at once, then
  // with backoff, Bad after a few: board_health.h); any other result is the
  // op's and clears the device's strikes.
  void finished(const JobSpec& job, ExecResult r);
  void poll_health();

  // A fresh connection: READY, then everything the coordinator may have lost.
  void connect();
  // The coordinator silent for the liveness window. Once it has spoken on
  // this socket, silence means it died or restarted: a fresh connection.
  // Before that, ZeroMQ is still connecting (a coordinator starting slower
  // than this worker) and what is queued would be lost with the socket, the
  // first READY among it. Only the READY is sent again on the same socket
  // (for a coordinator that took it and died before answering), backing off
  // to 64 windows; no heartbeat is queued meanwhile, so a worker waiting all
  // night queues a few hundred READYs. (Results and blob requests follow
  // jobs, which only a coordinator that has spoken sends.)
  milliseconds silence_window(milliseconds liveness) const;
  bool on_silence(milliseconds window);

  // True when <cache>/<hash>.onnx is present and its SHA-256 matches (or,
  // with a trusted cache, when it is present).
  bool have_model(const std::string& hash);

  void store_model(const std::string& hash, const std::string& bytes);

  void send_result(const JobSpec& job, ExecResult r);

  // STARTED for every job a lane took since the last call (the coordinator's
  // lease then runs for the job's own timeout; issue 30). The health
  // check is this worker's own job.
  void report_started();

  void fail(const JobSpec& job, const std::string& cls, const std::string& msg);

  // Benchmark mode: the result a job gets without running anything.
  void bench_answer(const JobSpec& job, Clock::time_point began);
  // Benchmark mode: answers the sleeping jobs that are due, then starts
  // the prefetched ones a lane is free for. Like a lane, a sleep runs one
  // job at a time: --capacity of them at once, so --prefetch cannot turn
  // the sleep into more parallel work than the worker offers.
  void bench_service();
  // Benchmark mode: a lane starts sleeping on the job (STARTED, as a pool
  // lane says it: its timeout and lease run from now).
  void bench_sleep(JobSpec job, Clock::time_point now);

  // ---- handlers ----
  void on_job(const JobSpec& job);

  // To the pool once every model the job reads is in the cache (its model,
  // and the fp32 original of an end-to-end comparison); else parked on the
  // first missing one, whose fetch starts unless it is under way.
  void submit_or_park(const JobSpec& job);

  // Fetched here, or by the process sharing the cache that holds its claim.
  bool fetch_under_way(const std::string& hash) const;

  // A model missing from the cache: fetched here when this worker can claim
  // it (cache_claim.h), else left to the process sharing the cache that
  // holds the claim. False when the model turned up meanwhile (that process
  // finished between have_model() and the claim).
  bool fetch_or_wait(const std::string& hash);

  void start_fetch(const std::string& hash, CacheClaim claim);

  // The models other processes sharing the cache were fetching: once their
  // claim is free, the model is in the cache (verified like any cached
  // model) and its jobs go on, or it is not (that fetch failed, or its
  // process died) and this worker fetches it.
  void poll_sibling_fetches();

  // Jobs on this model are coming: fetch it now (or let the process sharing
  // the cache that fetches it do so), while the jobs before them run. A
  // benchmark-mode worker needs no model.
  void on_hint(const std::string& hash);

  // One chunk of a blob being fetched; when it is complete (or failed), its
  // parked jobs go to the pool (or fail as error/fetch).
  void on_blob(const FleetMessage& m);

  // One message from the coordinator. Returns false when it asks us to
  // reconnect (DISCONNECT).
  bool on_message(const zmq::message_t& frame);
};

}  // namespace torq::runner
