// Starting a child process without copying this one's page tables.
//
// fork() copies the parent's page tables and write-protects every page; in
// a worker's job process or the coordinator (hundreds of MB mapped) that
// costs more CPU than the child it starts, and the parent then takes a
// page fault on its next write to each page (here: 33 ms of CPU per start
// from a process with 64 MB touched, 227 ms from 512 MB, against 2.5 and
// 3.9 ms spawned, issue 32). spawn_process() starts
// the child the way posix_spawn does (clone with CLONE_VM | CLONE_VFORK on
// a stack of its own: this process is suspended until the child has exec'd
// or exited), and can also give the child PR_SET_PDEATHSIG, which
// posix_spawn cannot.
//
// Contract:
//  - argv is passed as is (never a shell); argv[0] is looked up in PATH
//    when it has no '/'.
//  - stdin is /dev/null unless stdin_fd is given; stdout / stderr are the
//    given descriptors, else inherited. Descriptors marked close-on-exec
//    are not inherited (the caller's pipes' other ends).
//  - Signal dispositions with a handler are reset to the default in the
//    child, SIGPIPE too; the child gets this thread's signal mask.
//  - When the program cannot be started (not found, not executable, a cwd
//    that cannot be entered) the child exits 127 and the result says why
//    (start_errno, and whether it was the cwd); the caller still reaps the
//    child.
//  - Throws std::system_error when the system cannot create the process.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace torq::base {

struct SpawnOptions {
  int stdin_fd = -1;                          // -1: /dev/null
  int stdout_fd = -1;                         // -1: this process's stdout
  int stderr_fd = -1;                         // -1: this process's stderr
  std::string cwd;                            // "": this process's
  const std::vector<std::string>* env = nullptr;  // the whole environment; nullptr: this process's
  bool new_process_group = true;              // setpgid(0, 0): a timeout can kill the group
  bool die_with_parent = false;               // PR_SET_PDEATHSIG SIGKILL (the calling thread)
};

struct Spawned {
  pid_t pid = -1;
  int start_errno = 0;     // 0: the program is running
  bool cwd_failed = false;  // start_errno is chdir's, not exec's
};

Spawned spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options);

// A descriptor that polls readable once the child `pid` (not yet reaped)
// has exited, so that a caller waiting for the child and its pipes sleeps
// until something happens instead of looking every few milliseconds
// (close-on-exec; the caller closes it). -1 when the kernel lacks
// pidfd_open (before Linux 5.3): the caller then looks on a timer.
int open_pidfd(pid_t pid);

}  // namespace torq::base
