// Sibling tools (torq-worker, torq-gen-config) run as child processes:
// argv, never a shell string, output captured.
#pragma once

#include <string>
#include <vector>

namespace torq::coordinator {

// $<env_var> when set, else `name` beside this executable, else /usr/bin/<name>.
std::string sibling_binary(const std::string& name, const char* env_var);

struct ToolRun {
  int exit_code = -1;  // -1: did not exit normally (signal, exec failure)
  std::string out, err;
};

// Runs argv[0] with argv and waits for it (stdin from /dev/null).
ToolRun run_tool(const std::vector<std::string>& argv);

}  // namespace torq::coordinator
