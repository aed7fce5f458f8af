// board::run_process (the ssh and scp clients' runner) with real children:
// it sleeps until the child writes or exits (pidfd) instead of looking every
// 50 ms, or every 5 ms once the child has closed its pipes.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/thread_switches.h"
#include "worker/board/process.h"

namespace torq::board {
namespace {

using Clock = std::chrono::steady_clock;

TEST(BoardProcess, WaitsForTheChildWithoutWakingOnATimer) {
  struct Case {
    const char* script;
    const char* out;
  };
  for (const Case& c : {Case{"echo out; sleep 1; echo end", "out\nend\n"}, Case{"exec >&- 2>&-; sleep 1", ""}}) {
    ProcResult r;
    const testing::Waited w = testing::measure_wait([&] { r = run_process({"sh", "-c", c.script}, 10000); });
    ASSERT_GE(w.switches, 0) << "no /proc/thread-self/status";
    EXPECT_EQ(r.exit_code, 0) << c.script << ": " << r.err;
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.out, c.out);
    EXPECT_GE(w.ms, 1000) << c.script;
    EXPECT_LE(w.switches, 10) << c.script << ": the wait woke " << w.switches << " times in " << w.ms << " ms";
  }
}

TEST(BoardProcess, ATimeoutStillKillsTheChildAtItsDeadline) {
  const auto t0 = Clock::now();
  const ProcResult r = run_process({"sh", "-c", "exec >&- 2>&-; sleep 30"}, 300);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_GE(ms, 300);
  EXPECT_LT(ms, 5000);
}

}  // namespace
}  // namespace torq::board
