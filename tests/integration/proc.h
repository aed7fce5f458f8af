// Helpers for integration tests that drive the real binaries.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace torq::test {

// An environment variable for a test's scope: set (or, given no value, only
// saved) now, and put back as it was, set or unset, when it goes. The pools
// and binaries a test starts inherit it.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::string name) : name_(std::move(name)) {
    if (const char* v = std::getenv(name_.c_str())) old_ = v;
  }
  ScopedEnv(std::string name, const std::string& value) : ScopedEnv(std::move(name)) {
    setenv(name_.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_.c_str(), old_->c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

struct ProcResult {
  int code = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command line (arguments quoted by the caller), capturing
// its combined output and exit code.
inline ProcResult run_cmd(const std::string& cmd) {
  ProcResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline std::string bin(const std::string& name) { return std::string(TORQ_BIN_DIR) + "/" + name; }

inline std::string fresh_dir(const std::string& name) {
  const std::string d = std::string(TORQ_TEST_TMP) + "/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline nlohmann::ordered_json read_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::ordered_json::parse(ss.str());
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace torq::test

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <vector>

namespace torq::test {

// A child process with its stdout+stderr on a pipe (for kill tests).
struct Child {
  pid_t pid = -1;
  int out = -1;
  std::string buffer;
  // Reads until `needle` appears in the output or the child closes it.
  bool wait_for(const std::string& needle) {
    char buf[4096];
    while (buffer.find(needle) == std::string::npos) {
      ssize_t n = read(out, buf, sizeof buf);
      if (n <= 0) return false;
      buffer.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  int wait_exit() {
    char buf[4096];
    while (read(out, buf, sizeof buf) > 0) {
    }
    int status = 0;
    waitpid(pid, &status, 0);
    close(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

inline Child spawn(const std::vector<std::string>& args) {
  int p[2];
  if (pipe(p) != 0) return {};
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    close(p[0]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(p[1]);
  c.out = p[0];
  return c;
}

}  // namespace torq::test
