// Sibling tools (torq-worker, torq-gen-config) run as child processes:
// argv, never a shell string, output captured.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <string>
#include <vector>

namespace torq::coordinator {

// $<env_var> when set, else `name` beside this executable, else /usr/bin/<name>.
std::string sibling_binary(const std::string& name, const char* env_var);

struct ToolRun {
  int exit_code = -1;  // -1: did not exit normally (signal, exec failure)
  std::string out, err;
};

// Runs argv[0] with argv and waits for it (stdin from /dev/null). With
// `running`, the child's pid is there while it runs (0 otherwise), so that
// another thread may kill it: it is set to 0 before the child is reaped, so
// a kill() of a pid read from it never reaches another process.
ToolRun run_tool(const std::vector<std::string>& argv, std::atomic<pid_t>* running = nullptr);

}  // namespace torq::coordinator
