// Typed errors of the engine.
//
// Every failure that crosses the engine's API is an EngineError with a kind
// and a human message. Kernels throw Unsupported(...) or InvalidArgument(...)
// with a reason only; the session adds the node name and op type.
#pragma once

#include <stdexcept>
#include <string>

namespace torq::base {

enum class ErrorKind {
  kUnsupported,    // op, attribute value, dtype or shape the executor cannot run
  kInvalidModel,   // malformed or inconsistent ONNX
  kInvalidInput,   // bad input tensor or file
  kRuntime,        // anything else that went wrong while running
};

const char* error_kind_name(ErrorKind k);

class EngineError : public std::runtime_error {
 public:
  EngineError(ErrorKind kind, std::string message, std::string node = {},
              std::string op = {});
  ErrorKind kind() const { return kind_; }
  // The bare reason, without the node prefix.
  const std::string& reason() const { return reason_; }
  const std::string& node() const { return node_; }
  const std::string& op() const { return op_; }

 private:
  ErrorKind kind_;
  std::string reason_, node_, op_;
};

[[noreturn]] void throw_unsupported(const std::string& reason);
[[noreturn]] void throw_invalid(const std::string& reason);

// TORQ_CHECK(cond, msg): an invalid-model error when cond is false.
#define TORQ_CHECK(cond, msg)                          \
  do {                                                 \
    if (!(cond)) ::torq::engine::throw_invalid(msg);   \
  } while (0)
#define TORQ_SUPPORTED(cond, msg)                          \
  do {                                                     \
    if (!(cond)) ::torq::engine::throw_unsupported(msg);   \
  } while (0)

}  // namespace torq::base

// The engine and everything built on it name these torq::engine::...
namespace torq::engine {
using namespace ::torq::base;  // NOLINT(google-build-using-namespace)
}  // namespace torq::engine
