#include "pipeline/base/error.h"

namespace torq::base {

const char* error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kInvalidModel: return "invalid_model";
    case ErrorKind::kInvalidInput: return "invalid_input";
    case ErrorKind::kRuntime: return "runtime";
  }
  return "runtime";
}

static std::string compose(const std::string& msg, const std::string& node,
                           const std::string& op) {
  if (node.empty() && op.empty()) return msg;
  return "node '" + node + "' (" + op + "): " + msg;
}

EngineError::EngineError(ErrorKind kind, std::string message, std::string node,
                         std::string op)
    : std::runtime_error(compose(message, node, op)),
      kind_(kind),
      reason_(std::move(message)),
      node_(std::move(node)),
      op_(std::move(op)) {}

void throw_unsupported(const std::string& reason) {
  throw EngineError(ErrorKind::kUnsupported, reason);
}
void throw_invalid(const std::string& reason) {
  throw EngineError(ErrorKind::kInvalidModel, reason);
}

}  // namespace torq::base
