// LocalPool: a pool of local `torq-worker --stdio` processes, fed over pipes,
// each running up to `lanes` jobs at once (threads sharing the process's
// models and reference runs; stdio_serve.h), with up to `queue_ahead` more
// waiting in it. Each job has a timeout from when it starts: a hang is
// killed with its process group and costs that job (error/timeout); the
// other jobs of the process go back to the queue uncharged. A crash with
// one job started in its process costs that job one attempt (it is retried
// on a fresh process up to max_attempts, then recorded as error/crash); a
// crash with several started leaves it unknown which one crashed, so each
// goes back uncharged and runs alone in a process next, where a crash is
// its own. Jobs that had not started go back uncharged. Knows jobs, not
// tensors.
//
// Two ways to drive a pool (do not mix them on one pool):
//  - run(next, done): blocking, until `next` has nothing and nothing runs;
//  - submit() + service() with wait_fds()/ms_to_deadline(): non-blocking, for
//    a caller that polls other things too (the fleet worker's socket).
// A pool is used from one thread.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/wire/codec.h"

namespace torq::runner {

struct LocalPoolOptions {
  int workers = 2;             // jobs run at once
  int lanes = 1;               // of them in one process (ceil(workers / lanes) processes)
  // Jobs written to a process beyond its lanes. They wait in its inbox, so
  // a lane that finishes starts the next job at once instead of after a
  // round trip through this pool (on a busy machine, often a wait for a
  // core). Their timeouts run from when they start: the process starts
  // them in the order written, one per result it returns.
  int queue_ahead = 0;
  std::string worker_binary;   // torq-worker; default: next to this executable
  std::string cache_dir;       // where models are cached as <hash>.onnx
  int threads_per_worker = 1;
  int max_attempts = 3;
  std::string id_prefix = "local";  // worker ids in results: <prefix>-<slot>
  // Extra job process arguments: the backend ("--backend toolchain
  // --toolchain FILE"; none: the sim backend), a model to preload.
  std::vector<std::string> backend_args;
  // The processes' stderr, appended to this file; empty: this process's.
  std::string stderr_file;
};

// The queue_ahead that keeps `prefetch` jobs in all waiting in the
// processes of a pool of `workers` jobs at once, `lanes` of them a process
// (each process takes its share, rounded up).
int queue_ahead_for(int workers, int lanes, int prefetch);

class LocalPool {
  using Clock = std::chrono::steady_clock;

 public:
  explicit LocalPool(LocalPoolOptions opts);
  ~LocalPool();  // terminates the workers
  LocalPool(const LocalPool&) = delete;
  LocalPool& operator=(const LocalPool&) = delete;

  // Dispatches jobs from `next` (nullopt: nothing to run right now) until it
  // has nothing and no job is in flight, calling `done` for every result
  // (in the calling thread). `next` may return new jobs after results arrive
  // (skip mode schedules the next executor of a layer that did not succeed).
  // `batch_done`, if set, runs after each group of `done` calls (results
  // that arrived together): the place to commit them in one write.
  void run(const std::function<std::optional<pipeline::JobSpec>()>& next,
           const std::function<void(const pipeline::JobSpec&, pipeline::ExecResult)>& done,
           const std::function<void()>& batch_done = {});

  // --- Non-blocking API ---
  using Finished = std::pair<pipeline::JobSpec, pipeline::ExecResult>;
  // Queues a job; it starts on an idle worker in the next service() call.
  void submit(const pipeline::JobSpec& job);
  // Starts queued jobs on idle workers, collects every result that is ready
  // without blocking, kills jobs past their timeout (error/timeout) and
  // retries crashed ones (error/crash after max_attempts). Returns the jobs
  // that finished, each exactly once. Throws std::runtime_error only when a
  // worker process cannot be started at all.
  std::vector<Finished> service();
  // File descriptors that become readable when a running job ends (wait on
  // them, then call service()).
  std::vector<int> wait_fds() const;
  // Milliseconds until the earliest running job's timeout (0 if past), or
  // -1 when nothing runs.
  int ms_to_deadline() const;
  // Jobs submitted and not yet returned by service() (queued + running).
  size_t busy() const;
  // Ids of those jobs.
  std::vector<std::string> busy_ids() const;
  // Ids of the jobs that started (a lane took them; their timeout runs from
  // then) since the last call, in order; a job retried after a crash
  // appears again when it starts again.
  std::vector<std::string> take_started();
  // Jobs the pool takes at once: `workers` running and `queue_ahead` more
  // waiting in each process.
  size_t slots() const;

  // Closes the processes' input: idle ones end (freeing their memory, tens
  // of ms for hundreds of MB) while the caller goes on; the destructor
  // reaps them. Nothing may be submitted after.
  void wind_down();

  // Default worker binary: torq-worker beside /proc/self/exe, or $TORQ_WORKER_BIN.
  static std::string default_worker_binary();

 private:
  struct Running;
  struct Slot;  // one process
  struct Queued {
    pipeline::JobSpec job;
    int attempts = 0;      // so far
    bool alone = false;    // a crash suspect: runs alone in its process
  };
  void spawn(Slot& s);
  void reap(Slot& s, bool kill_group);
  void start_queued(std::vector<Finished>& out);
  Slot* slot_for(const Queued& q);
  void read_result(Slot& s, std::vector<Finished>& out);
  void crashed(Slot& s, const std::string& why, std::vector<Finished>& out);
  void timed_out(Slot& s, Clock::time_point now, std::vector<Finished>& out);
  void fail(Slot& s, Running r, const std::string& cls, const std::string& msg, std::vector<Finished>& out);
  size_t running() const;
  LocalPoolOptions opts_;
  std::vector<Slot> slots_;
  std::deque<Queued> queue_;  // crash retries and jobs put back go first
  std::vector<std::string> started_;  // for take_started()
};

}  // namespace torq::runner
