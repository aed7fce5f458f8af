#include "worker/runner/local_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <stdexcept>

#include "worker/runner/frame_io.h"
#include "worker/runner/job_env.h"

extern char** environ;

namespace torq::runner {

using pipeline::ExecResult;
using pipeline::JobSpec;

struct LocalPool::Running {
  JobSpec job;
  int attempts = 0;  // including this one
  bool started = false;  // a lane has it (else it waits in the process's inbox)
  Clock::time_point deadline = Clock::time_point::max();  // once started
  void start(Clock::time_point now) {
    started = true;
    deadline = now + std::chrono::milliseconds(std::max<uint32_t>(1, job.timeout_ms));
  }
};

struct LocalPool::Slot {
  int index = 0;
  pid_t pid = -1;
  int to_child = -1, from_child = -1;
  std::vector<Running> running;
  bool alone = false;  // runs a crash suspect: takes nothing else
};

std::string LocalPool::default_worker_binary() {
  if (const char* env = std::getenv("TORQ_WORKER_BIN")) return env;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto candidate = self.parent_path() / "torq-worker";
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  return "torq-worker";
}

int queue_ahead_for(int workers, int lanes, int prefetch) {
  workers = std::max(1, workers);
  lanes = std::clamp(lanes, 1, workers);
  const int procs = (workers + lanes - 1) / lanes;
  return (std::max(0, prefetch) + procs - 1) / procs;
}

LocalPool::LocalPool(LocalPoolOptions opts) : opts_(std::move(opts)) {
  if (opts_.worker_binary.empty()) opts_.worker_binary = default_worker_binary();
  if (opts_.workers < 1) opts_.workers = 1;
  opts_.lanes = std::clamp(opts_.lanes, 1, opts_.workers);
  opts_.queue_ahead = std::max(0, opts_.queue_ahead);
  signal(SIGPIPE, SIG_IGN);  // a dead worker must not kill us on write
  slots_.resize(static_cast<size_t>((opts_.workers + opts_.lanes - 1) / opts_.lanes));
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].index = static_cast<int>(i);
    spawn(slots_[i]);
  }
}

LocalPool::~LocalPool() {
  for (auto& s : slots_) reap(s, false);
}

void LocalPool::wind_down() {
  for (auto& s : slots_)
    if (s.to_child >= 0) {
      close(s.to_child);
      s.to_child = -1;
    }
}

void LocalPool::spawn(Slot& s) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
  if (!opts_.stderr_file.empty())
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, opts_.stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // own process group: kill(-pid) reaches its children
  const std::string id = opts_.id_prefix + "-" + std::to_string(s.index);
  const std::string threads = std::to_string(opts_.threads_per_worker);
  std::vector<std::string> args = {opts_.worker_binary, "--stdio", "--cache", opts_.cache_dir,
                                   "--id", id, "--threads", threads, "--lanes", std::to_string(opts_.lanes)};
  args.insert(args.end(), opts_.backend_args.begin(), opts_.backend_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = job_environment(environ);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, opts_.worker_binary.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    throw std::runtime_error("cannot start worker " + opts_.worker_binary + ": " + std::strerror(rc));
  }
  s.pid = pid;
  s.to_child = in_pipe[1];
  s.from_child = out_pipe[0];
}

void LocalPool::reap(Slot& s, bool kill_group) {
  if (s.to_child >= 0) close(s.to_child);
  if (s.from_child >= 0) close(s.from_child);
  s.to_child = s.from_child = -1;
  if (s.pid > 0) {
    if (kill_group) kill(-s.pid, SIGKILL);
    int status = 0;
    // Closing stdin ends a healthy worker; give it half a second, then
    // kill. Looked at every millisecond: a job process freeing hundreds of
    // MB takes tens of them, and whoever waits for this pool waits too.
    for (int i = 0; i < 500 && waitpid(s.pid, &status, WNOHANG) == 0; ++i) usleep(1000);
    if (waitpid(s.pid, &status, WNOHANG) == 0) {
      kill(-s.pid, SIGKILL);
      waitpid(s.pid, &status, 0);
    }
  }
  s.pid = -1;
}

size_t LocalPool::slots() const {
  return static_cast<size_t>(opts_.workers) + slots_.size() * static_cast<size_t>(opts_.queue_ahead);
}

void LocalPool::submit(const JobSpec& job) { queue_.push_back({job, 0, false}); }

size_t LocalPool::running() const {
  size_t n = 0;
  for (const auto& s : slots_) n += s.running.size();
  return n;
}

size_t LocalPool::busy() const { return queue_.size() + running(); }

std::vector<std::string> LocalPool::busy_ids() const {
  std::vector<std::string> ids;
  for (const auto& q : queue_) ids.push_back(q.job.id);
  for (const auto& s : slots_)
    for (const auto& r : s.running) ids.push_back(r.job.id);
  return ids;
}

std::vector<int> LocalPool::wait_fds() const {
  std::vector<int> fds;
  for (const auto& s : slots_)
    if (!s.running.empty()) fds.push_back(s.from_child);
  return fds;
}

int LocalPool::ms_to_deadline() const {
  long long best = -1;
  const auto now = Clock::now();
  for (const auto& s : slots_)
    for (const auto& r : s.running) {
      if (!r.started) continue;
      const long long left =
          std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(r.deadline - now).count() + 1);
      best = best < 0 ? left : std::min(best, left);
    }
  return static_cast<int>(std::min<long long>(best, 1 << 30));
}

void LocalPool::fail(Slot& s, Running run, const std::string& cls, const std::string& msg,
                     std::vector<Finished>& out) {
  ExecResult r;
  r.job_id = run.job.id;
  r.executor = run.job.executor;
  r.status = pipeline::Status::kError;
  r.error_class = cls;
  r.error_message = msg;
  r.worker_id = opts_.id_prefix + "-" + std::to_string(s.index);
  r.attempts = static_cast<uint32_t>(run.attempts);
  out.emplace_back(std::move(run.job), std::move(r));
}

// The process died holding its jobs. Alone among those started, the job is
// retried on a fresh process (first in the queue, alone again) until
// max_attempts, then recorded as error/crash. With others started, any of
// them may have crashed it: each goes back uncharged, to run alone. Jobs
// not started yet go back uncharged, as they were.
void LocalPool::crashed(Slot& s, const std::string& why, std::vector<Finished>& out) {
  reap(s, true);
  std::vector<Running> jobs = std::move(s.running);
  s.running.clear();
  s.alone = false;
  const size_t started = static_cast<size_t>(
      std::count_if(jobs.begin(), jobs.end(), [](const Running& r) { return r.started; }));
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    if (!it->started) {
      queue_.push_front({std::move(it->job), it->attempts - 1, false});
    } else if (started > 1) {
      queue_.push_front({std::move(it->job), it->attempts - 1, true});
    } else if (it->attempts >= opts_.max_attempts) {
      fail(s, std::move(*it), "crash", why + " after " + std::to_string(it->attempts) + " attempts", out);
    } else {
      queue_.push_front({std::move(it->job), it->attempts, true});  // it crashes: keep it alone
    }
  }
}

// A job of `s` is past its deadline: the process is killed, that job (and
// any other past its own) is error/timeout, the rest go back uncharged.
void LocalPool::timed_out(Slot& s, Clock::time_point now, std::vector<Finished>& out) {
  reap(s, true);
  std::vector<Running> jobs = std::move(s.running);
  s.running.clear();
  s.alone = false;
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    if (now >= it->deadline) {
      const std::string msg = "no result within " + std::to_string(it->job.timeout_ms) + " ms; worker killed";
      fail(s, std::move(*it), "timeout", msg, out);
    } else {
      queue_.push_front({std::move(it->job), it->attempts - 1, false});
    }
  }
}

// Where queued job `q` may go now: a suspect only to a process running
// nothing, others to the least busy process with room (a free lane or a
// place in its inbox) that runs no suspect; nullptr if there is none.
LocalPool::Slot* LocalPool::slot_for(const Queued& q) {
  Slot* best = nullptr;
  for (auto& s : slots_) {
    if (s.alone || s.running.size() >= static_cast<size_t>(opts_.lanes + opts_.queue_ahead)) continue;
    if (q.alone && !s.running.empty()) continue;
    if (!best || s.running.size() < best->running.size()) best = &s;
  }
  return best;
}

void LocalPool::start_queued(std::vector<Finished>& out) {
  while (!queue_.empty()) {
    Slot* s = slot_for(queue_.front());
    if (!s) return;  // first come, first started: the rest wait behind it
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    if (s->pid < 0) spawn(*s);
    // The process starts its jobs in the order written: this one now if a
    // lane is free, else when enough of those before it have finished.
    Running r{q.job, q.attempts + 1};
    if (s->running.size() < static_cast<size_t>(opts_.lanes)) {
      r.start(Clock::now());
      started_.push_back(r.job.id);
    }
    s->running.push_back(std::move(r));
    s->alone = q.alone;
    if (!runner::write_frame(s->to_child, pipeline::encode_job(q.job)))
      crashed(*s, "worker died before taking the job", out);
  }
}

namespace {

// poll(2) without waiting, retried when a signal interrupts it.
int poll_now(pollfd* fds, size_t n) {
  int r;
  do r = poll(fds, n, 0);
  while (r < 0 && errno == EINTR);
  return r;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll_now(&p, 1) > 0 && (p.revents & POLLIN);
}

}  // namespace

// One result frame from `s` (or its death).
void LocalPool::read_result(Slot& s, std::vector<Finished>& out) {
  std::optional<std::string> frame;
  std::string why;
  try {
    frame = runner::read_frame(s.from_child, pipeline::kMaxMessageBytes);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!frame) {
    // EOF or broken frame: the worker died with its jobs.
    crashed(s, "worker process died running the job" + (why.empty() ? "" : " (" + why + ")"), out);
    return;
  }
  ExecResult r;
  try {
    r = pipeline::decode_result(frame->data(), frame->size());
  } catch (const std::exception& e) {
    if (s.running.size() != 1) return crashed(s, std::string("worker sent a bad result: ") + e.what(), out);
    reap(s, true);
    Running run = std::move(s.running[0]);
    s.running.clear();
    s.alone = false;
    return fail(s, std::move(run), "crash", std::string("worker sent a bad result: ") + e.what(), out);
  }
  auto it = std::find_if(s.running.begin(), s.running.end(), [&](const Running& x) { return x.job.id == r.job_id; });
  if (it == s.running.end() && s.running.size() == 1) it = s.running.begin();  // e.g. a job it could not decode
  if (it == s.running.end()) return crashed(s, "worker sent a result for no job it runs ('" + r.job_id + "')", out);
  r.attempts = static_cast<uint32_t>(it->attempts);
  out.emplace_back(std::move(it->job), std::move(r));
  s.running.erase(it);
  if (s.running.empty()) s.alone = false;
  // The lane that sent it took the next job waiting in the process.
  const auto now = Clock::now();
  for (size_t i = 0; i < s.running.size() && i < static_cast<size_t>(opts_.lanes); ++i)
    if (!s.running[i].started) {
      s.running[i].start(now);
      started_.push_back(s.running[i].job.id);
    }
}

std::vector<std::string> LocalPool::take_started() { return std::exchange(started_, {}); }

std::vector<LocalPool::Finished> LocalPool::service() {
  std::vector<Finished> out;
  start_queued(out);
  std::vector<pollfd> fds;
  std::vector<Slot*> owners;
  for (auto& s : slots_)
    if (!s.running.empty()) {
      fds.push_back({s.from_child, POLLIN, 0});
      owners.push_back(&s);
    }
  if (fds.empty()) return out;
  const int n = poll_now(fds.data(), fds.size());
  if (n < 0) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
  const auto now = Clock::now();
  for (size_t i = 0; i < fds.size(); ++i) {
    Slot& s = *owners[i];
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
      read_result(s, out);
      // Lanes often finish together: results already in the pipe are read
      // now, so the caller commits them as one group.
      while (!s.running.empty() && readable(s.from_child)) read_result(s, out);
      continue;
    }
    for (const auto& r : s.running)
      if (now >= r.deadline) {
        timed_out(s, now, out);
        break;
      }
  }
  start_queued(out);  // crash retries, jobs put back and idle lanes
  return out;
}

void LocalPool::run(const std::function<std::optional<JobSpec>()>& next,
                    const std::function<void(const JobSpec&, ExecResult)>& done,
                    const std::function<void()>& batch_done) {
  bool source_empty = false;
  for (;;) {
    // Fill idle slots (crash retries are already queued and go first).
    source_empty = false;
    while (busy() < slots()) {
      auto j = next();
      if (!j) {
        source_empty = true;
        break;
      }
      submit(*j);
    }
    auto finished = service();
    if (!finished.empty()) {
      // Refill freed slots before recording: the caller's store commit must
      // not leave a worker idle.
      while (busy() < slots()) {
        auto j = next();
        if (!j) break;
        submit(*j);
      }
      for (auto& [j, r] : finished) done(j, std::move(r));
      if (batch_done) batch_done();
      continue;  // `next` may have new jobs now
    }
    if (busy() == 0) {
      if (source_empty) return;
      continue;
    }
    std::vector<pollfd> fds;
    for (int fd : wait_fds()) fds.push_back({fd, POLLIN, 0});
    const int deadline = ms_to_deadline();
    const int wait_ms = deadline < 0 ? 1000 : std::min(1000, deadline);
    if (fds.empty()) continue;
    const int n = poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
  }
}

}  // namespace torq::runner
