#include "worker/toolchain/toolchain_probe.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "worker/toolchain/subprocess.h"

namespace torq::toolchain {

namespace fs = std::filesystem;

namespace {

constexpr double kProbeTimeoutS = 60;

// Values a probe's program may name: no job, so only the tools'.
TemplateValues program_values(const ToolchainConfig& c) {
  TemplateValues v;
  v.scalars = {{"torq_sim", torq_sim_path()}, {"worker_dir", self_dir()}};
  for (const auto& [name, path] : c.tools) v.scalars[name] = path;
  return v;
}

// What is wrong with `path` as a program, or "" when it looks runnable.
std::string program_problem(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    struct stat l {};
    if (err == ENOENT && lstat(path.c_str(), &l) == 0 && S_ISLNK(l.st_mode))
      return "it is a symbolic link to a file that does not exist";
    return err == ENOENT ? std::string("no such file") : std::string(std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) return "it is a directory, not a program";
  if (S_ISCHR(st.st_mode)) return "it is a character device, not a program";
  if (S_ISBLK(st.st_mode)) return "it is a block device, not a program";
  if (S_ISFIFO(st.st_mode)) return "it is a FIFO, not a program";
  if (S_ISSOCK(st.st_mode)) return "it is a socket, not a program";
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if (access(path.c_str(), X_OK) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("it is not executable (mode ") + mode + ")";
  }
  if (st.st_size == 0) return "it is an empty file (exec would run it as an empty shell script)";
  return "";
}

// argv[0] as exec finds it: itself when it has a '/', else the first PATH
// entry that is a runnable file. "" with *why when there is none.
std::string resolve_program(const std::string& name, std::string* why) {
  if (name.find('/') != std::string::npos) {
    *why = program_problem(name);
    return why->empty() ? name : "";
  }
  const char* env = std::getenv("PATH");
  const std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  std::string first_found, first_problem;
  for (size_t at = 0; at <= path.size();) {
    size_t end = path.find(':', at);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end > at ? path.substr(at, end - at) : ".";
    at = end + 1;
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (stat(candidate.c_str(), &st) != 0) continue;
    const std::string problem = program_problem(candidate);
    if (problem.empty()) return candidate;
    if (first_found.empty()) first_found = candidate, first_problem = problem;
  }
  *why = first_found.empty() ? "not found on PATH (" + path + ")" : first_found + ": " + first_problem;
  return "";
}

std::string first_line(const std::string& text) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
    // A line with a word in it (not a "# =====" rule).
    if (std::any_of(l.begin(), l.end(), [](unsigned char ch) { return std::isalnum(ch); }))
      return l.size() > 200 ? l.substr(0, 200) + "..." : l;
  }
  return "";
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Runs one probe in `dir`.
ToolProbe run_probe(const std::string& step, std::vector<std::string> argv, double timeout_s, const std::string& dir) {
  ToolProbe p;
  p.step = step;
  p.argv = argv;
  const std::string program = joined(std::vector<std::string>(argv.begin(), argv.end() - 1));
  std::string why;
  if (resolve_program(argv[0], &why).empty()) {
    p.why = program + " cannot run: " + (argv[0] == program ? "" : argv[0] + ": ") + why;
    return p;
  }
  const std::string shown = "`" + joined(argv) + "`";
  const int limit_ms = static_cast<int>(std::min(timeout_s, kProbeTimeoutS) * 1000);
  ProcessResult r;
  try {
    r = run_process(argv, limit_ms, dir, {"TORQ_FARM_BF16_ROUNDING=truncate"});
  } catch (const std::exception& e) {
    p.why = shown + " cannot start: " + e.what();
    return p;
  }
  const std::string diag = diagnostic_excerpt(r.err.empty() ? r.out : r.err, 3, 400);
  if (r.timed_out) {
    p.why = shown + " did not answer within " + std::to_string(limit_ms / 1000) + " s (its process group was killed)";
  } else if (r.term_signal) {
    p.why = shown + " was killed by " + signal_name(r.term_signal);
  } else if (r.exit_code != 0) {
    p.why = shown + " exited with status " + std::to_string(r.exit_code) + (diag.empty() ? "" : ": " + diag);
  } else if (first_line(r.out + "\n" + r.err).empty()) {
    p.why = shown + " exited 0 but printed nothing (the real tool prints its " +
            std::string(argv.back() == "--version" ? "version" : "usage") + ")";
  } else {
    p.ok = true;
    p.answer = first_line(r.out.empty() ? r.err : r.out);
  }
  if (!p.ok) p.why = program + " cannot run: " + p.why;
  return p;
}

}  // namespace

std::vector<std::string> probe_argv(const ToolchainConfig& c, const Step& s, const std::string& step) {
  const TemplateValues v = program_values(c);
  std::vector<std::string> argv = expand_argv({s.argv[0]}, v);
  // python3 -m MODULE; torq-sim PERSONA.
  if (s.argv.size() > 2 && s.argv[1] == "-m") {
    argv.push_back("-m");
    argv.push_back(s.argv[2]);
  } else if (s.argv[0] == "{torq_sim}" && s.argv.size() > 1 && s.argv[1].rfind("torq-", 0) == 0) {
    argv.push_back(s.argv[1]);
  }
  argv.push_back(step == "compile" ? "--version" : "--help");
  return argv;
}

std::vector<ToolProbe> probe_tools(const ToolchainConfig& c, bool skip_run) {
  std::string templ = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) +
                      "/torq-probe-XXXXXX";
  if (!mkdtemp(templ.data())) throw std::runtime_error("cannot create a scratch folder for the tool probes: " +
                                                       std::string(std::strerror(errno)));
  std::vector<ToolProbe> out;
  std::vector<std::vector<std::string>> done;
  const std::pair<const char*, const Step*> steps[] = {
      {"import", &c.import_step}, {"compile", &c.compile_step}, {"run", &c.run_step}};
  for (const auto& [name, s] : steps) {
    if (skip_run && std::string(name) == "run") continue;
    std::vector<std::string> argv;
    try {
      argv = probe_argv(c, *s, name);
    } catch (const std::exception& e) {
      ToolProbe p;
      p.step = name;
      p.why = s->argv[0] + " cannot run: " + e.what();
      out.push_back(p);
      continue;
    }
    if (std::find(done.begin(), done.end(), argv) != done.end()) continue;
    done.push_back(argv);
    out.push_back(run_probe(name, argv, s->timeout_s, templ));
  }
  std::error_code ec;
  fs::remove_all(templ, ec);
  return out;
}

std::string describe(const ToolProbe& p) {
  return p.step + " step: " + (p.ok ? "`" + joined(p.argv) + "`: " + p.answer : p.why);
}

}  // namespace torq::toolchain
