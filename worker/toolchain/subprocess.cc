#include "worker/toolchain/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "pipeline/base/spawn.h"

namespace torq::toolchain {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kCapture = 64 * 1024;

// Reads what is available from fd into buf (capped); false at EOF.
bool drain(int fd, std::string& buf) {
  char tmp[8192];
  for (;;) {
    const ssize_t n = read(fd, tmp, sizeof tmp);
    if (n > 0) {
      if (buf.size() < kCapture) buf.append(tmp, std::min<size_t>(static_cast<size_t>(n), kCapture - buf.size()));
      continue;
    }
    if (n == 0) return false;
    return errno == EAGAIN || errno == EINTR;
  }
}

// poll()'s timeout: until `until` (rounded up, so that it never wakes just
// before it), at most cap_ms when cap_ms >= 0.
int poll_ms(Clock::time_point until, int cap_ms) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
  const long long ms = std::max<long long>(0, left);
  return static_cast<int>(cap_ms >= 0 ? std::min<long long>(ms, cap_ms) : std::min<long long>(ms, 1 << 30));
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, int timeout_ms, const std::string& cwd,
                          const std::vector<std::string>& env) {
  if (argv.empty()) throw std::runtime_error("run_process: empty argv");
  // The child's environment: this process's, with `env` winning.
  std::vector<std::string> env_items;
  for (char** e = environ; e && *e; ++e) {
    const std::string item = *e;
    const std::string name = item.substr(0, item.find('=') + 1);
    if (std::none_of(env.begin(), env.end(), [&](const std::string& x) { return x.rfind(name, 0) == 0; }))
      env_items.push_back(item);
  }
  env_items.insert(env_items.end(), env.begin(), env.end());
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw std::runtime_error("pipe failed");
  }
  const auto t0 = Clock::now();
  base::SpawnOptions so;
  so.stdout_fd = out_pipe[1];
  so.stderr_fd = err_pipe[1];
  so.cwd = cwd;
  so.env = &env_items;
  so.die_with_parent = true;
  base::Spawned child;
  try {
    child = base::spawn_process(argv, so);
  } catch (const std::exception& e) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    throw std::runtime_error(std::string("cannot start a process: ") + e.what());
  }
  const pid_t pid = child.pid;
  close(out_pipe[1]);
  close(err_pipe[1]);
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  ProcessResult r;
  if (child.start_errno)
    r.err = child.cwd_failed ? "error: cannot enter " + cwd + ": " + std::strerror(child.start_errno) + "\n"
                             : "error: cannot execute " + argv[0] + ": " + std::strerror(child.start_errno) + "\n";
  const auto deadline = t0 + std::chrono::milliseconds(std::max(1, timeout_ms));
  // Woken by the child's output or by its exit (pidfd); without a pidfd it
  // looks every 20 ms (a lane used to wait up to 20 ms after each step).
  const int pidfd = base::open_pidfd(pid);
  bool out_open = true, err_open = true, exited = false;
  int status = 0;
  Clock::time_point drain_until{};
  while (out_open || err_open || !exited) {
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      kill(-pid, SIGKILL);  // whatever it left running in its group
      drain_until = Clock::now() + std::chrono::milliseconds(500);
    }
    const auto now = Clock::now();
    if (!exited && now >= deadline) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      exited = true;
      drain_until = Clock::now() + std::chrono::milliseconds(200);
    }
    // Done once both pipes closed; a grandchild that left the group may hold
    // them open: not past drain_until.
    if (exited && ((!out_open && !err_open) || now >= drain_until)) break;
    pollfd fds[3] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                     {err_open ? err_pipe[0] : -1, POLLIN, 0},
                     {exited ? -1 : pidfd, POLLIN, 0}};
    poll(fds, 3, poll_ms(exited ? drain_until : deadline, exited || pidfd >= 0 ? -1 : 20));
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) out_open = drain(out_pipe[0], r.out);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) err_open = drain(err_pipe[0], r.err);
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  if (pidfd >= 0) close(pidfd);
  r.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!r.timed_out) {
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  }
  return r;
}

std::string diagnostic_excerpt(const std::string& text, size_t max_lines, size_t max_chars) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
    if (!l.empty()) lines.push_back(l);
  }
  size_t first = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string low = lines[i];
    std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
    if (low.find("error") != std::string::npos) {
      first = i;
      break;
    }
  }
  std::string out;
  for (size_t i = first; i < lines.size() && i < first + max_lines; ++i) out += (out.empty() ? "" : "\n") + lines[i];
  if (out.size() > max_chars) out = out.substr(0, max_chars) + "...";
  return out;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace torq::toolchain
