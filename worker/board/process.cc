#include "worker/board/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <algorithm>
#include <stdexcept>
#include <system_error>

#include "pipeline/base/spawn.h"

namespace torq::board {
namespace {

using Clock = std::chrono::steady_clock;

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
}

// Reads what is available on fd into sink; returns false at EOF or error.
bool drain(int fd, std::string& sink) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) { sink.append(buf, static_cast<size_t>(n)); if (n < (ssize_t)sizeof buf) return true; continue; }
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

void record_status(int status, ProcResult& r) {
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
}

// Collects the child's output until both pipes close or the deadline passes,
// woken by its output or its exit (pidfd; without one, it looks every 50 ms).
// Returns true when the child has been reaped.
bool collect(pid_t pid, int pidfd, int out_fd, int err_fd, Clock::time_point deadline, ProcResult& r) {
  pollfd fds[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  bool reaped = false;
  int status = 0;
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      fds[2].fd = -1;
      record_status(status, r);
      // A grandchild may hold the pipes: give it a moment, not forever.
      deadline = std::min(deadline, Clock::now() + std::chrono::milliseconds(200));
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    int rc = poll(fds, 3, static_cast<int>(std::min<long long>(left, fds[2].fd >= 0 ? 1 << 30 : 50)));
    if (rc < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i)
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && !drain(fds[i].fd, *sinks[i]))
        fds[i].fd = -1;
  }
  return reaped;
}

// Waits for the child until the deadline (on its pidfd, else looking every
// 5 ms); on expiry kills its group.
void reap(pid_t pid, int pidfd, Clock::time_point deadline, ProcResult& r) {
  int status = 0;
  for (auto now = Clock::now(); now < deadline; now = Clock::now()) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) { record_status(status, r); return; }
    if (w < 0 && errno != EINTR) return;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    if (pidfd < 0) {
      usleep(5000);
      continue;
    }
    pollfd p{pidfd, POLLIN, 0};
    poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
  }
  r.timed_out = true;
  kill(-pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  record_status(status, r);
}

}  // namespace

ProcResult run_process(const std::vector<std::string>& argv, int timeout_ms) {
  if (argv.empty()) throw std::invalid_argument("run_process: empty argv");
  int out_p[2], err_p[2];
  make_pipe(out_p);
  make_pipe(err_p);
  auto start = Clock::now();
  auto deadline = start + std::chrono::milliseconds(timeout_ms);
  base::SpawnOptions so;
  so.stdout_fd = out_p[1];
  so.stderr_fd = err_p[1];
  base::Spawned child;
  try {
    child = base::spawn_process(argv, so);
  } catch (...) {
    for (int fd : {out_p[0], out_p[1], err_p[0], err_p[1]}) ::close(fd);
    throw;
  }
  const pid_t pid = child.pid;
  ::close(out_p[1]);
  ::close(err_p[1]);
  ProcResult r;
  if (child.start_errno) r.err = argv[0] + ": " + std::strerror(child.start_errno) + "\n";
  const int pidfd = base::open_pidfd(pid);
  bool reaped = collect(pid, pidfd, out_p[0], err_p[0], deadline, r);
  ::close(out_p[0]);
  ::close(err_p[0]);
  if (!reaped) reap(pid, pidfd, deadline, r);
  if (pidfd >= 0) ::close(pidfd);
  if (r.timed_out) r.exit_code = -1;
  r.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return r;
}

}  // namespace torq::board
