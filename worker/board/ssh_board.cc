#include "worker/board/ssh_board.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "worker/board/process.h"
#include "worker/board/remote_script.h"

namespace fs = std::filesystem;

namespace torq::board {
namespace {

bool contains(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

// What an ssh that failed before running anything says about why.
InfraKind classify_ssh_failure(const std::string& err) {
  if (contains(err, "IDENTIFICATION HAS CHANGED")) return InfraKind::host_key_changed;
  for (const char* m : {"Permission denied", "Host key verification failed",
                        "Too many authentication failures", "no matching host key"})
    if (contains(err, m)) return InfraKind::auth;
  for (const char* m : {"Connection refused", "Connection timed out", "timed out", "No route to host",
                        "Network is unreachable", "Could not resolve hostname", "Name or service not known",
                        "Temporary failure in name resolution"})
    if (contains(err, m)) return InfraKind::unreachable;
  return InfraKind::ssh;
}

std::string next_socket_name() {
  static std::atomic<int> counter{0};
  return "mux-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

SshBoard::SshBoard(BoardAddress address, std::string control_dir, std::string owner, BoardOptions options)
    : address_(std::move(address)), control_dir_(std::move(control_dir)), owner_(std::move(owner)),
      options_(std::move(options)) {
  if (address_.host.empty()) throw std::invalid_argument("SshBoard: empty host");
  if (options_.host_key_policy != "accept-new" && options_.host_key_policy != "ignore")
    throw std::invalid_argument("SshBoard: host key policy must be accept-new or ignore, got '" +
                                options_.host_key_policy + "'");
  control_dir_ = fs::absolute(control_dir_).lexically_normal().string();
  control_path_ = control_dir_ + "/" + next_socket_name();
  // ssh binds "<path>.<16 random chars>" first; sun_path holds 107 bytes.
  if (control_path_.size() > 88)
    throw std::invalid_argument("SshBoard: control dir '" + control_dir_ +
                                "' is too long for a unix socket path (keep it under ~70 characters)");
}

SshBoard::~SshBoard() {
  try { close(); } catch (...) {}
}

void SshBoard::note(const std::string& text) const {
  if (options_.log) options_.log(text);
  else std::cerr << "torq-board " << to_string(address_) << ": " << text << std::endl;
}

std::vector<std::string> SshBoard::common_options() const {
  std::vector<std::string> o = {
      "-o", "BatchMode=yes",
      "-o", options_.host_key_policy == "ignore" ? "StrictHostKeyChecking=no" : "StrictHostKeyChecking=accept-new",
      "-o", "UserKnownHostsFile=" + (options_.host_key_policy == "ignore" ? std::string("/dev/null")
                                                                          : control_dir_ + "/known_hosts"),
      "-o", "LogLevel=ERROR",
      "-o", "ControlPath=" + control_path_,
      // Bounds a fallback to a direct connection if the master vanished
      // between ensure_open() and the call.
      "-o", "ConnectTimeout=" + std::to_string(options_.connect_timeout_s),
  };
  if (!address_.key_file.empty()) {
    o.insert(o.end(), {"-i", address_.key_file, "-o", "IdentitiesOnly=yes"});
  }
  return o;
}

std::vector<std::string> SshBoard::ssh_base() const {
  std::vector<std::string> a = {"ssh", "-T", "-o", "ControlMaster=no"};
  auto o = common_options();
  a.insert(a.end(), o.begin(), o.end());
  a.insert(a.end(), {"-p", std::to_string(address_.port), "--", ssh_destination(address_)});
  return a;
}

void SshBoard::open() {
  if (open_ && fs::exists(control_path_)) return;
  fs::create_directories(control_dir_);
  std::error_code ec;
  fs::remove(control_path_, ec);
  std::vector<std::string> a = {
      "ssh", "-M", "-N", "-f",
      "-o", "ControlMaster=yes",
      "-o", "ControlPersist=" + std::to_string(options_.control_persist_s) + "s",
      "-o", "ServerAliveInterval=" + std::to_string(options_.server_alive_interval_s),
      "-o", "ServerAliveCountMax=" + std::to_string(options_.server_alive_count_max)};
  auto o = common_options();
  a.insert(a.end(), o.begin(), o.end());
  a.insert(a.end(), {"-p", std::to_string(address_.port), "--", ssh_destination(address_)});
  ProcResult r = run_process(a, options_.connect_timeout_s * 1000 + 5000);
  std::string where = to_string(address_);
  if (r.timed_out)
    throw InfraError(InfraKind::unreachable, where + ": no ssh connection within " +
                                                 std::to_string(options_.connect_timeout_s) + " s");
  if (r.exit_code != 0 && classify_ssh_failure(r.err) == InfraKind::host_key_changed)
    throw InfraError(InfraKind::host_key_changed,
                     where + ": the board's host key is not the one recorded in " + control_dir_ +
                         "/known_hosts (reflashed or replaced?). If the change is expected, accept the new key "
                         "with: ssh-keygen -R '" + (address_.port == 22 ? address_.host : "[" + address_.host + "]:" +
                         std::to_string(address_.port)) + "' -f '" + control_dir_ +
                         "/known_hosts' (the next contact records it), or run the worker with --board-host-keys "
                         "ignore");
  if (r.exit_code != 0)
    throw InfraError(classify_ssh_failure(r.err), where + ": " + diagnostic_line(r.err));
  for (int i = 0; i < 200 && !fs::exists(control_path_); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!fs::exists(control_path_))
    throw InfraError(InfraKind::ssh, where + ": the master connection made no control socket");
  open_ = true;
}

void SshBoard::ensure_open() {
  if (!open_) throw std::logic_error("SshBoard: open() first");
  if (fs::exists(control_path_)) return;
  note("master connection gone; reconnecting");
  open_ = false;
  open();
}

SshBoard::Remote SshBoard::remote(const std::string& command, int timeout_ms) {
  auto a = ssh_base();
  a.push_back(command);
  ProcResult r = run_process(a, timeout_ms);
  return {r.exit_code, r.timed_out, std::move(r.out), std::move(r.err), r.elapsed_ms};
}

// A short control command; the transport failing is an InfraError ssh.
SshBoard::Remote SshBoard::control(const std::string& command) {
  Remote r = remote(command, options_.command_timeout_ms);
  if (r.timed_out)
    throw InfraError(InfraKind::ssh, to_string(address_) + ": a control command took over " +
                                         std::to_string(options_.command_timeout_ms) + " ms");
  if (r.exit_code == 255 || r.exit_code < 0)
    throw InfraError(InfraKind::ssh, to_string(address_) + ": " + diagnostic_line(r.err));
  return r;
}

}  // namespace torq::board
