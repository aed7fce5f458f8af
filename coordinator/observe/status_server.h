// `torq-coordinator --http HOST:PORT` (issue 33): serves a StatusBoard over
// HTTP on a thread of its own, never on the serving thread, with the
// bounded server of http_server.h (issue 60: why not cpp-httplib; a head
// of 8 KiB and 64 headers at most, 5 s from accept to reply, 32
// connections, a stop that waits on no client):
//   GET /metrics     the Prometheus text exposition format
//   GET /api/status  the status as JSON
//   GET /            the live page
// Loopback addresses only, unless a bearer token is given: then every
// request must carry "Authorization: Bearer <token>" or gets 401 (on any
// address). And `status --http URL`, the client that prints the status
// (http_client.h: a reply of 8 MiB at most, within 15 s).
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "coordinator/observe/http_client.h"
#include "coordinator/observe/http_server.h"
#include "coordinator/observe/status_board.h"

namespace torq::coordinator::observe {

// The token in `path`: its first line, trimmed; throws PipelineError when
// the file cannot be read or holds fewer than 16 characters.
std::string read_token(const std::string& path);

class StatusServer {
 public:
  // Binds `host_port` ("127.0.0.1:8080", "[::1]:0", "0.0.0.0:9100"; port 0:
  // one the OS picks) and starts serving. Throws PipelineError on a
  // malformed address, a non-loopback one without a token, or a failed bind.
  // The destructor returns at once, whatever the clients do.
  StatusServer(const StatusBoard& board, const std::string& host_port, const std::string& token);
  ~StatusServer();
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  // "http://HOST:PORT" with the port bound.
  const std::string& url() const { return url_; }

 private:
  // The reply to one request: 403 for a foreign Host without a token, 401
  // without the token, then the routes (404 for any other path).
  HttpReply handle(const HttpRequest& req) const;

  const StatusBoard& board_;
  const std::string token_;
  std::string url_;
  std::unique_ptr<HttpServer> server_;  // last: stopped first
};

// True for an address literal in 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104,
// and "localhost"; false for any other name (it may resolve anywhere).
bool is_loopback_host(const std::string& host);

// `torq-coordinator status --http URL`: GETs URL/api/status (with the bearer
// token when not empty) and prints it on `out` (as text, or the JSON as
// received with `json`). Returns 0, or 2 with the reason on `err` (the
// coordinator unreachable, 401, a reply too slow or too large, a document
// that is not a status).
int print_remote_status(const std::string& url, const std::string& token, bool json, std::ostream& out,
                        std::ostream& err, const HttpGetLimits& limits = {});

}  // namespace torq::coordinator::observe
