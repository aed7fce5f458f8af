#include "coordinator/observe/http_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

namespace torq::coordinator::observe {

namespace {

using Clock = std::chrono::steady_clock;
using Kind = HttpClientError::Kind;
constexpr size_t kMaxHead = 64 * 1024;

std::string mib(size_t bytes) {
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

std::string seconds(std::chrono::milliseconds ms) {
  return ms.count() % 1000 == 0 ? std::to_string(ms.count() / 1000) + " s" : std::to_string(ms.count()) + " ms";
}

bool name_is(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// A socket closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Milliseconds left before `end`, at least 0.
int left_ms(Clock::time_point end) {
  return static_cast<int>(
      std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(end - Clock::now()).count()));
}

// A reply's head: status and the two headers that say where the body ends.
struct Head {
  size_t size = 0;  // bytes, with the blank line
  int status = 0;
  std::optional<size_t> content_length;
  bool chunked = false;
};

// The head at the start of `raw` when it is whole; throws a malformed one.
std::optional<Head> parse_reply_head(const std::string& raw, const std::string& where) {
  size_t end = raw.find("\r\n\r\n");
  size_t blank = 4;
  if (const size_t lf = raw.find("\n\n"); lf != std::string::npos && (end == std::string::npos || lf < end)) {
    end = lf;
    blank = 2;
  }
  if (end == std::string::npos) {
    if (raw.size() > kMaxHead) throw HttpClientError(Kind::kMalformed, where + ": the reply's head passes 64 KiB");
    return std::nullopt;
  }
  Head h;
  h.size = end + blank;
  const std::string head = raw.substr(0, end);
  if (head.compare(0, 7, "HTTP/1.") != 0 || head.size() < 12 || head[8] != ' ' ||
      !std::isdigit(static_cast<unsigned char>(head[9])) || !std::isdigit(static_cast<unsigned char>(head[10])) ||
      !std::isdigit(static_cast<unsigned char>(head[11])))
    throw HttpClientError(Kind::kMalformed, where + ": the reply is not HTTP (" + head.substr(0, 40) + ")");
  h.status = std::stoi(head.substr(9, 3));
  for (size_t at = head.find('\n'); at != std::string::npos && at < head.size();) {
    const size_t nl = head.find('\n', at + 1);
    std::string line = head.substr(at + 1, nl == std::string::npos ? std::string::npos : nl - at - 1);
    at = nl;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t") + 1);
    const std::string name = line.substr(0, colon);
    if (name_is(name, "Transfer-Encoding") && value.find("chunked") != std::string::npos) h.chunked = true;
    if (name_is(name, "Content-Length")) {
      if (value.empty() || value.size() > 15 || value.find_first_not_of("0123456789") != std::string::npos)
        throw HttpClientError(Kind::kMalformed, where + ": the reply's Content-Length '" + value + "' is not a size");
      h.content_length = std::stoull(value);
    }
  }
  return h;
}

// Decodes a chunked body as it arrives: `feed` consumes the whole lines
// and chunks of raw[pos...] into `body`; `done` once the last chunk and
// its trailer were seen. Linear in the bytes received, whatever their cut.
struct Dechunker {
  size_t pos = 0;
  bool in_trailer = false;
  bool done = false;
  void feed(const std::string& raw, std::string* body, size_t cap, const std::string& where) {
    while (!done) {
      const size_t nl = raw.find('\n', pos);
      if (nl == std::string::npos) {
        if (raw.size() - pos > 1024) throw HttpClientError(Kind::kMalformed, where + ": a chunked reply's line passes 1 KiB");
        return;
      }
      if (in_trailer) {  // header lines, then a blank one
        done = nl == pos || (nl == pos + 1 && raw[pos] == '\r');
        pos = nl + 1;
        continue;
      }
      size_t size = 0, digits = 0;
      for (size_t i = pos; i < nl && std::isxdigit(static_cast<unsigned char>(raw[i])); ++i) {
        const char ch = static_cast<char>(std::tolower(static_cast<unsigned char>(raw[i])));
        if (++digits > 15) throw HttpClientError(Kind::kTooLarge, where + ": a chunk larger than " + mib(cap));
        size = size * 16 + static_cast<size_t>(std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0' : ch - 'a' + 10);
      }
      if (digits == 0) throw HttpClientError(Kind::kMalformed, where + ": a chunk without its size");
      if (size > cap || body->size() + size > cap)
        throw HttpClientError(Kind::kTooLarge, where + ": the reply passed " + mib(cap) + " (not a coordinator's status)");
      if (size == 0) {
        in_trailer = true;
        pos = nl + 1;
        continue;
      }
      const size_t data = nl + 1;
      if (raw.size() < data + size + 2) return;
      body->append(raw, data, size);
      pos = data + size + (raw[data + size] == '\r' ? 2 : 1);
    }
  }
};

// A connected socket to one of the addresses `host` resolves to, within `connect_end`.
int connect_to(const HttpUrl& u, Clock::time_point connect_end, const std::string& where) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(u.host.c_str(), std::to_string(u.port).c_str(), &hints, &res); rc != 0)
    throw HttpClientError(Kind::kUnreachable, "cannot reach " + where + " (" + gai_strerror(rc) + ")");
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> hold(res, freeaddrinfo);
  std::string why = "no address";
  for (const addrinfo* a = res; a; a = a->ai_next) {
    Fd s{socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
    if (s.fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (connect(s.fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = std::strerror(errno);
      continue;
    }
    pollfd p{s.fd, POLLOUT, 0};
    const int n = poll(&p, 1, left_ms(connect_end));
    if (n == 0) throw HttpClientError(Kind::kTimeout, "cannot reach " + where + " (no connection within the timeout)");
    int err = 0;
    socklen_t len = sizeof err;
    if (n < 0 || getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      why = std::strerror(n < 0 ? errno : err);
      continue;
    }
    const int fd = s.fd;
    s.fd = -1;
    return fd;
  }
  throw HttpClientError(Kind::kUnreachable, "cannot reach " + where + " (" + why + ")");
}

}  // namespace

HttpUrl parse_http_url(const std::string& url) {
  const auto bad = [&url](const std::string& why) {
    return HttpClientError(Kind::kBadUrl, url + ": not an http://HOST:PORT URL (" + why + ")");
  };
  if (url.size() < 7 || !name_is(std::string_view(url).substr(0, 7), "http://"))
    throw bad(url.rfind("https://", 0) == 0 ? "https is not served: --http is plain HTTP" : "no http://");
  const std::string rest = url.substr(7);
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  HttpUrl u;
  if (slash != std::string::npos) u.prefix = rest.substr(slash);
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  std::string port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) throw bad("an IPv6 address without its ']'");
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') throw bad("junk after ']'");
      port = authority.substr(close + 2);
    }
  } else {
    const size_t colon = authority.find(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) throw bad("no host");
  if (!port.empty()) {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) == 0 ||
        std::stoi(port) > 65535)
      throw bad("port '" + port + "' is not a number from 1 to 65535");
    u.port = std::stoi(port);
  }
  return u;
}

HttpResponse http_get(const std::string& url, const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& headers, const HttpGetLimits& limits) {
  const HttpUrl u = parse_http_url(url);
  const std::string where = url;
  const std::string what = url + path;  // for messages: URL/api/status
  const Clock::time_point start = Clock::now(), end = start + limits.deadline;
  Fd s{connect_to(u, std::min(end, start + limits.connect_timeout), where)};

  const std::string authority = u.host.find(':') != std::string::npos
                                    ? "[" + u.host + "]:" + std::to_string(u.port)
                                    : u.host + ":" + std::to_string(u.port);
  std::string request = "GET " + u.prefix + path + " HTTP/1.0\r\nHost: " + authority +
                        "\r\nUser-Agent: torq-coordinator\r\nAccept: */*\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) request += k + ": " + v + "\r\n";
  request += "\r\n";
  const auto timeout = [&](size_t got) {
    return HttpClientError(Kind::kTimeout, what + ": no whole reply within " + seconds(limits.deadline) + " (" +
                                               std::to_string(got) +
                                               " bytes so far): the server is too slow or not a coordinator");
  };
  for (size_t sent = 0; sent < request.size();) {
    pollfd p{s.fd, POLLOUT, 0};
    if (poll(&p, 1, left_ms(end)) == 0) throw timeout(0);
    const ssize_t n = send(s.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      throw HttpClientError(Kind::kUnreachable, "cannot reach " + where + " (" + std::strerror(errno) + ")");
    if (n > 0) sent += static_cast<size_t>(n);
  }

  std::string raw;  // the head, then (chunked) the bytes not yet decoded
  size_t received = 0;
  std::optional<Head> head;
  Dechunker chunks;
  HttpResponse r;
  char buf[65536];
  for (;;) {
    if (head) {
      const size_t body_bytes = raw.size() - head->size;
      if (head->chunked ? chunks.done : head->content_length && body_bytes >= *head->content_length) break;
    }
    pollfd p{s.fd, POLLIN, 0};
    if (poll(&p, 1, left_ms(end)) == 0) throw timeout(received);
    const ssize_t n = recv(s.fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      throw HttpClientError(Kind::kUnreachable, what + ": the connection broke (" + std::strerror(errno) + ")");
    }
    if (n == 0) break;  // the server closed
    received += static_cast<size_t>(n);
    if (received > limits.max_reply_bytes)
      throw HttpClientError(Kind::kTooLarge, what + ": the reply passed " + mib(limits.max_reply_bytes) +
                                                 " (not a coordinator's status)");
    raw.append(buf, static_cast<size_t>(n));
    if (!head) {
      head = parse_reply_head(raw, what);
      if (head && head->content_length && *head->content_length > limits.max_reply_bytes)
        throw HttpClientError(Kind::kTooLarge, what + ": the reply announces " + std::to_string(*head->content_length) +
                                                   " bytes, past " + mib(limits.max_reply_bytes) +
                                                   " (not a coordinator's status)");
    }
    if (head && head->chunked) {
      if (chunks.pos == 0) chunks.pos = head->size;
      chunks.feed(raw, &r.body, limits.max_reply_bytes, what);
      raw.erase(head->size, chunks.pos - head->size);  // decoded: held once, in the body
      chunks.pos = head->size;
    }
  }
  if (!head) {
    if (raw.empty()) throw HttpClientError(Kind::kMalformed, what + ": the server closed the connection without a reply");
    head = parse_reply_head(raw + "\r\n\r\n", what);
  }
  r.status = head->status;
  if (head->chunked) {
    if (!chunks.done) throw HttpClientError(Kind::kMalformed, what + ": the chunked reply ended before its last chunk");
    return r;
  }
  r.body = raw.substr(std::min(raw.size(), head->size));
  if (head->content_length) {
    if (r.body.size() < *head->content_length)
      throw HttpClientError(Kind::kMalformed, what + ": the reply ended after " + std::to_string(r.body.size()) +
                                                  " of its " + std::to_string(*head->content_length) + " bytes");
    r.body.resize(*head->content_length);
  }
  return r;
}

}  // namespace torq::coordinator::observe
