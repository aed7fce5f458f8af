// The text that goes to a board's shell, built from argv only by quoting:
// every item is single-quoted (a ' inside becomes '\''), so nothing from a
// model (names, paths) is ever interpreted by the remote shell. Also the
// parser of bash's `time` report (real XmY.YYYs), the convention of the real
// tool's remote path (torq-compiler remote_testing.py).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace torq::board {

// 'text' with embedded ' as '\''; "''" for the empty string.
std::string shell_quote(const std::string& text);

// The quoted argv joined by spaces.
std::string shell_join(const std::vector<std::string>& argv);

// One string for ssh: `bash -c '<script>'` where the script changes to dir
// (a missing dir prints kMissingDirMarker and exits 1), records its process
// group in dir/.torq-run.pgid (for a remote kill after a timeout; removed
// when the run ends), sources `setup_script` when the board has it (the real
// tool's `if [ -f S ]; then source S; fi`), runs `time { argv ; }` and exits
// with argv's status.
std::string timed_run_command(const std::vector<std::string>& argv, const std::string& dir,
                              const std::string& setup_script = "");
inline constexpr const char* kMissingDirMarker = "torq-board: no staging directory";
inline constexpr const char* kPgidFile = ".torq-run.pgid";

// `bash -c '<script>'` for an arbitrary bash script.
std::string bash_command(const std::string& script);

// Stderr of a timed run split into the command's own stderr and the board
// wall time: the last "real XmY.YYYs" line (',' as decimal point accepted)
// with the user/sys lines after it and the blank line before it removed.
struct TimedStderr {
  std::string err;                // stderr without the time report
  std::optional<double> wall_s;   // absent: the command did not finish
};
TimedStderr split_time_report(const std::string& stderr_text);

// The end of a diagnostic (at most ~400 characters) on one line, newlines
// shown as '|'; "(no diagnostic)" when empty.
std::string diagnostic_line(const std::string& text);

// Throws std::invalid_argument unless path is a plain remote path: non-empty,
// no '-' at the start, only letters, digits and "/._-+=,@" (scp may glob or
// the remote shell may read what is outside that set).
void check_remote_path(const std::string& path);

}  // namespace torq::board
