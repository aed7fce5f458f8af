// A bounded HTTP GET for `torq-coordinator status --http URL` (issue 60):
// the server at the other end may be anything, so the client trusts none
// of it. One HTTP/1.0 request (`Connection: close`), then the reply read
// into memory up to a cap, all within one overall deadline.
//
// Contracts:
// - The connect has its own timeout (Limits::connect_timeout, within the
//   deadline); the whole exchange (resolve aside, connect, send, read) ends
//   by Limits::deadline, whatever the server sends or withholds.
// - At most Limits::max_reply_bytes bytes of reply (head and body, chunked
//   or not) are ever held; a reply past it is an error, not a truncation.
// - Each failure throws HttpClientError with a sentence a person can act
//   on and the kind of failure: the URL, unreachable, too slow, too large,
//   a reply that is not HTTP.
#pragma once

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace torq::coordinator::observe {

class HttpClientError : public std::runtime_error {
 public:
  enum class Kind { kBadUrl, kUnreachable, kTimeout, kTooLarge, kMalformed };
  HttpClientError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

struct HttpGetLimits {
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds deadline{15000};
  size_t max_reply_bytes = size_t{8} << 20;
};

struct HttpResponse {
  int status = 0;
  std::string body;  // de-chunked
};

// "http://HOST[:PORT][/PREFIX]" split into host (without brackets), port
// (80 when not given) and the path prefix without its trailing '/'.
// Throws HttpClientError(kBadUrl).
struct HttpUrl {
  std::string host;
  int port = 80;
  std::string prefix;
};
HttpUrl parse_http_url(const std::string& url);

// GETs `path` (appended to the URL's prefix) with `headers`. Throws HttpClientError.
HttpResponse http_get(const std::string& url, const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& headers, const HttpGetLimits& limits);

}  // namespace torq::coordinator::observe
