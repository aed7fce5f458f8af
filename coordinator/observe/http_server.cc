#include "coordinator/observe/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "pipeline/base/error.h"
#include "pipeline/base/thread_name.h"

namespace torq::coordinator::observe {

namespace {

using Clock = std::chrono::steady_clock;

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The serialized reply: status line, headers, `Connection: close`, the body (not for HEAD).
std::string serialize(const HttpReply& r, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + http_reason(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
  out += "Connection: close\r\n\r\n";
  if (!head_only) out += r.body;
  return out;
}

HttpReply error_reply(int status, const std::string& why) {
  HttpReply r;
  r.status = status;
  r.body = std::to_string(status) + ": " + why + "\n";
  return r;
}

// A whole head (up to and including its blank line) parsed into `req`; 0,
// or the status of the error to answer.
int parse_head(std::string_view head, size_t max_headers, HttpRequest* req) {
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < head.size();) {
    const size_t nl = head.find('\n', at);
    std::string_view line = head.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    at = nl + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) return 400;
  if (lines.size() - 1 > max_headers) return 431;
  const std::string_view rl = lines[0];
  const size_t sp1 = rl.find(' '), sp2 = rl.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return 400;
  const std::string_view method = rl.substr(0, sp1), target = rl.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = rl.substr(sp2 + 1);
  if (version.substr(0, 7) != "HTTP/1." || target.empty() || target.front() != '/' ||
      target.find(' ') != std::string_view::npos)
    return 400;
  req->method = std::string(method);
  req->path = std::string(target.substr(0, target.find_first_of("?#")));
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const size_t colon = line.find(':');
    // No folded lines (obs-fold), no name with blanks: request smuggling's tools.
    if (colon == 0 || colon == std::string_view::npos || line.front() == ' ' || line.front() == '\t' ||
        line.substr(0, colon).find_first_of(" \t") != std::string_view::npos)
      return 400;
    const std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
    // One Host and one Authorization: the checks read the one there is.
    if ((iequal(name, "Host") || iequal(name, "Authorization")) && req->header(name)) return 400;
    req->headers.emplace_back(std::string(name), std::string(value));
  }
  if (req->method != "GET" && req->method != "HEAD") return 405;
  const std::string* length = req->header("Content-Length");
  if ((length && *length != "0") || req->header("Transfer-Encoding")) return 413;
  return 0;
}

}  // namespace

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequal(k, name)) return &v;
  return nullptr;
}

const char* http_reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

struct HttpServer::Connection {
  int fd = -1;
  Clock::time_point deadline;
  std::string in;   // the head so far: at most max_head_bytes + 1 bytes
  std::string out;  // the reply, once the head is read
  size_t sent = 0;
};

HttpServer::HttpServer(const std::string& host, int port, Handler handler, Limits limits)
    : handler_(std::move(handler)), limits_(limits) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
    throw pipeline::PipelineError(std::string("cannot resolve the address: ") + gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> hold(res, freeaddrinfo);
  listen_fd_ = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (listen_fd_ < 0 || setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(listen_fd_, res->ai_addr, res->ai_addrlen) != 0 || listen(listen_fd_, 64) != 0) {
    const std::string why = std::strerror(errno);
    if (listen_fd_ >= 0) close(listen_fd_);
    throw pipeline::PipelineError(why);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (wake_fd_ < 0 || epoll_fd_ < 0) {
    const std::string why = std::strerror(errno);
    for (int fd : {listen_fd_, wake_fd_, epoll_fd_})
      if (fd >= 0) close(fd);
    throw pipeline::PipelineError(why);
  }
  for (int fd : {listen_fd_, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  thread_ = std::thread([this] {
    base::name_this_thread("torq-http");
    loop();
  });
}

HttpServer::~HttpServer() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof one);
  thread_.join();
  close(epoll_fd_);
  close(wake_fd_);
  close(listen_fd_);
}

void HttpServer::loop() {
  std::unordered_map<int, std::unique_ptr<Connection>> conns;
  bool accept_paused = false;  // out of descriptors: accept again in a while
  Clock::time_point resume_accept;

  const auto drop = [&](Connection* c) {
    // Read what the client sent past its head, so that closing does not
    // reset the connection under the reply still on its way.
    char sink[4096];
    for (int i = 0; i < 4 && recv(c->fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
    }
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
    close(c->fd);
    conns.erase(c->fd);
  };
  // Sends what it can without blocking; closes the connection once all is sent.
  const auto flush = [&](Connection* c) {
    while (c->sent < c->out.size()) {
      const ssize_t n = send(c->fd, c->out.data() + c->sent, c->out.size() - c->sent, MSG_NOSIGNAL);
      if (n > 0) {
        c->sent += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        epoll_event ev{};
        ev.events = EPOLLOUT;
        ev.data.fd = c->fd;
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
        return;
      } else {
        break;  // the client is gone
      }
    }
    shutdown(c->fd, SHUT_WR);
    drop(c);
  };
  const auto answer = [&](Connection* c, const HttpReply& r, bool head_only) {
    c->out = serialize(r, head_only);
    c->in.clear();
    c->in.shrink_to_fit();
    flush(c);
  };
  const auto on_head = [&](Connection* c, std::string_view head) {
    HttpRequest req;
    if (const int status = parse_head(head, limits_.max_headers, &req)) {
      HttpReply r = error_reply(status, status == 405   ? "only GET and HEAD are served"
                                        : status == 413 ? "a request to the status server has no body"
                                        : status == 431 ? "more than " + std::to_string(limits_.max_headers) +
                                                              " header lines"
                                                        : "malformed request");
      if (status == 405) r.headers.emplace_back("Allow", "GET, HEAD");
      return answer(c, r, false);
    }
    HttpReply r;
    try {
      r = handler_(req);
    } catch (const std::exception& e) {
      r = error_reply(500, e.what());
    }
    answer(c, r, req.method == "HEAD");
  };
  const auto on_readable = [&](Connection* c) {
    char buf[4096];
    for (;;) {
      const size_t room = limits_.max_head_bytes + 1 - c->in.size();
      const ssize_t n = recv(c->fd, buf, std::min(sizeof buf, room), 0);
      if (n == 0) return drop(c);  // closed before its head was whole
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) drop(c);
        return;
      }
      const size_t from = c->in.size() < 3 ? 0 : c->in.size() - 3;
      c->in.append(buf, static_cast<size_t>(n));
      size_t end = c->in.find("\r\n\r\n", from);
      if (end != std::string::npos) end += 4;
      else if ((end = c->in.find("\n\n", from)) != std::string::npos) end += 2;
      if (end != std::string::npos && end <= limits_.max_head_bytes)
        return on_head(c, std::string_view(c->in).substr(0, end));
      // Header lines: the newlines but the request line's.
      const size_t lines = static_cast<size_t>(std::count(c->in.begin(), c->in.end(), '\n'));
      if (c->in.size() > limits_.max_head_bytes || lines > limits_.max_headers + 1) {
        return answer(c,
                      error_reply(431, "the request's headers pass " + std::to_string(limits_.max_headers) +
                                           " lines or " + std::to_string(limits_.max_head_bytes) + " bytes"),
                      false);
      }
    }
  };
  const auto accept_all = [&] {
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // The process is out of descriptors: stop listening for 100 ms
          // rather than spin on a socket that stays readable.
          epoll_event ev{};
          ev.data.fd = listen_fd_;
          epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
          accept_paused = true;
          resume_accept = Clock::now() + std::chrono::milliseconds(100);
        }
        return;
      }
      if (conns.size() >= limits_.max_connections) {
        const std::string busy = serialize(error_reply(503, "too many connections to the status server"), false);
        [[maybe_unused]] const ssize_t n = send(fd, busy.data(), busy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        shutdown(fd, SHUT_WR);
        close(fd);
        continue;
      }
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      c->deadline = Clock::now() + limits_.deadline;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
      conns.emplace(fd, std::move(c));
    }
  };

  epoll_event events[64];
  for (;;) {
    const Clock::time_point now = Clock::now();
    Clock::time_point next = now + std::chrono::seconds(60);
    for (const auto& [fd, c] : conns) next = std::min(next, c->deadline);
    if (accept_paused) next = std::min(next, resume_accept);
    const auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(std::max(next - now, Clock::duration::zero()));
    const int n = epoll_wait(epoll_fd_, events, 64, static_cast<int>(wait_ms.count()));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        for (const auto& [cfd, c] : conns) close(cfd);
        return;
      }
      if (fd == listen_fd_) {
        accept_all();
        continue;
      }
      const auto it = conns.find(fd);
      if (it == conns.end()) continue;  // dropped earlier in this round
      Connection* c = it->second.get();
      if (!c->out.empty()) flush(c);
      else on_readable(c);
    }
    // Past its deadline: a 408 if nothing was answered yet (never waited on), then closed.
    const Clock::time_point after = Clock::now();
    std::vector<Connection*> late;
    for (const auto& [fd, c] : conns)
      if (c->deadline <= after) late.push_back(c.get());
    for (Connection* c : late) {
      if (c->out.empty()) {
        const std::string timeout = serialize(
            error_reply(408, "the request was not complete within " + std::to_string(limits_.deadline.count()) +
                                 " ms of its connection"),
            false);
        [[maybe_unused]] const ssize_t sent = send(c->fd, timeout.data(), timeout.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        shutdown(c->fd, SHUT_WR);
      }
      drop(c);
    }
    if (accept_paused && after >= resume_accept) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = listen_fd_;
      epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
      accept_paused = false;
    }
  }
  for (const auto& [cfd, c] : conns) close(cfd);
}

}  // namespace torq::coordinator::observe
