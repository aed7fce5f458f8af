#include "pipeline/base/spawn.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

extern char** environ;

namespace torq::base {
namespace {

// Everything the child needs, made before the clone: the child shares this
// process's memory and must not allocate.
struct ChildPlan {
  char* const* argv;
  char* const* envp;
  const char* cwd;  // nullptr: stay
  int in_fd, out_fd, err_fd;
  bool new_group, die_with_parent;
  sigset_t mask;  // the caller's, restored just before exec
  // Written by the child, read by the parent once it resumes.
  volatile int start_errno;
  volatile bool cwd_failed;
};

// Runs on its own stack in the parent's memory until exec; only system
// calls, no allocation, no locks.
__attribute__((no_sanitize("address", "undefined"))) int child_main(void* arg) {
  ChildPlan* p = static_cast<ChildPlan*>(arg);
  for (int s = 1; s < NSIG; ++s) {
    struct sigaction sa;
    if (sigaction(s, nullptr, &sa) != 0) continue;
    if (s != SIGPIPE && (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)) continue;
    sa.sa_handler = SIG_DFL;
    sa.sa_flags = 0;
    sigemptyset(&sa.sa_mask);
    sigaction(s, &sa, nullptr);
  }
  if (p->die_with_parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (p->new_group) setpgid(0, 0);
  const int in = p->in_fd >= 0 ? p->in_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in >= 0 && in != STDIN_FILENO) dup2(in, STDIN_FILENO);
  if (p->out_fd >= 0 && p->out_fd != STDOUT_FILENO) dup2(p->out_fd, STDOUT_FILENO);
  if (p->err_fd >= 0 && p->err_fd != STDERR_FILENO) dup2(p->err_fd, STDERR_FILENO);
  if (p->cwd && chdir(p->cwd) != 0) {
    p->start_errno = errno;
    p->cwd_failed = true;
    _exit(127);
  }
  sigprocmask(SIG_SETMASK, &p->mask, nullptr);
  execvpe(p->argv[0], p->argv, p->envp);
  p->start_errno = errno;
  _exit(127);
}

constexpr size_t kChildStack = 256 * 1024;  // execvpe's PATH buffers, with room

}  // namespace

Spawned spawn_process(const std::vector<std::string>& argv, const SpawnOptions& o) {
  if (argv.empty()) throw std::invalid_argument("spawn_process: empty argv");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envs;
  if (o.env) {
    for (const auto& e : *o.env) envs.push_back(const_cast<char*>(e.c_str()));
    envs.push_back(nullptr);
  }
  ChildPlan plan{args.data(), o.env ? envs.data() : environ, o.cwd.empty() ? nullptr : o.cwd.c_str(),
                 o.stdin_fd, o.stdout_fd, o.stderr_fd, o.new_process_group, o.die_with_parent, {}, 0, false};
  void* stack = mmap(nullptr, kChildStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "spawn: child stack");
  // No handler of this process may run in the child while it shares this
  // memory: every signal is blocked until the child has reset them.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &plan.mask);
  const pid_t pid = clone(child_main, static_cast<char*>(stack) + kChildStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
  const int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &plan.mask, nullptr);
  munmap(stack, kChildStack);
  if (pid < 0) throw std::system_error(clone_errno, std::generic_category(), "spawn: clone");
  // Also here: a caller that kills the group at once finds it made.
  if (o.new_process_group) setpgid(pid, pid);
  Spawned s;
  s.pid = pid;
  s.start_errno = plan.start_errno;
  s.cwd_failed = plan.cwd_failed;
  return s;
}

int open_pidfd(pid_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // close-on-exec by default
}

}  // namespace torq::base
