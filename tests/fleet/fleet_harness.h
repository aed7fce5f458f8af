// Helpers for the fleet tests: free loopback ports, child processes with
// their output in a log file, and a scripted fake worker (a raw DEALER).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/wire/fleet_codec.h"

namespace torq::fleet_test {

using Clock = std::chrono::steady_clock;

inline std::string bin(const std::string& name) { return std::string(TORQ_BIN_DIR) + "/" + name; }

inline std::string fresh_dir(const std::string& name) {
  const std::string d = std::string(TORQ_TEST_TMP) + "/fleet/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A TCP port on 127.0.0.1 that was free a moment ago.
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

inline std::string endpoint(int port) { return "tcp://127.0.0.1:" + std::to_string(port); }

// Occurrences of `needle` in `text` (log lines of a kind).
inline size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// The number `pattern`'s first group matches in the coordinator's summary,
// or -1 when it is not there.
inline long summary_number(const std::string& out, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(pattern))) return -1;
  return std::stol(m[1]);
}

// A child process whose stdout and stderr go to `log` (appended).
class Proc {
 public:
  Proc() = default;
  Proc(const std::vector<std::string>& args, const std::string& log, const std::vector<std::string>& env = {})
      : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  Proc(Proc&& o) noexcept { *this = std::move(o); }
  Proc& operator=(Proc&& o) noexcept {
    std::swap(pid_, o.pid_);
    std::swap(log_, o.log_);
    std::swap(code_, o.code_);
    return *this;
  }
  ~Proc() {
    if (pid_ > 0 && !code_) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void signal(int sig) const { ::kill(pid_, sig); }
  std::string output() const { return slurp(log_); }
  // The exit code (128 + signal when killed), or nullopt after timeout_ms.
  std::optional<int> wait(int timeout_ms) {
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!code_) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      if (Clock::now() >= until) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return code_;
  }
  // Waits until the output contains `needle`; false after timeout_ms.
  bool wait_for(const std::string& needle, int timeout_ms) const {
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (output().find(needle) == std::string::npos) {
      if (Clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

 private:
  pid_t pid_ = -1;
  std::string log_;
  std::optional<int> code_;
};

// A scripted worker speaking the protocol by hand over a raw DEALER.
class FakeWorker {
 public:
  // With `curve` (server public key, own public key, own secret key; z85),
  // it connects as a CURVE client.
  FakeWorker(zmq::context_t& ctx, const std::string& ep, const std::vector<std::string>& curve = {})
      : s_(ctx, zmq::socket_type::dealer) {
    s_.set(zmq::sockopt::linger, 0);
    if (curve.size() == 3) {
      s_.set(zmq::sockopt::curve_serverkey, curve[0]);
      s_.set(zmq::sockopt::curve_publickey, curve[1]);
      s_.set(zmq::sockopt::curve_secretkey, curve[2]);
    }
    s_.connect(ep);
  }
  void send(const std::string& payload) { s_.send(zmq::buffer(payload), zmq::send_flags::none); }
  void send_frames(const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i)
      s_.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  void ready(const std::string& id, const std::string& target, std::vector<pipeline::Executor> ex, uint32_t cap,
             std::vector<std::string> running = {}, uint32_t prefetch = 0) {
    pipeline::WorkerInfo w;
    w.worker_id = id;
    w.target = target;
    w.executors = std::move(ex);
    w.capacity = cap;
    w.prefetch = prefetch;
    w.toolchain = "fake";
    w.running = std::move(running);
    send(pipeline::encode_ready(w));
  }
  void result(const std::string& job_id, pipeline::Executor e, pipeline::Status st = pipeline::Status::kSuccess) {
    pipeline::ExecResult r;
    r.job_id = job_id;
    r.executor = e;
    r.status = st;
    r.worker_id = "fake";
    send(pipeline::encode_result_message(r));
  }
  void started(const std::string& job_id) { send(pipeline::encode_job_started(job_id)); }
  // The next message other than HEARTBEAT and MODEL_HINT within timeout_ms
  // (sending our own heartbeats meanwhile when `alive`), or nullopt. The
  // hints (models of queued jobs, which a real worker fetches ahead) are
  // kept in hints(), in order.
  std::optional<pipeline::FleetMessage> next(int timeout_ms, bool alive = true) {
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const auto now = Clock::now();
      if (alive && now - last_hb_ >= std::chrono::milliseconds(50)) {
        send(pipeline::encode_heartbeat());
        last_hb_ = now;
      }
      if (now >= until) return std::nullopt;
      zmq::message_t m;
      zmq_pollitem_t item{s_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      if (!s_.recv(m, zmq::recv_flags::dontwait)) continue;
      auto msg = pipeline::decode_fleet_message(m.data(), m.size(), pipeline::kMaxFleetBlobBytes);
      if (msg.type == pipeline::FleetType::kModelHint) hints_.push_back(msg.hash);
      else if (msg.type != pipeline::FleetType::kHeartbeat) return msg;
    }
  }
  const std::vector<std::string>& hints() const { return hints_; }

 private:
  zmq::socket_t s_;
  std::vector<std::string> hints_;
  Clock::time_point last_hb_{};
};

}  // namespace torq::fleet_test
