// LocalPool with lanes (local_pool.h): jobs run as threads of one
// `torq-worker --stdio` process, sharing the model and its lazy reference
// run. Real processes on the demo CNN: two lanes give the results of one
// job per process, byte for byte; a crash or a hang costs only the job that
// caused it, and the jobs that shared its process run again uncharged.
#include <gtest/gtest.h>

#include <poll.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <map>
#include <string>
#include <thread>

#include "pipeline/wire/codec.h"
#include "tests/integration/pool_run.h"
#include "tests/integration/proc.h"
#include "worker/runner/local_pool.h"

using namespace torq;
using namespace torq::test;

namespace {

// Layer jobs of the demo (14 layers) on `executors`, model "demo" in `cache`.
std::deque<pipeline::JobSpec> demo_jobs(const std::vector<pipeline::Executor>& executors, int layers,
                                        uint32_t timeout_ms) {
  std::deque<pipeline::JobSpec> jobs;
  for (int i = 0; i < layers; ++i)
    for (auto e : executors) {
      pipeline::JobSpec j;
      j.id = "demo/" + std::to_string(i) + "/" + pipeline::executor_name(e);
      j.model_hash = "demo";
      j.first_node = j.last_node = static_cast<uint32_t>(i);
      j.executor = e;
      j.timeout_ms = timeout_ms;
      jobs.push_back(j);
    }
  return jobs;
}

std::string cache_with_demo(const std::string& name) {
  const std::string dir = fresh_dir(name);
  EXPECT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  return dir;
}

// Runs `jobs` on a pool; results by job id.
std::map<std::string, pipeline::ExecResult> run_pool(const std::string& cache, int workers, int lanes,
                                                     std::deque<pipeline::JobSpec> jobs, int queue_ahead = 0) {
  runner::LocalPoolOptions o;
  o.workers = workers;
  o.lanes = lanes;
  o.queue_ahead = queue_ahead;
  o.cache_dir = cache;
  return run_on_pool(o, std::move(jobs));
}

// demo/1..4/host succeeded, each charged one attempt only (the faulty job
// is demo/0/host).
void expect_others_succeeded_uncharged(const std::map<std::string, pipeline::ExecResult>& r) {
  for (int i = 1; i < 5; ++i) {
    const auto& ok = r.at("demo/" + std::to_string(i) + "/host");
    EXPECT_EQ(ok.status, pipeline::Status::kSuccess) << i << ": " << ok.error_message;
    EXPECT_EQ(ok.attempts, 1u) << i;
  }
}

}  // namespace

// The jobs a caller prefetches are spread over the pool's processes, each
// taking its share rounded up (start_local_pool and the fleet worker).
TEST(PoolLanes, PrefetchIsSpreadOverTheProcessesRoundedUp) {
  EXPECT_EQ(torq::runner::queue_ahead_for(2, 2, 4), 4);  // one process
  EXPECT_EQ(torq::runner::queue_ahead_for(4, 1, 5), 2);  // four: 5 / 4 rounded up
  EXPECT_EQ(torq::runner::queue_ahead_for(3, 2, 3), 2);  // two (2 + 1 lanes)
  EXPECT_EQ(torq::runner::queue_ahead_for(2, 9, 3), 3);  // lanes beyond the jobs: one process
  EXPECT_EQ(torq::runner::queue_ahead_for(0, 0, 1), 1);  // at least one job, one lane
  EXPECT_EQ(torq::runner::queue_ahead_for(2, 1, -3), 0);
}

TEST(PoolLanes, TwoLanesGiveTheResultsOfAProcessPerJob) {
  const std::string cache = cache_with_demo("lanes-equal");
  const auto jobs = demo_jobs({pipeline::Executor::kNss, pipeline::Executor::kCss, pipeline::Executor::kHost}, 14,
                              60000);
  const auto apart = run_pool(cache, 2, 1, jobs);
  const auto lanes = run_pool(cache, 2, 2, jobs);
  const auto queued = run_pool(cache, 2, 2, jobs, 3);  // and 3 waiting in the process
  ASSERT_EQ(apart.size(), 42u);
  ASSERT_EQ(lanes.size(), 42u);
  ASSERT_EQ(queued.size(), 42u);
  size_t success = 0;
  for (const auto& [id, r] : apart) {
    ASSERT_TRUE(lanes.count(id)) << id;
    EXPECT_EQ(comparable(lanes.at(id)), comparable(r)) << id;
    EXPECT_EQ(lanes.at(id).attempts, 1u) << id;
    ASSERT_TRUE(queued.count(id)) << id;
    EXPECT_EQ(comparable(queued.at(id)), comparable(r)) << id;
    EXPECT_EQ(queued.at(id).attempts, 1u) << id;
    success += r.status == pipeline::Status::kSuccess && !r.outputs.empty();
  }
  EXPECT_GE(success, 28u);  // css and host run every layer of the demo: real outputs compared
}

TEST(PoolLanes, ACrashWithTwoInFlightChargesOnlyTheJobThatCrashes) {
  const std::string cache = cache_with_demo("lanes-crash");
  // Every job takes 200 ms, so the other lane has a job in flight when the
  // crash (at the start of /0/host) takes the process down.
  ScopedEnv fault("TORQ_WORKER_FAULT", "crash:demo/0/host");
  ScopedEnv delay("TORQ_WORKER_DELAY_MS", "200");
  const auto r = run_pool(cache, 2, 2, demo_jobs({pipeline::Executor::kHost}, 5, 60000));
  ASSERT_EQ(r.size(), 5u);
  const auto& crashed = r.at("demo/0/host");
  EXPECT_EQ(crashed.status, pipeline::Status::kError);
  EXPECT_EQ(crashed.error_class, "crash");
  EXPECT_EQ(crashed.attempts, 3u);  // max_attempts, each charged when it ran alone
  EXPECT_NE(crashed.error_message.find("after 3 attempts"), std::string::npos) << crashed.error_message;
  expect_others_succeeded_uncharged(r);  // run again after sharing the crash
}

TEST(PoolLanes, AHangCostsItsJobAndTheOtherLanesJobRunsAgainUncharged) {
  const std::string cache = cache_with_demo("lanes-hang");
  // /0/host hangs; the other lane runs 400 ms jobs, so one is in flight
  // when the hang's 1000 ms deadline kills the process.
  ScopedEnv fault("TORQ_WORKER_FAULT", "hang:demo/0/host");
  ScopedEnv delay("TORQ_WORKER_DELAY_MS", "400");
  const auto r = run_pool(cache, 2, 2, demo_jobs({pipeline::Executor::kHost}, 5, 1000));
  ASSERT_EQ(r.size(), 5u);
  const auto& hung = r.at("demo/0/host");
  EXPECT_EQ(hung.status, pipeline::Status::kError);
  EXPECT_EQ(hung.error_class, "timeout");
  EXPECT_EQ(hung.attempts, 1u);
  expect_others_succeeded_uncharged(r);
}

// Jobs waiting in a process (queue_ahead) are timed from when a lane takes
// them: one lane, 300 ms jobs, a 700 ms timeout, 4 jobs written at once.
// Timed from their writing, the third and fourth would time out (they
// start at 600 and 900 ms).
TEST(PoolLanes, AJobWaitingInTheProcessIsTimedFromItsStart) {
  const std::string cache = cache_with_demo("lanes-ahead-timeout");
  ScopedEnv delay("TORQ_WORKER_DELAY_MS", "300");
  const auto r = run_pool(cache, 1, 1, demo_jobs({pipeline::Executor::kHost}, 4, 700), 3);
  ASSERT_EQ(r.size(), 4u);
  for (const auto& [id, res] : r) {
    EXPECT_EQ(res.status, pipeline::Status::kSuccess) << id << ": " << res.error_message;
    EXPECT_EQ(res.attempts, 1u) << id;
  }
}

// A crash with jobs waiting behind the one that crashed: only the started
// job is charged (it is the only one that can have crashed the process);
// the waiting ones go back uncharged and run with others, not alone.
TEST(PoolLanes, ACrashChargesTheStartedJobNotThoseWaitingBehindIt) {
  const std::string cache = cache_with_demo("lanes-ahead-crash");
  ScopedEnv fault("TORQ_WORKER_FAULT", "crash:demo/0/host");
  ScopedEnv delay("TORQ_WORKER_DELAY_MS", "100");
  const auto r = run_pool(cache, 1, 1, demo_jobs({pipeline::Executor::kHost}, 5, 60000), 3);
  ASSERT_EQ(r.size(), 5u);
  const auto& crashed = r.at("demo/0/host");
  EXPECT_EQ(crashed.status, pipeline::Status::kError);
  EXPECT_EQ(crashed.error_class, "crash");
  EXPECT_EQ(crashed.attempts, 3u);
  EXPECT_NE(crashed.error_message.find("after 3 attempts"), std::string::npos) << crashed.error_message;
  expect_others_succeeded_uncharged(r);
}

// A hang with jobs waiting behind it: the hung job is a timeout, the
// waiting ones were never started and run again uncharged.
TEST(PoolLanes, AHangCostsOnlyItsJobWithJobsWaitingBehindIt) {
  const std::string cache = cache_with_demo("lanes-ahead-hang");
  ScopedEnv fault("TORQ_WORKER_FAULT", "hang:demo/0/host");
  const auto r = run_pool(cache, 1, 1, demo_jobs({pipeline::Executor::kHost}, 5, 1000), 3);
  ASSERT_EQ(r.size(), 5u);
  const auto& hung = r.at("demo/0/host");
  EXPECT_EQ(hung.status, pipeline::Status::kError);
  EXPECT_EQ(hung.error_class, "timeout");
  EXPECT_EQ(hung.attempts, 1u);
  expect_others_succeeded_uncharged(r);
}

// Results that wait in the pipe together come out of one service() call,
// so the caller commits them as one group: 4 jobs written at once (2
// lanes, 2 waiting), and service() called only once every result has had
// time to arrive (the demo's layer jobs take well under a millisecond each
// once the first is back).
TEST(PoolLanes, ResultsWaitingTogetherComeOutOfOneServiceCall) {
  const std::string cache = cache_with_demo("lanes-batch");
  runner::LocalPoolOptions o;
  o.workers = 2;  // one process of 2 lanes
  o.lanes = 2;
  o.queue_ahead = 2;
  o.cache_dir = cache;
  runner::LocalPool pool(o);
  ASSERT_EQ(pool.slots(), 4u);
  for (const auto& j : demo_jobs({pipeline::Executor::kHost}, 4, 60000)) pool.submit(j);
  EXPECT_TRUE(pool.service().empty());  // written to the process
  ASSERT_EQ(pool.busy(), 4u);
  std::vector<pollfd> fds;
  for (int fd : pool.wait_fds()) fds.push_back({fd, POLLIN, 0});
  ASSERT_EQ(fds.size(), 1u);
  ASSERT_EQ(poll(fds.data(), fds.size(), 30000), 1);  // the first result is in
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const auto got = pool.service();
  EXPECT_EQ(got.size(), 4u);
  for (const auto& [job, r] : got) EXPECT_EQ(r.status, pipeline::Status::kSuccess) << job.id << ": " << r.error_message;
  EXPECT_EQ(pool.busy(), 0u);
}
