// Running a tool as a child process, safely (DESIGN §6): argv only (execvp,
// never a shell), its own process group, a timeout after which the whole
// group is killed (SIGKILL to -pgid), stdin from /dev/null, stdout and stderr
// captured (each capped). After the child exits its group is killed too, so
// nothing it started is left behind.
#pragma once

#include <string>
#include <vector>

namespace torq::toolchain {

struct ProcessResult {
  int exit_code = -1;      // the exit status when it exited (127: could not be executed)
  int term_signal = 0;     // the signal that killed it (0: it exited)
  bool timed_out = false;  // killed by us at the deadline
  std::string out, err;    // captured stdout / stderr (first 64 KiB each)
  double wall_ms = 0;
  bool ok() const { return !timed_out && term_signal == 0 && exit_code == 0; }
};

// Runs argv[0] (looked up on PATH when it has no '/') with `argv`, in `cwd`
// when not empty, for at most `timeout_ms`, with this process's environment
// plus `env` ("NAME=VALUE" items, which win). Never throws for the child's
// failures; throws std::runtime_error when the process or its pipes cannot be
// made. The child is started with base::spawn_process (no copy of this
// process's page tables) and dies with the thread that started it.
ProcessResult run_process(const std::vector<std::string>& argv, int timeout_ms, const std::string& cwd = {},
                          const std::vector<std::string>& env = {});

// The first useful lines of a tool's diagnostic: from the first line that
// says "error" (else the first non-empty line), at most `max_lines` lines
// and `max_chars` characters.
std::string diagnostic_excerpt(const std::string& text, size_t max_lines = 6, size_t max_chars = 1200);

// "SIGSEGV" etc. for a signal number.
std::string signal_name(int sig);

}  // namespace torq::toolchain
