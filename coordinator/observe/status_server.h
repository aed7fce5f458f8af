// `torq-coordinator --http HOST:PORT` (issue 33): serves a StatusBoard over
// HTTP with cpp-httplib (Debian's libcpp-httplib-dev) on a thread pool of
// its own, never on the serving thread:
//   GET /metrics     the Prometheus text exposition format
//   GET /api/status  the status as JSON
//   GET /            the live page
// Loopback addresses only, unless a bearer token is given: then every
// request must carry "Authorization: Bearer <token>" or gets 401 (on any
// address). And `status --http URL`, the client that prints the status.
#pragma once

#include <atomic>
#include <memory>
#include <ostream>
#include <string>
#include <thread>

#include "coordinator/observe/status_board.h"

namespace httplib {
class Server;
}

namespace torq::coordinator::observe {

// The token in `path`: its first line, trimmed; throws PipelineError when
// the file cannot be read or holds fewer than 16 characters.
std::string read_token(const std::string& path);

class StatusServer {
 public:
  // Binds `host_port` ("127.0.0.1:8080", "[::1]:0", "0.0.0.0:9100"; port 0:
  // one the OS picks) and starts serving. Throws PipelineError on a
  // malformed address, a non-loopback one without a token, or a failed bind.
  StatusServer(const StatusBoard& board, const std::string& host_port, const std::string& token);
  ~StatusServer();
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  // "http://HOST:PORT" with the port bound.
  const std::string& url() const { return url_; }

 private:
  void routes();

  const StatusBoard& board_;
  const std::string token_;
  std::unique_ptr<httplib::Server> svr_;
  std::string url_;
  std::atomic<bool> listen_returned_{false};
  std::thread thread_;
};

// True for an address literal in 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104,
// and "localhost"; false for any other name (it may resolve anywhere).
bool is_loopback_host(const std::string& host);

// `torq-coordinator status --http URL`: GETs URL/api/status (with the bearer
// token when not empty) and prints it on `out` (as text, or the JSON as
// received with `json`). Returns 0, or 2 with the reason on `err` (the
// coordinator unreachable, 401, a document that is not a status).
int print_remote_status(const std::string& url, const std::string& token, bool json, std::ostream& out,
                        std::ostream& err);

}  // namespace torq::coordinator::observe
