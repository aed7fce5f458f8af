#include "worker/board/address.h"

#include <stdexcept>

namespace torq::board {
namespace {

[[noreturn]] void bad(const std::string& spec, const std::string& why) {
  throw std::invalid_argument("board address '" + spec + "': " + why +
                              " (expected [USER@]HOST[:PORT])");
}

bool all_of_chars(const std::string& s, const char* extra) {
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    for (const char* e = extra; !ok && *e; ++e) ok = (c == *e);
    if (!ok) return false;
  }
  return true;
}

int parse_port(const std::string& spec, const std::string& p) {
  if (p.empty()) bad(spec, "empty port after ':'");
  if (p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos)
    bad(spec, "port '" + p + "' is not a number");
  int port = std::stoi(p);
  if (port < 1 || port > 65535) bad(spec, "port " + p + " is outside 1..65535");
  return port;
}

// Splits "host", "host:port", "[v6]" or "[v6]:port" into host and port.
void split_host_port(const std::string& spec, const std::string& hp, BoardAddress& a) {
  std::string port;
  if (!hp.empty() && hp[0] == '[') {
    auto close = hp.find(']');
    if (close == std::string::npos) bad(spec, "missing ']' after an IPv6 address");
    a.host = hp.substr(1, close - 1);
    std::string rest = hp.substr(close + 1);
    if (!rest.empty() && rest[0] != ':') bad(spec, "unexpected '" + rest + "' after ']'");
    if (!rest.empty()) port = rest.substr(1), a.port = parse_port(spec, port);
    if (a.host.empty() || !all_of_chars(a.host, ":.%")) bad(spec, "bad IPv6 address '" + a.host + "'");
    return;
  }
  auto colon = hp.find(':');
  if (colon != std::string::npos && hp.find(':', colon + 1) != std::string::npos)
    bad(spec, "an IPv6 address needs brackets, e.g. [::1]:22");
  a.host = hp.substr(0, colon);
  if (colon != std::string::npos) a.port = parse_port(spec, hp.substr(colon + 1));
  if (a.host.empty()) bad(spec, "empty host");
  if (a.host[0] == '-' || a.host[0] == '.' || !all_of_chars(a.host, ".-_"))
    bad(spec, "host '" + a.host + "' may hold only letters, digits, '.', '-' and '_'");
}

}  // namespace

BoardAddress parse_board(const std::string& spec) {
  if (spec.empty()) bad(spec, "empty");
  BoardAddress a;
  std::string hp = spec;
  auto at = spec.find('@');
  if (at != std::string::npos) {
    a.user = spec.substr(0, at);
    hp = spec.substr(at + 1);
    if (a.user.empty()) bad(spec, "empty user before '@'");
    if (a.user[0] == '-' || !all_of_chars(a.user, "._-"))
      bad(spec, "user '" + a.user + "' may hold only letters, digits, '.', '-' and '_'");
    if (hp.find('@') != std::string::npos) bad(spec, "more than one '@'");
  }
  split_host_port(spec, hp, a);
  return a;
}

std::string ssh_destination(const BoardAddress& a) {
  return a.user.empty() ? a.host : a.user + "@" + a.host;
}

std::string scp_prefix(const BoardAddress& a) {
  std::string host = a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host;
  return (a.user.empty() ? host : a.user + "@" + host) + ":";
}

std::string to_string(const BoardAddress& a) {
  std::string host = a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host;
  return (a.user.empty() ? host : a.user + "@" + host) + ":" + std::to_string(a.port);
}

}  // namespace torq::board
