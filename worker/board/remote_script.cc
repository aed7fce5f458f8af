#include "worker/board/remote_script.h"

#include <regex>
#include <sstream>
#include <stdexcept>

namespace torq::board {

std::string shell_quote(const std::string& text) {
  std::string q = "'";
  for (char c : text) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + shell_quote(a);
  return s;
}

std::string bash_command(const std::string& script) { return "bash -c " + shell_quote(script); }

std::string timed_run_command(const std::vector<std::string>& argv, const std::string& dir,
                              const std::string& setup_script) {
  if (argv.empty()) throw std::invalid_argument("timed_run_command: empty argv");
  std::string qdir = shell_quote(dir);
  std::string script =
      "cd " + qdir + " 2>/dev/null || { echo " + shell_quote(std::string(kMissingDirMarker) + ": " + dir) +
      " >&2; exit 1; }\n"
      "{ read -r _ _ _ _ g _ < /proc/$$/stat && echo \"$g\" > " + kPgidFile + "; } 2>/dev/null\n" +
      (setup_script.empty() ? std::string()
                            : "if [ -f " + shell_quote(setup_script) + " ]; then . " + shell_quote(setup_script) +
                                  "; fi\n") +
      "time { " + shell_join(argv) + " ; }\n"
      "rc=$?; rm -f " + kPgidFile + "; exit $rc\n";
  return bash_command(script);
}

namespace {

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TimedStderr split_time_report(const std::string& stderr_text) {
  static const std::regex real_re(R"(^real\s+(\d+)m(\d+)[.,](\d+)s\s*$)");
  TimedStderr r{stderr_text, std::nullopt};
  auto lines = split_lines(stderr_text);
  for (size_t i = lines.size(); i-- > 0;) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, real_re)) continue;
    double frac = std::stod("0." + m[3].str());
    r.wall_s = std::stoi(m[1].str()) * 60.0 + std::stoi(m[2].str()) + frac;
    size_t begin = (i > 0 && lines[i - 1].empty()) ? i - 1 : i;
    size_t end = i + 1;
    while (end < lines.size() && end <= i + 2 &&
           (lines[end].rfind("user", 0) == 0 || lines[end].rfind("sys", 0) == 0))
      ++end;
    std::string kept;
    for (size_t k = 0; k < lines.size(); ++k)
      if (k < begin || k >= end) kept += lines[k] + "\n";
    r.err = kept;
    break;
  }
  return r;
}

std::string diagnostic_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  if (t.size() > 400) t = "..." + t.substr(t.size() - 400);
  for (char& c : t)
    if (c == '\n') c = '|';
  return t.empty() ? "(no diagnostic)" : t;
}

void check_remote_path(const std::string& path) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("remote path '" + path + "': " + why);
  };
  if (path.empty()) fail("empty");
  if (path[0] == '-') fail("starts with '-'");
  for (char c : path) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    for (const char* e = "/._-+=,@"; !ok && *e; ++e) ok = (c == *e);
    if (!ok) fail(std::string("character '") + c + "' is not allowed (letters, digits, /._-+=,@)");
  }
}

}  // namespace torq::board
