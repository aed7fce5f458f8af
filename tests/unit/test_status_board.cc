// observe::StatusBoard and its views (issue 33): what the serving thread
// tells it becomes the figures of /api/status, /metrics and the progress
// line. The HTTP server, the live page in Chromium and Prometheus's own
// parser are tested with real processes in tests/observe/check_observe.py.
#include <gtest/gtest.h>

#include <string>

#include "coordinator/observe/status_board.h"
#include "coordinator/observe/status_server.h"

using namespace torq;
using namespace torq::coordinator;
using namespace torq::coordinator::observe;

namespace {

pipeline::JobSpec job(const std::string& key, uint32_t layer, pipeline::Executor e) {
  pipeline::JobSpec j;
  j.id = key + "-" + std::to_string(layer) + "-" + pipeline::executor_name(e);
  j.model_hash = key;
  j.first_node = j.last_node = layer;
  j.executor = e;
  return j;
}

pipeline::ExecResult result(pipeline::Executor e, pipeline::Status s, const std::string& msg = "") {
  pipeline::ExecResult r;
  r.executor = e;
  r.status = s;
  r.error_message = msg;
  return r;
}

// Two tests sharing one unit (discover and run of a model), a third not started.
void two_units(StatusBoard& b) {
  b.set_run("spec.yaml", "run1", "2026-11-29T00:00:00Z");
  b.set_tests({"m-fp32-sim-discover", "m-fp32-sim-run", "n-bf16-sim-discover"}, 2);
  b.set_unit_tests("m-fp32-sim-discover", {"m-fp32-sim-discover", "m-fp32-sim-run"});
  b.set_phase("running");
  b.unit_started("hashM", "m-fp32-sim-discover", 30);
}

}  // namespace

TEST(StatusBoard, CountsResultsByStatusAndExecutorAndJobsPerTest) {
  StatusBoard b;
  two_units(b);
  using pipeline::Executor;
  using pipeline::Status;
  b.job_done(job("hashM", 0, Executor::kNss), result(Executor::kNss, Status::kSuccess), 1, 30);
  b.job_done(job("hashM", 0, Executor::kCss), result(Executor::kCss, Status::kSuccess), 2, 30);
  b.job_done(job("hashM", 1, Executor::kNss), result(Executor::kNss, Status::kError, "Softmax unsupported"), 3, 30);
  b.job_done(job("other", 4, Executor::kHost), result(Executor::kHost, Status::kDifference, "pcc 0.5"), 4, 31);
  const RunStatus s = b.snapshot();
  EXPECT_EQ(s.jobs_done, 4u);
  EXPECT_EQ(s.jobs_estimate, 31u);
  EXPECT_EQ(s.jobs_expected, 62u);  // one of two units planned: the other counted as it
  EXPECT_EQ(s.units_started, 1u);
  EXPECT_EQ(s.results.at("success").at("nss"), 1u);
  EXPECT_EQ(s.results.at("success").at("css"), 1u);
  EXPECT_EQ(s.results.at("error").at("nss"), 1u);
  EXPECT_EQ(s.results.at("difference").at("host"), 1u);
  ASSERT_EQ(s.tests.size(), 3u);
  EXPECT_EQ(s.tests[0].state, "running");
  EXPECT_EQ(s.tests[0].jobs_done, 3u);  // the unit's three jobs; "other" is no test's
  EXPECT_EQ(s.tests[1].jobs_done, 3u);
  EXPECT_EQ(s.tests[2].state, "queued");
  ASSERT_EQ(s.failures.size(), 2u);  // oldest first, named by test (or the key when none)
  EXPECT_EQ(s.failures[0].test, "m-fp32-sim-discover");
  EXPECT_EQ(s.failures[0].layer, 1u);
  EXPECT_EQ(s.failures[0].message, "Softmax unsupported");
  EXPECT_EQ(s.failures[1].test, "other");
  EXPECT_EQ(s.failures[1].status, "difference");
}

TEST(StatusBoard, KeepsTheLatestFailuresAndCountsATestOnce) {
  StatusBoard b;
  two_units(b);
  for (uint32_t i = 0; i < StatusBoard::kFailuresKept + 5; ++i)
    b.job_done(job("hashM", i, pipeline::Executor::kNss),
               result(pipeline::Executor::kNss, pipeline::Status::kError, "e" + std::to_string(i)), i + 1, 40);
  b.test_finished("m-fp32-sim-discover", "failed", "pcc 0.2");
  b.test_finished("m-fp32-sim-discover", "xfailed", "known");  // a later judgement replaces the first
  b.test_finished("n-bf16-sim-discover", "skipped", "");
  const RunStatus s = b.snapshot();
  ASSERT_EQ(s.failures.size(), StatusBoard::kFailuresKept);
  EXPECT_EQ(s.failures.front().message, "e5");
  EXPECT_EQ(s.failures.back().message, "e24");
  EXPECT_EQ(s.tests_done, 2u);
  EXPECT_EQ(s.outcomes.at("xfailed"), 1u);
  EXPECT_EQ(s.outcomes.at("skipped"), 1u);
  EXPECT_EQ(s.outcomes.count("failed") ? s.outcomes.at("failed") : 0u, 0u);
}

TEST(StatusBoard, FleetViewNamesEachWorkersCurrentJobByTest) {
  StatusBoard b;
  two_units(b);
  FleetView v;
  v.queued = 7;
  v.leased = 2;
  FleetView::Worker w;
  w.id = "w1";
  w.target = "sim";
  w.health = "Good";
  w.capacity = 2;
  w.leased = 2;
  w.current_key = "hashM";
  w.current_layer = 12;
  w.current_executor = "nss";
  v.workers.push_back(w);
  FleetView::Worker gone;
  gone.id = "w2";
  gone.health = "Bad";
  gone.connected = false;
  v.workers.push_back(gone);
  const std::vector<std::pair<std::string, size_t>> done = {{"w1", 40}, {"w2", 3}};
  v.done_by_worker = &done;
  b.fleet(v);
  const RunStatus s = b.snapshot();
  EXPECT_EQ(s.jobs_queued, 7u);
  EXPECT_EQ(s.jobs_leased, 2u);
  ASSERT_EQ(s.workers.size(), 2u);
  EXPECT_EQ(s.workers[0].current, "m-fp32-sim-discover layer 12 on nss");
  EXPECT_EQ(s.workers[0].done, 40u);
  EXPECT_FALSE(s.workers[1].connected);
  EXPECT_EQ(s.workers[1].done, 3u);
}

TEST(StatusBoard, LatencyBucketsAreInclusiveUpperBounds) {
  StatusBoard b;
  b.latency(1000);    // exactly 1 ms: the le="0.001" bucket
  b.latency(1001);    // just over: le="0.0025"
  b.latency(90000000);  // 90 s: +Inf only
  const RunStatus s = b.snapshot();
  EXPECT_EQ(s.latency_buckets[0], 1u);
  EXPECT_EQ(s.latency_buckets[1], 1u);
  EXPECT_EQ(s.latency_buckets.back(), 1u);
  EXPECT_EQ(s.latency_count, 3u);
  EXPECT_NEAR(s.latency_sum_s, 0.001 + 0.001001 + 90, 1e-9);
  const std::string m = metrics_text(s);
  EXPECT_NE(m.find("torq_dispatch_latency_seconds_bucket{le=\"0.001\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("torq_dispatch_latency_seconds_bucket{le=\"0.0025\"} 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("torq_dispatch_latency_seconds_bucket{le=\"60\"} 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("torq_dispatch_latency_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << m;
  EXPECT_NE(m.find("torq_dispatch_latency_seconds_count 3\n"), std::string::npos) << m;
}

TEST(StatusBoard, MetricsEscapeLabelValues) {
  RunStatus s;
  WorkerStatus w;
  w.id = "w\"1\\\nx";  // a worker names itself: quote, backslash, newline
  w.target = "sim";
  w.health = "Good";
  s.workers.push_back(w);
  const std::string m = metrics_text(s);
  EXPECT_NE(m.find("torq_worker_up{worker=\"w\\\"1\\\\\\nx\",target=\"sim\"} 1\n"), std::string::npos) << m;
}

TEST(StatusBoard, JsonRoundTripsAndRefusesOtherDocuments) {
  StatusBoard b;
  two_units(b);
  b.job_done(job("hashM", 1, pipeline::Executor::kNss),
             result(pipeline::Executor::kNss, pipeline::Status::kError, "x"), 1, 30);
  b.latency(5000);
  const nlohmann::json j = to_json(b.snapshot());
  EXPECT_EQ(to_json(status_from_json(j)), j);
  EXPECT_THROW(status_from_json(nlohmann::json{{"tool", "x"}}), nlohmann::json::exception);
  EXPECT_THROW(status_from_json(nlohmann::json::parse("[1, 2]")), nlohmann::json::exception);
}

TEST(StatusBoard, ProgressFiguresSayWhatIsEstimated) {
  RunStatus s;
  s.tests_total = 128;
  s.tests_done = 12;
  s.units_total = 48;
  s.units_started = 10;
  s.jobs_done = 12000;
  s.jobs_estimate = 8000;
  s.jobs_expected = 20000;
  s.jobs_per_s = 290.04;
  s.eta_s = 200;
  EXPECT_EQ(progress_figures(s), "tests 12/128 | jobs 12000/~20000 (60%) | 290.0 jobs/s | ETA 3m20s");
  s.units_started = 48;
  s.eta_s = -1;
  EXPECT_EQ(progress_figures(s), "tests 12/128 | jobs 12000/20000 (60%) | 290.0 jobs/s | ETA -");
  EXPECT_EQ(duration_text(45.4), "45s");
  EXPECT_EQ(duration_text(3725), "1h02m");
}

TEST(StatusServer, OnlyLoopbackAddressLiteralsAreLoopback) {
  for (const char* host : {"127.0.0.1", "127.9.8.7", "::1", "::ffff:127.0.0.1", "localhost"})
    EXPECT_TRUE(is_loopback_host(host)) << host;
  for (const char* host : {"0.0.0.0", "128.0.0.1", "10.0.0.1", "127.0.0.1.example.net", "127.evil", "::",
                           "::ffff:10.0.0.1", "", "localhost.example.net"})
    EXPECT_FALSE(is_loopback_host(host)) << host;
}
