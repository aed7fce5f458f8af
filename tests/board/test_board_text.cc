// Board addresses, shell quoting and bash's time report: no ssh needed.
#include <gtest/gtest.h>

#include "worker/board/address.h"
#include "worker/board/remote_script.h"

namespace torq::board {
namespace {

TEST(BoardAddress, ParsesUserHostPort) {
  BoardAddress a = parse_board("root@sl2619-dev-board-80:2222");
  EXPECT_EQ(a.user, "root");
  EXPECT_EQ(a.host, "sl2619-dev-board-80");
  EXPECT_EQ(a.port, 2222);
  BoardAddress b = parse_board("10.0.0.7");
  EXPECT_EQ(b.user, "");
  EXPECT_EQ(b.host, "10.0.0.7");
  EXPECT_EQ(b.port, 22);
  BoardAddress c = parse_board("me@[fe80::1]:22");
  EXPECT_EQ(c.host, "fe80::1");
  EXPECT_EQ(scp_prefix(c), "me@[fe80::1]:");
  EXPECT_EQ(ssh_destination(c), "me@fe80::1");
}

TEST(BoardAddress, RejectsWithClearErrors) {
  auto msg = [](const std::string& spec) {
    try { parse_board(spec); } catch (const std::invalid_argument& e) { return std::string(e.what()); }
    return std::string("(accepted)");
  };
  EXPECT_NE(msg("").find("empty"), std::string::npos);
  EXPECT_NE(msg("@host").find("empty user"), std::string::npos);
  EXPECT_NE(msg("host:").find("empty port"), std::string::npos);
  EXPECT_NE(msg("host:70000").find("outside 1..65535"), std::string::npos);
  EXPECT_NE(msg("host:22x").find("not a number"), std::string::npos);
  EXPECT_NE(msg("-oProxyCommand=x").find("host '-oProxyCommand=x'"), std::string::npos);
  EXPECT_NE(msg("a@b@c").find("more than one '@'"), std::string::npos);
  EXPECT_NE(msg("fe80::1").find("needs brackets"), std::string::npos);
  EXPECT_NE(msg("ho$t").find("may hold only"), std::string::npos);
  EXPECT_NE(msg("x;y@host").find("user 'x;y'"), std::string::npos);
  EXPECT_NE(msg("host").find("(accepted)"), std::string::npos);
}

TEST(ShellQuote, SingleQuotesEverything) {
  EXPECT_EQ(shell_quote("abc"), "'abc'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_join({"a b", "$(x)"}), "'a b' '$(x)'");
}

TEST(TimeReport, ParsesAndStripsTheLastReport) {
  TimedStderr t = split_time_report("warning: x\nreal here\n\nreal\t1m2.345s\nuser\t0m0.001s\nsys\t0m0.002s\n");
  ASSERT_TRUE(t.wall_s.has_value());
  EXPECT_NEAR(*t.wall_s, 62.345, 1e-9);
  EXPECT_EQ(t.err, "warning: x\nreal here\n");
  TimedStderr comma = split_time_report("\nreal\t0m0,301s\nuser\t0m0,000s\nsys\t0m0,000s\n");
  ASSERT_TRUE(comma.wall_s.has_value());
  EXPECT_NEAR(*comma.wall_s, 0.301, 1e-9);
  EXPECT_EQ(comma.err, "");
  EXPECT_FALSE(split_time_report("Connection closed\n").wall_s.has_value());
}

TEST(RemotePath, OnlyPlainPaths) {
  EXPECT_NO_THROW(check_remote_path("/tmp/resnet18_layer-3/out.0.bin"));
  EXPECT_THROW(check_remote_path("/tmp/a b"), std::invalid_argument);
  EXPECT_THROW(check_remote_path("/tmp/*"), std::invalid_argument);
  EXPECT_THROW(check_remote_path("-rf"), std::invalid_argument);
  EXPECT_THROW(check_remote_path("/tmp/$(x)"), std::invalid_argument);
}

}  // namespace
}  // namespace torq::board
