// TestSshd: a real OpenSSH server (Debian openssh-server) playing a board in
// tests: its own host key, client key, authorized_keys and sshd_config in a
// fresh directory, on a free 127.0.0.1 port, started as
// `/usr/sbin/sshd -D -e -f CFG` and killed (with its sessions) on teardown.
#pragma once

#include <sys/types.h>

#include <string>

#include "worker/board/address.h"

namespace torq::board::testing {

// A fresh directory under /tmp (short: control sockets live below it).
std::string make_temp_dir(const std::string& prefix);

// A TCP port on 127.0.0.1 that nothing listens on right now.
int free_port();

// ssh-keygen -t ed25519 without passphrase; throws on failure.
void make_key(const std::string& path);

class TestSshd {
 public:
  // Writes keys and config into dir; does not start.
  explicit TestSshd(const std::string& dir);
  ~TestSshd();  // kill_all()
  TestSshd(const TestSshd&) = delete;
  TestSshd& operator=(const TestSshd&) = delete;

  // Starts sshd and waits until it accepts connections; throws
  // std::runtime_error with sshd's log when it does not come up.
  void start();
  // SIGKILLs the listening sshd and every process below it (the sessions:
  // sshd -D children setsid, so killing the listener alone leaves them).
  void kill_all();
  // A reflashed board: kill_all(), a new host key, start() on the same port.
  void replace_host_key();

  int port() const { return port_; }
  const std::string& client_key() const { return client_key_; }
  BoardAddress address() const;  // current user @ 127.0.0.1 : port, key
  std::string log() const;       // sshd's stderr so far

 private:
  std::string dir_, config_, client_key_, log_path_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace torq::board::testing
