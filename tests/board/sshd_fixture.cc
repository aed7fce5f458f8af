#include "tests/board/sshd_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "worker/board/process.h"

namespace fs = std::filesystem;

namespace torq::board::testing {

std::string make_temp_dir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl);
  return tmpl;
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("free_port: bind failed");
  ::close(fd);
  return ntohs(a.sin_port);
}

void make_key(const std::string& path) {
  ProcResult r = run_process({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path}, 20000);
  if (r.exit_code != 0) throw std::runtime_error("ssh-keygen " + path + ": " + r.err);
}

namespace {

bool accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// Every process whose ancestry includes root (from /proc), root excluded.
std::vector<pid_t> descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> links;  // pid, ppid
  std::error_code ec;  // processes come and go while /proc is read
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(it->path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 > stat.size()) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    pid_t ppid;
    if (rest >> state >> ppid) links.emplace_back(std::stoi(name), ppid);
  }
  std::vector<pid_t> out = {root};
  for (size_t i = 0; i < out.size(); ++i)
    for (auto [p, pp] : links)
      if (pp == out[i]) out.push_back(p);
  out.erase(out.begin());
  return out;
}

}  // namespace

TestSshd::TestSshd(const std::string& dir) : dir_(dir) {
  fs::create_directories(dir_);
  make_key(dir_ + "/host_ed25519");
  client_key_ = dir_ + "/client_ed25519";
  make_key(client_key_);
  fs::copy_file(client_key_ + ".pub", dir_ + "/authorized_keys", fs::copy_options::overwrite_existing);
  port_ = free_port();
  // This sshd's host key is new: a key recorded for its address by an
  // earlier sshd on the same port (another test, or another test run) is
  // stale. Where the worker's cache path is too long for ssh's control
  // socket, its known_hosts lives in a per-user directory that outlives the
  // test (toolchain::board_control_dir), and ssh would refuse the changed key.
  std::error_code ec;
  fs::remove(std::string("/tmp/torq-ssh-") + std::to_string(geteuid()) + "/127.0.0.1-" + std::to_string(port_) +
                 "/known_hosts",
             ec);
  config_ = dir_ + "/sshd_config";
  log_path_ = dir_ + "/sshd.log";
  std::ofstream cfg(config_);
  cfg << "Port " << port_ << "\n"
      << "ListenAddress 127.0.0.1\n"
      << "HostKey " << dir_ << "/host_ed25519\n"
      << "AuthorizedKeysFile " << dir_ << "/authorized_keys\n"
      << "PidFile " << dir_ << "/sshd.pid\n"
      << "StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
      << "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nPrintMotd no\n"
      << "MaxSessions 32\nMaxStartups 64\nLogLevel ERROR\n"
      << "Subsystem sftp internal-sftp\n"
      // The board's shell is a nested one (SHLVL 1 -> 2), so bash does not
      // read this machine's ~/.bashrc for ssh sessions: root's here runs
      // `pyenv init` (~95 ms per session, every ssh and scp), which no board
      // does; the board's shell startup stays bash itself.
      << "SetEnv SHLVL=1\n";
}

TestSshd::~TestSshd() {
  try { kill_all(); } catch (...) {}
}

void TestSshd::start() {
  if (geteuid() == 0) mkdir("/run/sshd", 0755);  // privilege separation dir
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test that dies leaves no sshd behind
    int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(log, STDERR_FILENO);
    dup2(log, STDOUT_FILENO);
    execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", "-f", config_.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("sshd exited at start (is openssh-server installed?): " + log());
    }
    if (accepts(port_)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill_all();
  throw std::runtime_error("sshd did not listen on port " + std::to_string(port_) + ": " + log());
}

void TestSshd::replace_host_key() {
  kill_all();
  std::error_code ec;
  fs::remove(dir_ + "/host_ed25519", ec);
  fs::remove(dir_ + "/host_ed25519.pub", ec);
  make_key(dir_ + "/host_ed25519");
  start();
}

void TestSshd::kill_all() {
  if (pid_ <= 0) return;
  for (pid_t p : descendants(pid_)) kill(p, SIGKILL);
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

BoardAddress TestSshd::address() const {
  const passwd* pw = getpwuid(geteuid());
  BoardAddress a;
  a.user = pw ? pw->pw_name : "root";
  a.host = "127.0.0.1";
  a.port = port_;
  a.key_file = client_key_;
  return a;
}

std::string TestSshd::log() const {
  std::ifstream in(log_path_);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace torq::board::testing
