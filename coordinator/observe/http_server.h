// A small HTTP/1.x server for the coordinator's --http status (issue 60):
// one thread, one epoll loop, non-blocking sockets, and limits that no
// client can lift. It answers GETs whose head (request line and headers)
// fits in a few KiB, one request per connection (every reply says
// `Connection: close`), and is made to sit beside a run without ever
// costing it: a bounded number of descriptors, bounded memory, no thread
// that a client can hold, and a stop that waits on nobody.
//
// Why our own and not a library: cpp-httplib 0.11.4 (Debian 12's
// libcpp-httplib-dev, used before) caps each header line but neither the
// number of headers nor the head's size (a client sending `X-n: v` lines
// for ever grew the coordinator to 1.5 GB); it has a per-read timeout and
// no whole-request deadline, a thread per connection from a fixed pool
// (two clients trickling a line every 2 s held both threads), an unbounded
// accept queue (idle connections took all 1,024 descriptors), and a stop()
// that joins the threads still reading from clients (SIGTERM exit held for
// 32-85 s). Its limits are compiled into Debian's shared library, and none
// of these has a setting. libmicrohttpd (Debian's libmicrohttpd-dev) bounds
// the connections and a connection's memory, but its timeout is one of
// inactivity, restarted by every byte: a trickler is never cut. The status
// server needs a few hundred lines of HTTP, so it has them here.
//
// Contracts:
// - Every connection has a deadline from its accept (Limits::deadline):
//   a request not read by then gets 408 and is closed; a reply not sent by
//   then is cut. Reading and writing never block the loop.
// - A head past Limits::max_head_bytes, or with more than
//   Limits::max_headers header lines, gets 431 and is closed at once; a
//   malformed request line 400; a method other than GET or HEAD 405; a
//   request with a body (Content-Length > 0, Transfer-Encoding) 413.
// - At most Limits::max_connections connections are open; one accepted
//   beyond them gets 503 (best effort, never waited on) and is closed.
// - The handler runs on the server's thread, one request at a time: it
//   must be quick and must not throw (a throw is a 500).
// - The destructor wakes the loop (an eventfd), closes every connection
//   unanswered and joins the thread: it returns within milliseconds
//   whatever the clients do.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace torq::coordinator::observe {

struct HttpRequest {
  std::string method;  // "GET" or "HEAD"
  std::string path;    // the target without its query: "/metrics"
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent, values trimmed

  // The value of the header `name` (compared without case), or nullptr.
  const std::string* header(std::string_view name) const;
};

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones (WWW-Authenticate)
};

class HttpServer {
 public:
  struct Limits {
    size_t max_head_bytes = 8192;  // request line + headers + the blank line
    size_t max_headers = 64;
    std::chrono::milliseconds deadline{5000};  // from accept to the reply's last byte
    size_t max_connections = 32;
  };
  using Handler = std::function<HttpReply(const HttpRequest&)>;

  // Binds `host` (an address literal or a name; the first address it
  // resolves to) on `port` (0: one the OS picks) and starts serving.
  // Throws pipeline::PipelineError when it cannot listen there.
  HttpServer(const std::string& host, int port, Handler handler, Limits limits);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }

 private:
  struct Connection;
  void loop();

  const Handler handler_;
  const Limits limits_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: written by the destructor
  int epoll_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// The text of an HTTP status code ("Request Header Fields Too Large").
const char* http_reason(int status);

}  // namespace torq::coordinator::observe
