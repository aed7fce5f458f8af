// InfraError: a failure of the infrastructure between the worker and a board
// (network, ssh, the board's runner, its lock, file staging). It is never an
// op's error: a job that meets one is requeued and the board's health is
// checked (DESIGN §7, issue 10); only what the runner itself reports about
// the op becomes the op's result.
#pragma once

#include <stdexcept>
#include <string>

namespace torq::board {

enum class InfraKind {
  unreachable,     // no TCP connection (refused, timed out, no route, DNS)
  auth,            // connected, but the key or the host key was refused
  ssh,             // the ssh transport failed (master lost, session cut)
  runner_missing,  // the command to run does not exist on the board (127)
  lock_timeout,    // the board lock stayed held by someone else
  staging,         // copying files to or from the board failed
  host_key_changed,  // the board's host key differs from the one recorded (reflashed?)
};

// "unreachable", "auth", "ssh", "runner_missing", "lock_timeout", "staging",
// "host_key_changed".
const char* to_string(InfraKind kind);

class InfraError : public std::runtime_error {
 public:
  // what() is "<kind>: <message>".
  InfraError(InfraKind kind, const std::string& message);
  InfraKind kind() const noexcept { return kind_; }

 private:
  InfraKind kind_;
};

}  // namespace torq::board
