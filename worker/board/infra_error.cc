#include "worker/board/infra_error.h"

namespace torq::board {

const char* to_string(InfraKind kind) {
  switch (kind) {
    case InfraKind::unreachable: return "unreachable";
    case InfraKind::auth: return "auth";
    case InfraKind::ssh: return "ssh";
    case InfraKind::runner_missing: return "runner_missing";
    case InfraKind::lock_timeout: return "lock_timeout";
    case InfraKind::staging: return "staging";
    case InfraKind::host_key_changed: return "host_key_changed";
  }
  return "unknown";
}

InfraError::InfraError(InfraKind kind, const std::string& message)
    : std::runtime_error(std::string(to_string(kind)) + ": " + message), kind_(kind) {}

}  // namespace torq::board
