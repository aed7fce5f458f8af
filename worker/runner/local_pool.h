// LocalPool: a pool of local `torq-worker --stdio` processes (one job at a time
// each), fed over pipes. Each job runs in a child process with a timeout:
// a hang is killed with its whole process group and costs one job; a crash
// costs one attempt (the job is retried on a fresh worker up to
// max_attempts, then recorded as error/crash). Knows jobs, not tensors.
//
// Two ways to drive a pool (do not mix them on one pool):
//  - run(next, done): blocking, until `next` has nothing and nothing runs;
//  - submit() + service() with wait_fds()/ms_to_deadline(): non-blocking, for
//    a caller that polls other things too (the fleet worker's socket).
// A pool is used from one thread.
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/codec.h"

namespace torq::runner {

struct LocalPoolOptions {
  int workers = 2;
  std::string worker_binary;   // torq-worker; default: next to this executable
  std::string cache_dir;       // where models are cached as <hash>.onnx
  int threads_per_worker = 1;
  int max_attempts = 3;
  std::string id_prefix = "local";  // worker ids in results: <prefix>-<slot>
  // Extra worker arguments choosing the backend ("--backend toolchain
  // --toolchain FILE"); empty: the sim backend.
  std::vector<std::string> backend_args;
};

class LocalPool {
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
  // Number of worker processes (parallel slots).
  size_t slots() const;

  // Default worker binary: torq-worker beside /proc/self/exe, or $TORQ_WORKER_BIN.
  static std::string default_worker_binary();

 private:
  struct Slot;
  void spawn(Slot& s);
  void reap(Slot& s, bool kill_group);
  void start_queued(std::vector<Finished>& out);
  void crashed(Slot& s, const std::string& why, std::vector<Finished>& out);
  void fail(Slot& s, const std::string& cls, const std::string& msg, std::vector<Finished>& out);
  LocalPoolOptions opts_;
  std::vector<Slot> slots_;
  std::deque<std::pair<pipeline::JobSpec, int>> queue_;  // job, attempts so far (crash retries first)
};

}  // namespace torq::runner
