// Local worker processes for an embedded coordinator (see local_fleet.h).
#include "coordinator/fleet/local_fleet.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>

#include "pipeline/base/file_bytes.h"
#include "coordinator/fleet/tool_process.h"
#include "pipeline/base/temp_files.h"
#include "pipeline/core/sha256.h"
#include "pipeline/core/types.h"

namespace torq::coordinator {

namespace {
std::atomic<int> g_endpoint_counter{0};
std::mutex g_reap_mutex;

// The worker's own check of a backend choice: throws its message when bad.
void check_backend(const std::string& binary, const std::vector<std::string>& backend_args) {
  std::vector<std::string> args{binary, "--check-backend"};
  args.insert(args.end(), backend_args.begin(), backend_args.end());
  const ToolRun r = run_tool(args);
  if (r.exit_code != 0) {
    std::string msg = r.err;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    const std::string prefix = "torq-worker: error: ";
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    throw pipeline::PipelineError(msg.empty() ? "the worker rejected --backend " + backend_args[1] : msg);
  }
}

}  // namespace

std::string toolchain_target(const std::string& toolchain_file) {
  if (const std::string why = base::not_a_regular_file(toolchain_file); !why.empty())
    throw pipeline::PipelineError(toolchain_file + ": cannot open toolchain file: " + why);
  std::ifstream f(toolchain_file, std::ios::binary);
  if (!f) throw pipeline::PipelineError(toolchain_file + ": cannot open toolchain file");
  std::stringstream ss;
  ss << f.rdbuf();
  return "toolchain:" + std::filesystem::path(toolchain_file).stem().string() + "-" +
         pipeline::sha256_hex(ss.str()).substr(0, 8);
}

LocalWorkers::LocalWorkers(LocalWorkersOptions o) : opts_(std::move(o)) {
  if (opts_.worker_binary.empty()) opts_.worker_binary = sibling_binary("torq-worker", "TORQ_WORKER_BIN");
  if (access(opts_.worker_binary.c_str(), X_OK) != 0)
    throw pipeline::PipelineError("worker binary " + opts_.worker_binary + " is not executable");
  std::vector<std::string> backend_args;
  if (opts_.backend != "sim") {
    backend_args = {"--backend", opts_.backend, "--toolchain",
                    std::filesystem::absolute(opts_.toolchain_file).lexically_normal().string()};
    check_backend(opts_.worker_binary, backend_args);
  }
  const pid_t parent = getpid();
  const int jobs = std::max(1, opts_.workers);
  const int lanes = opts_.backend != "sim" ? 1 : opts_.lanes <= 0 ? jobs : std::min(opts_.lanes, jobs);
  for (int i = 0, left = jobs; left > 0; ++i, left -= lanes) {
    const int capacity = std::min(lanes, left);
    std::vector<std::string> args{opts_.worker_binary, "--connect", opts_.endpoint,
                                  "--target", opts_.target,
                                  "--executors", opts_.executors,
                                  "--capacity", std::to_string(capacity),
                                  "--lanes", std::to_string(capacity),
                                  "--prefetch", std::to_string(std::max(0, opts_.prefetch) * capacity),
                                  "--cache", opts_.cache_dir,
                                  "--threads", std::to_string(std::max(1, opts_.threads_per_job)),
                                  "--heartbeat-ms", std::to_string(opts_.heartbeat_ms),
                                  // This machine is not a board: no device health check (a
                                  // broken local toolchain shows as op errors, not a Bad device
                                  // that would leave the run waiting).
                                  "--no-health-check",
                                  "--id", opts_.id_prefix + "-" + std::to_string(i)};
    args.insert(args.end(), backend_args.begin(), backend_args.end());
    if (opts_.trusted_cache) args.push_back("--trusted-cache");
    args.insert(args.end(), opts_.extra_args.begin(), opts_.extra_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string log = opts_.log_file.empty() ? "/dev/null" : opts_.log_file;
    const pid_t pid = fork();
    if (pid < 0) {
      stop_all();
      throw pipeline::PipelineError("cannot start a local worker: fork failed");
    }
    if (pid == 0) {
      // Child: own process group (a terminal's Ctrl-C reaches the parent,
      // which winds the run down), dies with the parent, stderr to the log.
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(0);
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, STDERR_FILENO);
        close(fd);
      }
      const int null = open("/dev/null", O_RDWR);
      if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        close(null);
      }
      execv(argv[0], argv.data());
      std::fprintf(stderr, "cannot execute %s\n", argv[0]);
      _exit(127);
    }
    setpgid(pid, pid);
    pids_.push_back(pid);
  }
}

LocalWorkers::~LocalWorkers() {
  end_watch();
  stop_all();
}

void LocalWorkers::end_watch() {
  {
    std::lock_guard<std::mutex> lk(watch_mu_);
    stopping_ = true;
  }
  watch_cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

void LocalWorkers::term_all() {
  for (pid_t p : pids_)
    if (p > 0) kill(p, SIGTERM);
}

void LocalWorkers::stop_all() {
  std::lock_guard<std::mutex> lock(g_reap_mutex);
  term_all();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (pid_t& p : pids_) {
    while (p > 0) {
      const pid_t r = waitpid(p, nullptr, WNOHANG);
      if (r == p || (r < 0 && errno == ECHILD)) {
        p = -1;
        break;
      }
      if (std::chrono::steady_clock::now() >= until) {
        kill(-p, SIGKILL);
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
        p = -1;
        break;
      }
      usleep(1000);  // the command's last wait: look often
    }
  }
}

void LocalWorkers::stop_soon() {
  end_watch();  // the flag it sets may not outlive this call
  std::lock_guard<std::mutex> lock(g_reap_mutex);
  term_all();
}

void LocalWorkers::stop() {
  end_watch();
  stop_all();
}

int LocalWorkers::alive() {
  std::lock_guard<std::mutex> lock(g_reap_mutex);
  int n = 0;
  for (pid_t& p : pids_) {
    if (p <= 0) continue;
    const pid_t r = waitpid(p, nullptr, WNOHANG);
    if (r == p || (r < 0 && errno == ECHILD)) p = -1;
    else ++n;
  }
  return n;
}

void LocalWorkers::watch(std::atomic<bool>* flag) {
  watcher_ = std::thread([this, flag] {
    std::unique_lock<std::mutex> lk(watch_mu_);
    while (!stopping_) {
      if (alive() == 0) {
        flag->store(true);
        return;
      }
      watch_cv_.wait_for(lk, std::chrono::milliseconds(100));
    }
  });
}

std::string LocalWorkers::log_tail(size_t max_bytes) const {
  std::ifstream f(opts_.log_file, std::ios::binary);
  if (!f) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

std::string LocalWorkers::private_endpoint() {
  return "ipc:///tmp/torq-" + std::to_string(getpid()) + "-" + std::to_string(g_endpoint_counter++) + ".sock";
}

PrivateEndpoint::PrivateEndpoint() : endpoint_(LocalWorkers::private_endpoint()) {}
PrivateEndpoint::~PrivateEndpoint() { LocalWorkers::remove_endpoint_file(endpoint_); }

std::string cache_import_path(const std::string& cache_dir) { return base::temp_path_for(cache_dir + "/import"); }

void adopt_cache_file(const std::string& cache_dir, const std::string& hash, const std::string& import_dir) {
  const std::string tmp = cache_import_path(import_dir.empty() ? cache_dir : import_dir);
  std::error_code ec;
  if (hash.empty()) {
    std::filesystem::remove(tmp, ec);
    return;
  }
  const std::string path = cache_dir + "/" + hash + ".onnx";
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw pipeline::PipelineError(path + ": cannot write (" + ec.message() + ")");
}

void LocalWorkers::remove_endpoint_file(const std::string& endpoint) {
  const std::string prefix = "ipc://";
  if (endpoint.rfind(prefix, 0) != 0) return;
  std::error_code ec;
  std::filesystem::remove(endpoint.substr(prefix.size()), ec);
}

}  // namespace torq::coordinator
