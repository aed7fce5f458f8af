// The worker's side of the fleet (DESIGN.md §6): a ZeroMQ DEALER that
// registers with the coordinator (READY), runs the jobs it is sent in child
// processes (a LocalPool: timeout, process-group kill, crash retries), fetches
// missing model blobs once and keeps them in an on-disk cache, and returns
// every result until the coordinator acknowledges it.
//
// Protocol, as the worker sees it:
//  - READY (id, target, executors, toolchain, capacity, running job ids) on
//    every (re)connection, then the results not yet acknowledged again.
//  - HEARTBEAT when it has sent nothing for one interval, once the
//    coordinator has spoken on this connection; a coordinator silent for
//    `liveness` intervals after that, or one that says DISCONNECT, gets a
//    fresh connection and a new READY (running jobs keep running). Before
//    the coordinator first speaks, silence only re-sends READY on the same
//    connection (ZeroMQ is still connecting it), at doubling intervals.
//  - A lease that arrives while the device is not Good goes back unrun as
//    error class "declined"; a health change is sent (READY) before the
//    result that caused it. Health backs off (board_health.h): repeated
//    infrastructure errors delay the check and then make the device Bad;
//    a model the cache has no room for makes it Bad at once, with that
//    reason, until its check finds the room (cache_room.h).
//  - A JOB whose model is not in the cache parks until its blob is in: the
//    blob comes in 1 MiB chunks, 8 asked for at a time (BLOB_REQUEST with
//    offset and max_bytes; blob_fetch.h), written to a temporary file and
//    hashed as they arrive, so heartbeats and jobs keep flowing during a
//    blob of hundreds of MB; verified by SHA-256, then renamed to
//    <cache>/<hash>.onnx. An unknown or corrupt blob fails its jobs as
//    error/fetch.
//  - Benchmark mode (bench_executor "noop" or "sleep:MS"): jobs are answered
//    in this process without the engine, child processes or model blobs —
//    a success result at once (noop) or MS milliseconds after the JOB
//    arrived (sleep, standing in for a board). The protocol is unchanged, so
//    the coordinator cannot tell; results carry "(bench ...)" in toolchain.
//    For measuring the fleet (tests/bench/fleet_bench.sh) only.
//  - request_stop(): READY with capacity 0 (send no more), finish the
//    running jobs, wait briefly for their acknowledgements, DISCONNECT.
//
// Not thread-safe except request_stop(), which is async-signal-safe.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace torq::runner {

struct FleetWorkerOptions {
  std::string connect;                 // tcp://HOST:PORT of the coordinator
  std::string worker_id;               // default: <hostname>-<pid>
  std::string target = "sim";
  std::vector<pipeline::Executor> executors{pipeline::Executor::kNss, pipeline::Executor::kCss,
                                            pipeline::Executor::kHost};
  int capacity = 1;                    // parallel jobs
  int lanes = 1;                       // of them per job process (threads; sim backend)
  int prefetch = 0;                    // jobs taken beyond capacity, waiting in the job processes
  std::string cache_dir = ".torq-cache/models";
  // The coordinator that started this worker writes every model into
  // cache_dir itself, whole, before it sends a job on it (local workers of
  // torq-gen-config): a model file there is used without re-hashing it
  // (tens of ms on the first job's path); a missing one is still fetched.
  bool trusted_cache = false;
  int threads_per_job = 1;
  int heartbeat_ms = 1000;
  int liveness = 3;
  int max_attempts = 3;                // local crash retries of one job
  std::string worker_binary;           // torq-worker for the children; default beside this executable
  // CURVE (z85): all three set, or none.
  std::string server_public_key, public_key, secret_key;
  bool verbose = false;                // log one line per finished job
  // Device tags offered (a matrix target may require them) and device
  // health (worker/runner/board_health.h): a check runs before the first
  // job, every health_interval_s and after an infrastructure error; a Bad
  // device retries from health_retry_s, doubling up to 1 h. While
  // maintenance_file exists the worker is in Maintenance and takes no jobs.
  std::vector<std::string> tags;
  bool health_checks = true;
  uint32_t health_timeout_ms = 60000;  // the check's budget (a toolchain's: its steps' sum)
  int health_interval_s = 24 * 3600;
  int health_retry_s = 30;
  // The health check's model (a serialized ONNX ModelProto, run on host
  // against its reference); torq-worker's main gives the sim's demo model.
  // Required when health_checks is set.
  std::string health_model;
  std::string maintenance_file;
  // A board (torq-worker --board): the first timeout of a job here is taken
  // for the board's (an infrastructure error: requeued, the board checked
  // before its next job, as LAVA does after a job timeout); only a job that
  // times out again here, after the board passed that check, has the op's
  // timeout.
  bool timeouts_check_device = false;
  // Benchmarking only: "" (run jobs for real), "noop" or "sleep:MS" (see above).
  std::string bench_executor;
  std::function<void(const std::string&)> log;  // default: stderr
  // The job processes' extra arguments (LocalPoolOptions::backend_args:
  // the backend, a preload) and the backend's identity for READY; empty:
  // the sim backend.
  std::vector<std::string> backend_args;
  std::string toolchain;
};

class FleetWorker {
 public:
  // Throws pipeline::PipelineError for bad options (no endpoint, no
  // executors, capacity < 1, an unusable cache directory, bad keys).
  explicit FleetWorker(FleetWorkerOptions opts);
  ~FleetWorker();
  FleetWorker(const FleetWorker&) = delete;
  FleetWorker& operator=(const FleetWorker&) = delete;

  // Serves until stopped; returns the process exit code (0 after a clean
  // stop). Runs forever otherwise: a missing coordinator is waited for.
  int run();
  void request_stop() { stop_.store(true); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
};

}  // namespace torq::runner
