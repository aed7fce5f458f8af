// toolchain::run_process with real children: it sleeps until the child
// writes or exits (pidfd) instead of looking every 20 ms, and still sees the
// exit, the output and a timeout.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "tests/thread_switches.h"
#include "worker/toolchain/subprocess.h"

namespace torq::toolchain {
namespace {

using Clock = std::chrono::steady_clock;

// A 1 s child, with its output pipes open (sleep holds them) or closed at
// once: either way the wait blocks a handful of times, not 50 (20 ms ticks).
TEST(Subprocess, WaitsForTheChildWithoutWakingOnATimer) {
  struct Case {
    const char* script;
    const char* out;
    const char* err;
  };
  for (const Case& c : {Case{"echo out; echo err >&2; sleep 1; echo end", "out\nend\n", "err\n"},
                        Case{"exec >&- 2>&-; sleep 1", "", ""}}) {
    ProcessResult r;
    const testing::Waited w = testing::measure_wait([&] { r = run_process({"sh", "-c", c.script}, 10000); });
    ASSERT_GE(w.switches, 0) << "no /proc/thread-self/status";
    EXPECT_TRUE(r.ok()) << c.script << ": exit " << r.exit_code << " " << r.err;
    EXPECT_EQ(r.out, c.out);
    EXPECT_EQ(r.err, c.err);
    EXPECT_GE(w.ms, 1000) << c.script;
    EXPECT_LE(w.switches, 10) << c.script << ": the wait woke " << w.switches << " times in " << w.ms << " ms";
  }
}

// A child that exits at once is answered at once: the wait ends when its
// pipes close and it is reaped, not after the 500 ms allowed for a grandchild
// holding them (the median of 5, so one slow start on a loaded machine does
// not decide).
TEST(Subprocess, AChildThatExitsAtOnceIsAnsweredAtOnce) {
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    const ProcessResult r = run_process({"true"}, 10000);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    EXPECT_TRUE(r.ok());
  }
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[2], 250) << "median of 5 runs of true";
}

TEST(Subprocess, ATimeoutStillKillsTheChildAtItsDeadline) {
  const auto t0 = Clock::now();
  const ProcessResult r = run_process({"sh", "-c", "exec >&- 2>&-; sleep 30"}, 300);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_GE(ms, 300);
  EXPECT_LT(ms, 5000);
}

}  // namespace
}  // namespace torq::toolchain
