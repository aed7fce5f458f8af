// Releasing reference values no job will read (worker/runner/reference_release.h):
// the bookkeeping on its own, and real job processes whose results are the
// same whether they keep every value, release them, or must run the
// reference again for a job that comes late.
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <map>
#include <string>

#include "tests/integration/pool_run.h"
#include "tests/integration/proc.h"
#include "worker/runner/local_pool.h"
#include "worker/runner/reference_release.h"

using namespace torq;
using namespace torq::test;
using runner::ReferenceRelease;

TEST(ReferenceRelease, AValueGoesOnceItsLastReaderIsAWindowBehindTheFront) {
  ReferenceRelease r({{"x", 0}, {"a", 1}, {"b", 3}}, 2);
  for (const char* n : {"x", "a", "b", "unread"}) r.held(n);
  EXPECT_TRUE(r.due().empty());  // no job yet
  r.job_started(0, 0);
  EXPECT_EQ(r.due(), std::vector<std::string>{"unread"});  // no layer reads it
  r.job_ended(0);
  r.job_started(2, 2);
  EXPECT_TRUE(r.due().empty());  // front 2: floor 0
  r.job_ended(2);
  r.job_started(3, 3);
  EXPECT_EQ(r.due(), std::vector<std::string>{"x"});  // floor 1: x's reader 0 is behind
  r.job_ended(3);
  r.job_started(4, 5);
  EXPECT_EQ(r.due(), std::vector<std::string>{"a"});  // floor 3
  EXPECT_TRUE(r.released("x"));
  EXPECT_TRUE(r.released("a"));
  EXPECT_FALSE(r.released("b"));
}

TEST(ReferenceRelease, ARunningJobHoldsEverythingFromItsFirstLayer) {
  ReferenceRelease r({{"x", 0}, {"a", 1}, {"b", 2}}, 0);
  for (const char* n : {"x", "a", "b"}) r.held(n);
  r.job_started(1, 1);  // a slow job of layer 1
  r.job_started(9, 9);  // the front far ahead
  EXPECT_EQ(r.due(), std::vector<std::string>{"x"});
  r.job_ended(1);
  EXPECT_EQ(r.due(), (std::vector<std::string>{"a", "b"}));
}

TEST(ReferenceRelease, AfterStopNothingMoreGoesAndOnlyWhatIsGivenBackIsHeldAgain) {
  ReferenceRelease r({{"x", 0}, {"z", 0}}, 0);
  r.held("x");
  r.held("z");
  r.job_started(5, 5);
  EXPECT_EQ(r.due(), (std::vector<std::string>{"x", "z"}));
  r.stop();  // a rewind starts
  r.given_back("x");  // and gives back x only (it failed before z)
  EXPECT_FALSE(r.released("x"));
  EXPECT_TRUE(r.released("z"));  // asked for again, z rewinds again
  r.held("y");
  r.job_started(50, 50);
  EXPECT_TRUE(r.due().empty());
  ReferenceRelease never({{"x", 0}}, -1);  // a negative window keeps everything
  never.held("x");
  never.job_started(9, 9);
  EXPECT_TRUE(never.due().empty());
}

namespace {

pipeline::JobSpec demo_job(uint32_t layer, pipeline::Executor e, const std::string& tag = "") {
  pipeline::JobSpec j;
  j.id = "demo/" + std::to_string(layer) + "/" + pipeline::executor_name(e) + tag;
  j.model_hash = "demo";
  j.first_node = j.last_node = layer;
  j.executor = e;
  j.timeout_ms = 60000;
  return j;
}

}  // namespace

// One job process runs the demo's 14 layers on host and css in order, then
// layers 0 and 5 again: with a window of 2 the late jobs find their values
// released and the process runs the reference again, once. Every result is
// the one a process that keeps every value gives.
TEST(ReferenceRelease, LateJobsGetTheValuesBackFromASecondRunAndTheSameResults) {
  const std::string dir = fresh_dir("reference-release");
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  std::deque<pipeline::JobSpec> jobs;
  for (uint32_t l = 0; l < 14; ++l)
    for (auto e : {pipeline::Executor::kHost, pipeline::Executor::kCss}) jobs.push_back(demo_job(l, e));
  jobs.push_back(demo_job(0, pipeline::Executor::kHost, "/late"));
  jobs.push_back(demo_job(5, pipeline::Executor::kCss, "/late"));
  auto run = [&](const char* window, const std::string& log) {
    ScopedEnv w("TORQ_REFERENCE_WINDOW", window);
    runner::LocalPoolOptions o;
    o.workers = 1;
    o.cache_dir = dir;
    o.stderr_file = dir + "/" + log;
    return run_on_pool(o, jobs);
  };
  const auto kept = run("-1", "kept.log");
  const auto released = run("2", "released.log");
  ASSERT_EQ(kept.size(), 30u);
  ASSERT_EQ(released.size(), 30u);
  for (const auto& [id, r] : kept) {
    ASSERT_TRUE(released.count(id)) << id;
    EXPECT_EQ(r.status, pipeline::Status::kSuccess) << id << ": " << r.error_message;
    EXPECT_FALSE(r.outputs.empty()) << id;
    EXPECT_EQ(comparable(released.at(id)), comparable(r)) << id;
  }
  // A late job's result is its layer's first one (from the second run, too).
  for (const char* id : {"demo/0/host", "demo/5/css"}) {
    auto late = released.at(std::string(id) + "/late");
    late.job_id = kept.at(id).job_id;
    EXPECT_EQ(comparable(late), comparable(kept.at(id))) << id;
  }
  const std::string log = slurp(dir + "/released.log");
  size_t rewinds = 0;
  for (size_t p = log.find("[reference] "); p != std::string::npos; p = log.find("[reference] ", p + 1)) ++rewinds;
  EXPECT_EQ(rewinds, 1u) << log;
  EXPECT_NE(log.find("running the reference again from its start"), std::string::npos) << log;
  EXPECT_EQ(slurp(dir + "/kept.log").find("[reference] "), std::string::npos);
}

// The second run fails (an injected fault): a late job whose values it did
// not give back is an error of class reference that says so, never a result
// on stand-in values; the jobs before it are unharmed.
TEST(ReferenceRelease, AFailedSecondRunIsTheLateJobsReferenceError) {
  const std::string dir = fresh_dir("reference-release-fault");
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  std::deque<pipeline::JobSpec> jobs;
  for (uint32_t l = 0; l < 14; ++l) jobs.push_back(demo_job(l, pipeline::Executor::kHost));
  jobs.push_back(demo_job(0, pipeline::Executor::kHost, "/late"));
  ScopedEnv w("TORQ_REFERENCE_WINDOW", "2");
  ScopedEnv f("TORQ_REFERENCE_REWIND_FAULT", "1");
  runner::LocalPoolOptions o;
  o.workers = 1;
  o.cache_dir = dir;
  o.stderr_file = dir + "/worker.log";
  const auto r = run_on_pool(o, jobs);
  ASSERT_EQ(r.size(), 15u);
  for (uint32_t l = 0; l < 14; ++l) {
    const auto& ok = r.at("demo/" + std::to_string(l) + "/host");
    EXPECT_EQ(ok.status, pipeline::Status::kSuccess) << l << ": " << ok.error_message;
  }
  const auto& late = r.at("demo/0/host/late");
  EXPECT_EQ(late.status, pipeline::Status::kError);
  EXPECT_EQ(late.error_class, "reference");
  EXPECT_NE(late.error_message.find("was let go and a second reference run could not give it back"),
            std::string::npos)
      << late.error_message;
  EXPECT_NE(late.error_message.find("injected by TORQ_REFERENCE_REWIND_FAULT=1"), std::string::npos)
      << late.error_message;
  EXPECT_TRUE(late.outputs.empty());
}
