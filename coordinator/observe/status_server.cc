#include "coordinator/observe/status_server.h"

#include "coordinator/observe/http_client.h"
#include "coordinator/observe/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <fstream>

#include "pipeline/base/error.h"

namespace torq::coordinator::observe {

namespace {

using pipeline::PipelineError;

// HOST:PORT, HOST possibly [v6]; throws.
std::pair<std::string, int> split_address(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == host_port.size())
    throw PipelineError("--http " + host_port + ": want HOST:PORT (e.g. 127.0.0.1:8080)");
  std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoi(port) > 65535)
    throw PipelineError("--http " + host_port + ": port '" + port + "' is not a number from 0 to 65535");
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, std::stoi(port)};
}

// Equal strings, in a time that does not depend on where they differ.
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// The host part of a Host header: "127.0.0.1:8080" -> 127.0.0.1, "[::1]:80" -> ::1.
std::string split_host_header(const std::string& host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    return close == std::string::npos ? host : host.substr(1, close - 1);
  }
  return host.substr(0, host.find(':'));
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  // Address literals only (and "localhost"): a name such as 127.0.0.1.example.net
  // may resolve anywhere.
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;  // ::ffff:127.x.y.z
  }
  return host == "localhost";
}

std::string read_token(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) throw PipelineError(path + ": cannot read the --http-token file");
  const size_t a = line.find_first_not_of(" \t\r"), b = line.find_last_not_of(" \t\r");
  const std::string token = a == std::string::npos ? "" : line.substr(a, b - a + 1);
  if (token.size() < 16) throw PipelineError(path + ":1: the token is shorter than 16 characters");
  return token;
}

StatusServer::StatusServer(const StatusBoard& board, const std::string& host_port, const std::string& token)
    : board_(board), token_(token) {
  const auto [host, port] = split_address(host_port);
  if (!is_loopback_host(host) && token_.empty())
    throw PipelineError("--http " + host_port + ": not a loopback address; give --http-token FILE to serve it");
  try {
    server_ = std::make_unique<HttpServer>(host, port, [this](const HttpRequest& req) { return handle(req); },
                                           HttpServer::Limits{});
  } catch (const PipelineError& e) {
    throw PipelineError("--http " + host_port + ": cannot listen there (" + e.what() + ")");
  }
  url_ = "http://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(server_->port());
}

StatusServer::~StatusServer() = default;

HttpReply StatusServer::handle(const HttpRequest& req) const {
  HttpReply res;
  const auto header = [&req](const char* name) {
    const std::string* v = req.header(name);
    return v ? *v : std::string();
  };
  // Without a token only a loopback Host is served: a web page whose name
  // rebinds to 127.0.0.1 cannot read the status through the browser.
  if (token_.empty() && !is_loopback_host(split_host_header(header("Host")))) {
    res.status = 403;
    res.body = "403: Host is not a loopback address (give the coordinator --http-token)\n";
    return res;
  }
  if (!token_.empty() && !same_secret(header("Authorization"), "Bearer " + token_)) {
    res.status = 401;
    res.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"torq-coordinator\"");
    res.body = "401: a bearer token is required (Authorization: Bearer <token>)\n";
    return res;
  }
  if (req.path == "/metrics") {
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = metrics_text(board_.snapshot());
  } else if (req.path == "/api/status") {
    // Error messages are a tool's bytes: invalid UTF-8 is replaced, not a 500.
    res.content_type = "application/json";
    res.body = to_json(board_.snapshot()).dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else if (req.path == "/") {
    res.content_type = "text/html; charset=utf-8";
    res.body = live_page(board_.snapshot(), 2);
  } else {
    res.status = 404;
    res.body = "404: " + req.path + " is not served (/metrics, /api/status, /)\n";
  }
  return res;
}

int print_remote_status(const std::string& url, const std::string& token, bool json, std::ostream& out,
                        std::ostream& err, const HttpGetLimits& limits) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
  HttpResponse res;
  try {
    res = http_get(url, "/api/status", headers, limits);
  } catch (const HttpClientError& e) {
    err << "torq-coordinator: status: " << e.what() << "\n";
    return 2;
  }
  if (res.status != 200) {
    err << "torq-coordinator: status: " << url << "/api/status answered " << res.status
        << (res.status == 401 ? " (give the coordinator's --http-token FILE)" : "") << "\n";
    return 2;
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(res.body);
    const RunStatus s = status_from_json(j);
    if (json) out << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else out << status_text(s);
  } catch (const nlohmann::json::exception& e) {
    err << "torq-coordinator: status: " << url << "/api/status is not a coordinator's status: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace torq::coordinator::observe
