#include "coordinator/fleet/tool_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "pipeline/base/spawn.h"

namespace torq::coordinator {

std::string sibling_binary(const std::string& name, const char* env_var) {
  if (const char* env = std::getenv(env_var)) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto candidate = self.parent_path() / name;
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  return "/usr/bin/" + name;
}

namespace {

// Reads both pipes to their ends (poll, so neither can fill and block the child).
void drain(int out_fd, int err_fd, ToolRun* r) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* dst[2] = {&r->out, &r->err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0 && poll(fds, 2, -1) >= 0) {
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        dst[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
}

}  // namespace

ToolRun run_tool(const std::vector<std::string>& args, std::atomic<pid_t>* running) {
  ToolRun r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return r;
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return r;
  }
  base::SpawnOptions so;
  so.stdout_fd = out[1];
  so.stderr_fd = err[1];
  so.new_process_group = false;  // stop() kills the tool by its pid
  pid_t pid = -1;
  try {
    pid = base::spawn_process(args, so).pid;  // a tool that cannot start exits 127
  } catch (const std::exception&) {
  }
  close(out[1]);
  close(err[1]);
  if (running && pid > 0) running->store(pid);
  drain(out[0], err[0], &r);
  // Unreaped, the pid is still this child's: cleared before waitpid frees it.
  if (running) running->store(0);
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

}  // namespace torq::coordinator
