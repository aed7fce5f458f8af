// A board's ssh address, as given on the command line: [USER@]HOST[:PORT].
// HOST is a name or IPv4 address, or an IPv6 address in brackets
// ([::1]:2222). Nothing in an address may start with '-' or hold shell or
// scp metacharacters: it goes into ssh/scp argv as given.
#pragma once

#include <string>

namespace torq::board {

struct BoardAddress {
  std::string user;      // empty: ssh's default (the local user or ssh_config)
  std::string host;      // without brackets, also for IPv6
  int port = 22;
  std::string key_file;  // empty: ssh's default identities
};

// Parses [USER@]HOST[:PORT]; throws std::invalid_argument with a message
// naming the address and what is wrong with it.
BoardAddress parse_board(const std::string& spec);

// "user@host" or "host" (IPv6 without brackets): ssh's destination.
std::string ssh_destination(const BoardAddress& a);

// "user@host:" or "user@[v6]:": the prefix of an scp remote path.
std::string scp_prefix(const BoardAddress& a);

// "user@host:port" for messages.
std::string to_string(const BoardAddress& a);

}  // namespace torq::board
