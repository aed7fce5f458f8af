// Child processes for the board room: an argv started with base::spawn_process
// (pipeline/base/spawn.h: no copy of this process's page tables; never a shell
// string), stdout and stderr captured, a deadline, and a kill of the child's
// whole process group when the deadline passes.
//
// Contract:
//  - argv[0] is looked up in PATH (execvp); stdin is /dev/null.
//  - The child runs in a process group of its own (setpgid), so a timeout
//    reaches everything it started in that group (SIGKILL to -pgid).
//    Descendants that leave the group on purpose (a daemonised `ssh -f`
//    master calls setsid) are not touched.
//  - If argv[0] cannot be executed the result has exit_code 127 and the
//    reason in err, as a shell would report it.
//  - Never throws for the child's behaviour; throws std::invalid_argument
//    for an empty argv and std::system_error when the local system cannot
//    create pipes or the process.
#pragma once

#include <string>
#include <vector>

namespace torq::board {

struct ProcResult {
  int exit_code = -1;      // exit status, or -1 when killed by a signal
  int term_signal = 0;     // the signal that ended the child, if any
  bool timed_out = false;  // the deadline passed; the group was killed
  std::string out;         // captured stdout
  std::string err;         // captured stderr
  double elapsed_ms = 0;   // local wall time from start to reap
};

// Runs argv to completion or until timeout_ms (> 0) passes.
ProcResult run_process(const std::vector<std::string>& argv, int timeout_ms);

}  // namespace torq::board
