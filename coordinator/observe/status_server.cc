#include "coordinator/observe/status_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>

#include <fstream>

#include "pipeline/base/error.h"
#include "pipeline/base/thread_name.h"

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
    : board_(board), token_(token), svr_(std::make_unique<httplib::Server>()) {
  const auto [host, port] = split_address(host_port);
  if (!is_loopback_host(host) && token_.empty())
    throw PipelineError("--http " + host_port + ": not a loopback address; give --http-token FILE to serve it");
  // Two threads: a person and a scraper at a time; the run's own threads stay free.
  svr_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  svr_->set_read_timeout(5, 0);
  svr_->set_write_timeout(5, 0);
  svr_->set_payload_max_length(4096);  // GETs only
  svr_->set_keep_alive_timeout(1);       // a reloading page's connection does not hold the exit up
  routes();
  int bound = port;
  if (port == 0) bound = svr_->bind_to_any_port(host);
  else if (!svr_->bind_to_port(host, port)) bound = -1;
  if (bound <= 0) throw PipelineError("--http " + host_port + ": cannot listen there (in use, or not this host's)");
  url_ = "http://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(bound);
  thread_ = std::thread([this] {
    base::name_this_thread("torq-http");
    svr_->listen_after_bind();
    listen_returned_ = true;
  });
  // stop() does nothing to a server not yet listening: a run that ends at
  // once (a bad spec) would leave the thread in accept() and the join hung.
  while (!svr_->is_running() && !listen_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

StatusServer::~StatusServer() {
  svr_->stop();
  if (thread_.joinable()) thread_.join();
}

void StatusServer::routes() {
  svr_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // Without a token only a loopback Host is served: a web page whose name
    // rebinds to 127.0.0.1 cannot read the status through the browser.
    if (token_.empty() && !is_loopback_host(split_host_header(req.get_header_value("Host")))) {
      res.status = 403;
      res.set_content("403: Host is not a loopback address (give the coordinator --http-token)\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (token_.empty() || same_secret(req.get_header_value("Authorization"), "Bearer " + token_))
      return httplib::Server::HandlerResponse::Unhandled;
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer realm=\"torq-coordinator\"");
    res.set_content("401: a bearer token is required (Authorization: Bearer <token>)\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  svr_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(board_.snapshot()), "text/plain; version=0.0.4; charset=utf-8");
  });
  svr_->Get("/api/status", [this](const httplib::Request&, httplib::Response& res) {
    // Error messages are a tool's bytes: invalid UTF-8 is replaced, not a 500.
    res.set_content(to_json(board_.snapshot()).dump(1, ' ', false, nlohmann::json::error_handler_t::replace),
                    "application/json");
  });
  svr_->Get("/", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(live_page(board_.snapshot(), 2), "text/html; charset=utf-8");
  });
}

int print_remote_status(const std::string& url, const std::string& token, bool json, std::ostream& out,
                        std::ostream& err) {
  httplib::Client cli(url);
  if (!cli.is_valid()) {
    err << "torq-coordinator: status: " << url << ": not an http://HOST:PORT URL\n";
    return 2;
  }
  cli.set_connection_timeout(5, 0);
  cli.set_read_timeout(10, 0);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  const auto res = cli.Get("/api/status", headers);
  if (!res) {
    err << "torq-coordinator: status: cannot reach " << url << " (" << httplib::to_string(res.error()) << ")\n";
    return 2;
  }
  if (res->status != 200) {
    err << "torq-coordinator: status: " << url << "/api/status answered " << res->status
        << (res->status == 401 ? " (give the coordinator's --http-token FILE)" : "") << "\n";
    return 2;
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(res->body);
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
