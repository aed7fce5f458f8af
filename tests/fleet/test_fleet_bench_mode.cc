// The pieces tests/bench/fleet_bench.sh relies on, with real processes on
// loopback: torq-worker --bench-executor (jobs answered in-process, the
// coordinator cannot tell), torq-coordinator --min-workers, the dispatch
// latency line of the summary, and a second run of unchanged jobs served
// from the content-addressed cache (no worker needed).
#include <gtest/gtest.h>

#include <chrono>
#include <regex>

#include "tests/fleet/fleet_harness.h"

using namespace torq::fleet_test;

namespace {

long number(const std::string& out, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(pattern))) return -1;
  return std::stol(m[1]);
}

// torq-sim's demo model (42 jobs) saved to `model`.
void save_demo(const std::string& model, const std::string& dir) {
  Proc p({bin("torq-sim"), "demo", "--save", model}, dir + "/sim.log");
  ASSERT_EQ(p.wait(60000), 0) << p.output();
}

}  // namespace

TEST(FleetBenchMode, BenchWorkersServeARunAndAnUnchangedRerunComesFromTheCache) {
  const std::string dir = fresh_dir("bench_mode");
  const std::string model = dir + "/demo.onnx";
  ASSERT_NO_FATAL_FAILURE(save_demo(model, dir));
  const std::string ep = endpoint(free_port());
  Proc noop({bin("torq-worker"), "--connect", ep, "--id", "noop", "--cache", dir + "/c1", "--capacity", "4",
             "--heartbeat-ms", "200", "--bench-executor", "noop"},
            dir + "/w1.log");
  Proc sleeper({bin("torq-worker"), "--connect", ep, "--id", "sleep", "--cache", dir + "/c2", "--capacity", "2",
                "--heartbeat-ms", "200", "--bench-executor", "sleep:5"},
               dir + "/w2.log");
  Proc first({bin("torq-coordinator"), "--model", model, "--bind", ep, "--db", dir + "/db", "--heartbeat-ms", "200",
              "--min-workers", "2"},
             dir + "/coordinator1.log");
  auto code = first.wait(120000);
  ASSERT_TRUE(code) << first.output();
  EXPECT_EQ(*code, 0) << first.output();
  std::string out = first.output();
  const long jobs = number(out, "(\\d+) run on the fleet");
  EXPECT_EQ(jobs, 42) << out;
  EXPECT_EQ(number(out, "fleet +(\\d+) worker registrations"), 2) << out;
  EXPECT_EQ(number(out, "success (\\d+)"), jobs) << out;
  EXPECT_EQ(number(out, "dispatch +(\\d+) results, latency"), jobs) << out;
  EXPECT_NE(out.find("p99 "), std::string::npos) << out;
  EXPECT_NE(noop.output().find("BENCHMARK MODE: executor noop"), std::string::npos) << noop.output();
  EXPECT_NE(sleeper.output().find("BENCHMARK MODE: executor sleep:5"), std::string::npos) << sleeper.output();
  // No model blob is fetched in benchmark mode.
  EXPECT_EQ(out.find("model blobs served") != std::string::npos ? number(out, "(\\d+) model blobs served") : -1, 0);
  noop.signal(SIGTERM);
  sleeper.signal(SIGTERM);
  EXPECT_EQ(noop.wait(20000), 0) << noop.output();
  EXPECT_EQ(sleeper.wait(20000), 0) << sleeper.output();

  // Another run id (the timeout is part of it, not of the cache key), same
  // jobs: all from the cache, without any worker.
  Proc second({bin("torq-coordinator"), "--model", model, "--bind", ep, "--db", dir + "/db", "--job-timeout-ms",
               "60000"},
              dir + "/coordinator2.log");
  code = second.wait(120000);
  ASSERT_TRUE(code) << second.output();
  EXPECT_EQ(*code, 0) << second.output();
  out = second.output();
  EXPECT_EQ(number(out, "(\\d+) cache hits"), jobs) << out;
  EXPECT_EQ(number(out, "(\\d+) run on the fleet"), 0) << out;

  // A bad --bench-executor is refused.
  Proc bad({bin("torq-worker"), "--connect", ep, "--bench-executor", "sleep:x"}, dir + "/bad.log");
  code = bad.wait(20000);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 2) << bad.output();
  EXPECT_NE(bad.output().find("bad bench executor"), std::string::npos) << bad.output();
}

// A sleep stands in for a lane: a worker that prefetches jobs beyond its
// capacity still sleeps on --capacity of them at once, each from its
// STARTED (the nightly-scaling bench's workers prefetch). Before, every job
// held slept at once, so --prefetch 4 ran a capacity-1 worker 5 wide.
TEST(FleetBenchMode, ASleepingWorkerRunsItsCapacityAtOnceWhateverItPrefetches) {
  const std::string dir = fresh_dir("bench_mode_prefetch");
  const std::string model = dir + "/demo.onnx";
  ASSERT_NO_FATAL_FAILURE(save_demo(model, dir));
  const std::string ep = endpoint(free_port());
  Proc sleeper({bin("torq-worker"), "--connect", ep, "--id", "sleep", "--cache", dir + "/c", "--capacity", "1",
                "--prefetch", "4", "--heartbeat-ms", "200", "--bench-executor", "sleep:60"},
               dir + "/w.log");
  const auto t0 = std::chrono::steady_clock::now();
  Proc coord({bin("torq-coordinator"), "--model", model, "--bind", ep, "--db", dir + "/db", "--heartbeat-ms", "200",
              "--min-workers", "1"},
             dir + "/coordinator.log");
  auto code = coord.wait(120000);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string out = coord.output();
  const long jobs = number(out, "(\\d+) run on the fleet");
  ASSERT_EQ(jobs, 42) << out;
  // One at a time: at least 42 x 60 ms = 2.52 s of sleeps; five at once
  // (capacity + prefetch) would take about a fifth of that.
  EXPECT_GE(wall, jobs * 0.060) << out;
  EXPECT_LT(wall, jobs * 0.060 * 3 + 5) << out;
  // Each job said when it started: the dispatch line counts the results.
  EXPECT_EQ(number(out, "dispatch +(\\d+) results, latency"), jobs) << out;
  sleeper.signal(SIGTERM);
  EXPECT_EQ(sleeper.wait(20000), 0) << sleeper.output();
}
