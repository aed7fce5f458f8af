// Local workers for an embedded coordinator (torq-gen-config discover and
// `torq-coordinator --local-workers N`): `torq-worker --connect ENDPOINT`
// processes on this machine running N jobs at once, so single-machine runs
// take the same scheduling path as the fleet (FleetBroker), only over a
// private ipc:// endpoint. With the sim backend one worker runs all N, as
// lanes of one job process: the jobs share each model's reference run and
// oneDNN's compiled kernels instead of computing them once per process.
//
// Contracts:
//  - Each worker runs with PR_SET_PDEATHSIG=SIGTERM: if this process dies
//    (even by kill -9) its workers finish their current job and leave.
//  - Worker stderr goes to `log_file` (appended), never to our terminal.
//  - The destructor sends SIGTERM, waits up to 5 s, then SIGKILLs the
//    process groups of the remaining ones.
//  - alive() reaps exited workers without blocking; watch() runs a thread
//    that sets `*flag` when every worker has exited (the broker then stops).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/base/temp_files.h"

namespace torq::coordinator {

struct LocalWorkersOptions {
  int workers = 2;              // jobs run at once
  // Of them per worker process: 0 = all in one (sim backend; the toolchain
  // backend always runs one job per process).
  int lanes = 0;
  std::string endpoint;        // ipc:// or tcp:// of the embedded broker
  std::string cache_dir;       // model cache (<hash>.onnx), shared by all
  int threads_per_job = 1;
  // Jobs queued per running job beyond it, waiting in the job process: a
  // lane's next layer job is there when the current one ends (discover's
  // jobs take milliseconds; with both cores busy, the coordinator and the
  // worker often wait a few for a core, and with one job queued per lane
  // the lanes waited for them a fifth of the time).
  int prefetch = 4;
  int heartbeat_ms = 1000;
  std::string target = "sim";
  std::string executors = "nss,css,host";
  std::string log_file;        // worker stderr; empty: /dev/null
  std::string worker_binary;   // default: $TORQ_WORKER_BIN, else torq-worker beside this executable
  std::string id_prefix = "local";
  std::string backend = "sim";   // sim | toolchain (torq-worker --backend)
  std::string toolchain_file;    // --toolchain, for backend toolchain
  // The caller writes every model the workers run into cache_dir before
  // it dispatches a job on it (adopt_cache_file): they use the files without
  // re-hashing them (torq-worker --trusted-cache).
  bool trusted_cache = false;
  // More torq-worker arguments, e.g. a model to preload (runner/preload.h).
  std::vector<std::string> extra_args;
};

// The target name of jobs run with a toolchain file (matrix `{toolchain:
// FILE}` targets, and discover/run --backend toolchain):
// "toolchain:<file stem>-<first 8 hex of the file's SHA-256>", so results
// and cache entries of two toolchains, or of a changed file, never mix.
// Throws pipeline::PipelineError when the file cannot be read.
std::string toolchain_target(const std::string& toolchain_file);

// A private endpoint for an embedded broker, its socket file removed when
// this goes out of scope.
class PrivateEndpoint {
 public:
  PrivateEndpoint();
  ~PrivateEndpoint();
  PrivateEndpoint(const PrivateEndpoint&) = delete;
  PrivateEndpoint& operator=(const PrivateEndpoint&) = delete;
  const std::string& str() const { return endpoint_; }

 private:
  std::string endpoint_;
};

// The workers' copy of a model, written in the pass that imports and hashes
// it: the import writes it to cache_import_path() (ImportOptions::copy_to),
// then adopt_cache_file() renames that to <cache_dir>/<hash>.onnx (or
// removes it, with an empty hash: the import failed). `import_dir`, when
// not empty, is where the import wrote it (cache_import_path(import_dir)),
// e.g. beside the output before the cache directory exists. Throws
// PipelineError.
std::string cache_import_path(const std::string& cache_dir);
void adopt_cache_file(const std::string& cache_dir, const std::string& hash, const std::string& import_dir = "");
// The import copy is import.tmp.<pid>, the one form of temporary files
// (pipeline/base/temp_files.h), as are the workers' fetches
// (<file>.tmp.<pid>): base::sweep_dead_temp_files() removes what a killed
// discover, run or worker left mid-write (a 30 MB model each).

class LocalWorkers {
 public:
  // Starts the workers; throws pipeline::PipelineError when one cannot be
  // started (fork/exec failure is reported by the child's exit status).
  explicit LocalWorkers(LocalWorkersOptions opts);
  ~LocalWorkers();
  LocalWorkers(const LocalWorkers&) = delete;
  LocalWorkers& operator=(const LocalWorkers&) = delete;

  // Workers still running.
  int alive();
  // Ends watch() and asks the workers to stop (SIGTERM) without waiting:
  // they wind down while the caller writes its report; stop() or the
  // destructor reaps them.
  void stop_soon();
  // Stops them now (as the destructor does); idempotent.
  void stop();
  // Starts a thread that sets *flag once no worker is alive.
  void watch(std::atomic<bool>* flag);
  // The last `max_bytes` of the worker log (for error messages).
  std::string log_tail(size_t max_bytes = 2000) const;
  // A fresh private endpoint: ipc:///tmp/torq-<pid>-<n>.sock (removed by
  // remove_endpoint_file()).
  static std::string private_endpoint();
  static void remove_endpoint_file(const std::string& endpoint);

 private:
  void stop_all();
  void term_all();  // SIGTERM to every live worker (g_reap_mutex held)
  void end_watch();
  LocalWorkersOptions opts_;
  std::vector<pid_t> pids_;
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;  // wakes the watcher at once to end it
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace torq::coordinator
