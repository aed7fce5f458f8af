// The broker's protocol, in process: a FleetBroker on a loopback port, a real
// Store, and scripted workers (raw DEALERs) that behave well or badly.
#include <gtest/gtest.h>

#include <algorithm>

#include <flatbuffers/flatbuffers.h>

#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "coordinator/fleet/fleet_broker.h"
#include "pipeline/model/model_import.h"
#include "schema/fleet_generated.h"
#include "tests/fleet/fleet_harness.h"

using namespace torq;
using namespace torq::fleet_test;
using coordinator::BrokerOptions;
using coordinator::FleetBroker;
using pipeline::Executor;
using pipeline::ExecResult;
using pipeline::FleetType;
using pipeline::JobSpec;
using pipeline::Status;

namespace {

const std::string kHash = pipeline::sha256_hex("fake model bytes");
const std::string kRun = "testrun";

JobSpec job(int layer, Executor e, const std::string& target = "sim") {
  JobSpec j;
  j.model_hash = kHash;
  j.first_node = j.last_node = static_cast<uint32_t>(layer);
  j.executor = e;
  j.target = target;
  j.id = kHash.substr(0, 16) + "/" + std::to_string(layer) + "/" + pipeline::executor_name(e);
  j.timeout_ms = 5000;
  return j;
}

// A broker serving in a thread, fed from a queue the test fills.
class Harness {
 public:
  Harness(const std::string& name, BrokerOptions o, std::vector<JobSpec> jobs, bool fresh = true) {
    dir_ = fresh ? fresh_dir(name) : std::string(TORQ_TEST_TMP) + "/fleet/" + name;
    store_ = pipeline::Store::open(dir_ + "/db");
    store_->put_model(kHash, "fake model bytes");
    for (auto& j : jobs) source_.push_back(j);
    o.bind = endpoint(free_port());
    // Fast heartbeats; a scripted worker that pauses (the test is busy with
    // another one) for up to a second still counts as alive.
    if (o.heartbeat_ms == BrokerOptions{}.heartbeat_ms) o.heartbeat_ms = 100;
    if (o.liveness == BrokerOptions{}.liveness) o.liveness = 10;
    o.log = [this](const std::string& s) {
      std::lock_guard<std::mutex> g(mu_);
      log_ += s + "\n";
    };
    broker_ = std::make_unique<FleetBroker>(*store_, kRun, o);
  }
  ~Harness() { stop(); }
  void start() {
    thread_ = std::thread([this] {
      completed_ = broker_->run(
          [this]() -> std::optional<JobSpec> {
            std::lock_guard<std::mutex> g(mu_);
            if (source_.empty()) return std::nullopt;
            JobSpec j = source_.front();
            source_.pop_front();
            return j;
          },
          [this](const JobSpec& j, const ExecResult& r) {
            std::lock_guard<std::mutex> g(mu_);
            done_.emplace_back(j, r);
          });
      finished_ = true;
    });
  }
  // Stops (if still running) and joins; returns run()'s value.
  bool stop() {
    if (thread_.joinable()) {
      broker_->request_stop();
      thread_.join();
    }
    return completed_;
  }
  bool wait_finished(int timeout_ms) {
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!finished_ && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (finished_ && thread_.joinable()) thread_.join();
    return finished_;
  }
  std::vector<std::pair<JobSpec, ExecResult>> done() {
    std::lock_guard<std::mutex> g(mu_);
    return done_;
  }
  std::string log() {
    std::lock_guard<std::mutex> g(mu_);
    return log_;
  }
  FleetBroker& broker() { return *broker_; }
  pipeline::Store& store() { return *store_; }
  std::string ep() const { return broker_->endpoint(); }
  void destroy_broker() {
    stop();
    broker_.reset();
  }

  zmq::context_t ctx;

 private:
  std::string dir_;
  std::unique_ptr<pipeline::Store> store_;
  std::unique_ptr<FleetBroker> broker_;
  std::thread thread_;
  std::mutex mu_;
  std::deque<JobSpec> source_;
  std::vector<std::pair<JobSpec, ExecResult>> done_;
  std::string log_;
  std::atomic<bool> finished_{false};
  bool completed_ = false;
};

// Receives `n` JOB messages, skipping acknowledgements (failing the test
// on anything else).
std::vector<JobSpec> take_jobs(FakeWorker& w, size_t n, int timeout_ms = 2000) {
  std::vector<JobSpec> out;
  const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (out.size() < n && Clock::now() < until) {
    auto m = w.next(timeout_ms);
    if (!m) break;
    if (m->type == FleetType::kJob) out.push_back(m->job);
    else if (m->type != FleetType::kResultAck) ADD_FAILURE() << "expected JOB, got " << pipeline::fleet_type_name(m->type) << " " << m->reason;
  }
  EXPECT_EQ(out.size(), n);
  return out;
}

bool gets_no_job(FakeWorker& w, int ms) {
  auto m = w.next(ms);
  return !m || m->type != FleetType::kJob;
}

// The next message other than a RESULT_ACK within `ms` (acknowledgements
// follow their group commit, up to 5 ms after the result).
std::optional<pipeline::FleetMessage> next_not_ack(FakeWorker& w, int ms) {
  const auto until = Clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    auto m = w.next(static_cast<int>(left));
    if (!m || m->type != FleetType::kResultAck) return m;
  }
}

}  // namespace

TEST(FleetBroker, RefusesNonLoopbackBindWithoutKeysUnlessInsecure) {
  EXPECT_TRUE(coordinator::is_loopback_endpoint("tcp://127.0.0.1:5555"));
  EXPECT_TRUE(coordinator::is_loopback_endpoint("tcp://localhost:5555"));
  EXPECT_TRUE(coordinator::is_loopback_endpoint("tcp://[::1]:5555"));
  EXPECT_TRUE(coordinator::is_loopback_endpoint("ipc:///tmp/x"));
  EXPECT_FALSE(coordinator::is_loopback_endpoint("tcp://0.0.0.0:5555"));
  EXPECT_FALSE(coordinator::is_loopback_endpoint("tcp://*:5555"));
  EXPECT_FALSE(coordinator::is_loopback_endpoint("tcp://10.1.2.3:5555"));
  auto store = pipeline::Store::open(fresh_dir("bind") + "/db");
  BrokerOptions o;
  o.bind = "tcp://0.0.0.0:" + std::to_string(free_port());
  try {
    FleetBroker b(*store, kRun, o);
    FAIL() << "bound " << o.bind << " without keys";
  } catch (const pipeline::PipelineError& e) {
    EXPECT_NE(std::string(e.what()).find("--insecure"), std::string::npos) << e.what();
  }
  o.insecure = true;
  EXPECT_NO_THROW(FleetBroker(*store, kRun, o));
}

TEST(FleetBroker, DispatchHonoursCreditsAndMatchesExecutorAndTarget) {
  Harness h("credits", {}, {job(0, Executor::kNss), job(1, Executor::kNss), job(2, Executor::kNss),
                            job(0, Executor::kHost), job(1, Executor::kHost)});
  h.start();
  FakeWorker a(h.ctx, h.ep()), b(h.ctx, h.ep()), c(h.ctx, h.ep());
  c.ready("c", "astra", {Executor::kNss, Executor::kCss, Executor::kHost}, 5);
  a.ready("a", "sim", {Executor::kNss}, 2);
  b.ready("b", "sim", {Executor::kHost}, 1);
  auto ja = take_jobs(a, 2);
  for (auto& j : ja) EXPECT_EQ(j.executor, Executor::kNss);
  auto jb = take_jobs(b, 1);
  ASSERT_EQ(jb.size(), 1u) << h.log();
  EXPECT_EQ(jb[0].executor, Executor::kHost);
  EXPECT_TRUE(gets_no_job(a, 300)) << "a holds 2 of capacity 2";
  EXPECT_TRUE(gets_no_job(b, 100)) << "b holds 1 of capacity 1";
  EXPECT_TRUE(gets_no_job(c, 100)) << "c serves another target";
  ASSERT_EQ(ja.size(), 2u);
  // A result frees a credit at once (the third nss job) and is acknowledged
  // once committed: both come, in either order.
  a.result(ja[0].id, Executor::kNss);
  std::optional<JobSpec> j3;
  std::string acked;
  for (int k = 0; k < 2; ++k) {
    auto m = a.next(2000);
    ASSERT_TRUE(m) << h.log();
    if (m->type == FleetType::kResultAck) acked = m->job_id;
    else if (m->type == FleetType::kJob) j3 = m->job;
  }
  EXPECT_EQ(acked, ja[0].id);
  ASSERT_TRUE(j3);
  EXPECT_EQ(j3->executor, Executor::kNss);
  a.result(ja[1].id, Executor::kNss);
  a.result(j3->id, Executor::kNss);
  b.result(jb[0].id, Executor::kHost);
  auto jb2 = take_jobs(b, 1);
  b.result(jb2.at(0).id, Executor::kHost);
  ASSERT_TRUE(h.wait_finished(5000));
  EXPECT_EQ(h.done().size(), 5u);
  EXPECT_EQ(h.broker().stats().dispatched, 5u);
  auto states = h.store().jobs(kRun);
  EXPECT_EQ(states.size(), 5u);
  for (auto& [id, st] : states) EXPECT_EQ(st.state, 'D') << id;
}

// MODEL_HINT (protocol 4): each model of the queued jobs is named once to a
// Good worker of its target as it registers (jobs queued before it came),
// and to none of another target.
TEST(FleetBroker, ModelHintsNameEachQueuedModelOnceToTheWorkersOfItsTarget) {
  const std::string other = pipeline::sha256_hex("another model");
  std::vector<JobSpec> jobs = {job(0, Executor::kNss), job(1, Executor::kNss), job(2, Executor::kHost)};
  JobSpec j = job(3, Executor::kNss);
  j.model_hash = other;
  j.id = other.substr(0, 16) + "/3/nss";
  jobs.push_back(j);
  Harness h("hints", {}, jobs);
  h.start();
  FakeWorker a(h.ctx, h.ep()), c(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kNss, Executor::kHost}, 4);
  c.ready("c", "astra", {Executor::kNss, Executor::kHost}, 4);
  auto got = take_jobs(a, 4);
  ASSERT_EQ(got.size(), 4u) << h.log();
  EXPECT_TRUE(gets_no_job(c, 200));
  std::vector<std::string> want = {kHash, other};
  std::vector<std::string> hints = a.hints();
  std::sort(want.begin(), want.end());
  std::sort(hints.begin(), hints.end());
  EXPECT_EQ(hints, want);
  EXPECT_TRUE(c.hints().empty()) << c.hints().size() << " hints to a worker of another target";
  for (const auto& g : got) a.result(g.id, g.executor);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  EXPECT_EQ(a.hints().size(), 2u) << "a model named twice";
}

// A draining worker (capacity 0) would fetch a model it will not run: it is
// named no model, neither as jobs are queued nor as it registers; once it
// takes jobs again, it is named the queued ones.
TEST(FleetBroker, ADrainingWorkerIsNamedNoModelUntilItTakesJobsAgain) {
  const std::string other = pipeline::sha256_hex("another model");
  std::vector<JobSpec> jobs = {job(0, Executor::kNss), job(1, Executor::kNss)};
  jobs[1].model_hash = other;
  jobs[1].id = other.substr(0, 16) + "/1/nss";
  Harness h("hints-drain", {}, jobs);
  h.start();
  FakeWorker d(h.ctx, h.ep());
  d.ready("d", "sim", {Executor::kNss}, 0);
  EXPECT_TRUE(gets_no_job(d, 400));
  EXPECT_TRUE(d.hints().empty()) << d.hints().size() << " models named to a draining worker";
  d.ready("d", "sim", {Executor::kNss}, 2);
  auto got = take_jobs(d, 2);
  ASSERT_EQ(got.size(), 2u) << h.log();
  std::vector<std::string> want = {kHash, other}, hints = d.hints();
  std::sort(want.begin(), want.end());
  std::sort(hints.begin(), hints.end());
  EXPECT_EQ(hints, want) << "the queued models, once each, when it takes jobs again";
  for (const auto& g : got) d.result(g.id, g.executor);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
}

// A worker with capacity 1 and prefetch 1 holds two leases; the second waits
// in its queue behind the first, and that wait must not count as an overrun
// of its own timeout (600 ms + 200 ms slack here: it is answered at ~1000 ms).
TEST(FleetBroker, PrefetchingWorkerHoldsCapacityPlusPrefetchAndQueuedLeasesDoNotExpire) {
  BrokerOptions o;
  // Deadlines: 1200 + 400 ms without the prefetch allowance, 2800 ms with it.
  o.lease_slack_ms = 400;
  std::vector<JobSpec> jobs{job(0, Executor::kNss), job(1, Executor::kNss), job(2, Executor::kNss)};
  for (auto& j : jobs) j.timeout_ms = 1200;
  Harness h("prefetch", o, jobs);
  h.start();
  FakeWorker a(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kNss}, 1, {}, 1);
  auto held = take_jobs(a, 2);
  ASSERT_EQ(held.size(), 2u) << h.log();
  EXPECT_TRUE(gets_no_job(a, 1000)) << "a holds 1 + 1 prefetched";
  a.result(held[0].id, Executor::kNss);  // at ~1000 ms; the queued job starts now
  auto third = take_jobs(a, 1);
  ASSERT_EQ(third.size(), 1u) << h.log();
  auto quiet = next_not_ack(a, 1000);  // ~2000 ms after its lease: past 1200 + 400
  EXPECT_FALSE(quiet) << "got " << pipeline::fleet_type_name(quiet->type) << "\n" << h.log();
  a.result(held[1].id, Executor::kNss);
  a.result(third[0].id, Executor::kNss);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  EXPECT_EQ(h.done().size(), 3u);
  EXPECT_EQ(h.broker().stats().workers_expired, 0u);
  EXPECT_EQ(h.broker().stats().dispatched, 3u) << "no job was leased twice";
  EXPECT_EQ(h.log().find("overran"), std::string::npos) << h.log();
}

// Issue 30: a peer announcing prefetch 4096 took all 195 jobs and stalled
// the run. Prefetch is bounded: at most 4 per unit of capacity, and no more
// than the worker's share of the work in hand.
TEST(FleetBroker, APeerAnnouncingAHugePrefetchHoldsABoundedShare) {
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 10; ++i) jobs.push_back(job(i, Executor::kCss));
  Harness h("prefetch-bound", {}, jobs);
  h.start();
  FakeWorker a(h.ctx, h.ep()), b(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kCss}, 1, {}, 4096);
  auto held = take_jobs(a, 5);
  ASSERT_EQ(held.size(), 5u) << h.log();
  EXPECT_TRUE(gets_no_job(a, 500)) << "capacity 1 + prefetch bounded to 4";
  b.ready("b", "sim", {Executor::kCss}, 1);
  auto got = take_jobs(b, 1);
  ASSERT_EQ(got.size(), 1u) << "the rest of the queue is left to others: " << h.log();
}

// Issue 30: a worker that takes jobs and never answers, re-registering when
// dropped, turned their ops into error/crash ("running on 3 workers that
// died") although it is one identity. A job's attempts count distinct
// workers; a worker whose leases keep overrunning is quarantined (no jobs
// for the rest of the run), and the job ends elsewhere.
TEST(FleetBroker, AWorkerWhoseLeasesKeepOverrunningIsQuarantined) {
  BrokerOptions o;
  o.lease_slack_ms = 100;
  o.max_attempts = 2;
  JobSpec j0 = job(0, Executor::kCss);
  j0.timeout_ms = 300;
  Harness h("quarantine", o, {j0});
  h.start();
  FakeWorker a(h.ctx, h.ep()), b(h.ctx, h.ep());
  for (int round = 0; round < 2; ++round) {
    a.ready("a", "sim", {Executor::kCss}, 1);
    auto taken = take_jobs(a, 1, 3000);
    ASSERT_EQ(taken.size(), 1u) << round << "\n" << h.log();
    std::optional<pipeline::FleetMessage> m;
    while ((m = a.next(3000)) && m->type != FleetType::kDisconnect) {
    }
    ASSERT_TRUE(m) << "a was not dropped after its lease overran\n" << h.log();
  }
  a.ready("a", "sim", {Executor::kCss}, 1);
  EXPECT_TRUE(gets_no_job(a, 800)) << h.log();
  b.ready("b", "sim", {Executor::kCss}, 1);
  auto taken = take_jobs(b, 1, 3000);
  ASSERT_EQ(taken.size(), 1u) << h.log();
  b.result(taken[0].id, Executor::kCss);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  ASSERT_EQ(h.done().size(), 1u);
  EXPECT_EQ(h.done()[0].second.status, Status::kSuccess) << "two overruns of one worker are one failure";
  EXPECT_EQ(h.broker().stats().quarantined, std::vector<std::string>{"a"});
  EXPECT_NE(h.log().find("worker a quarantined"), std::string::npos) << h.log();
  EXPECT_NE(h.log().find("registered again but is quarantined"), std::string::npos) << h.log();
}

// Issue 30: a lease expires at the job's own timeout. A prefetching
// worker's lease allows for the wait in its queue only until the worker
// says the job started; from STARTED it has the job's timeout plus the
// slack. A STARTED from a worker that does not hold the job changes nothing.
TEST(FleetBroker, ALeaseRunsForTheJobsOwnTimeoutFromItsStarted) {
  BrokerOptions o;
  o.lease_slack_ms = 200;
  // Deadlines at the lease: 1000 + 200 + 2 × 1000 (two jobs may wait ahead
  // in the queue) = 3200 ms.
  std::vector<JobSpec> jobs{job(0, Executor::kNss), job(1, Executor::kNss), job(2, Executor::kNss)};
  for (auto& j : jobs) j.timeout_ms = 1000;
  Harness h("started", o, jobs);
  h.start();
  FakeWorker a(h.ctx, h.ep()), b(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kNss}, 1, {}, 2);
  auto held = take_jobs(a, 3);
  ASSERT_EQ(held.size(), 3u) << h.log();
  b.ready("b", "sim", {Executor::kCss}, 1);
  b.started(held[1].id);  // not b's: ignored
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = Clock::now();
  a.started(held[0].id);  // and then never answers
  std::optional<pipeline::FleetMessage> m;
  while ((m = a.next(5000)) && m->type != FleetType::kDisconnect) {
  }
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  ASSERT_TRUE(m) << "a's started lease never expired\n" << h.log();
  EXPECT_GE(waited, 1100) << "expired before the job's timeout + slack from STARTED";
  EXPECT_LT(waited, 2200) << "expired at the queue allowance (3200 ms from the lease), not at STARTED + 1200 ms";
  EXPECT_NE(h.log().find("job " + held[0].id + " overran its timeout"), std::string::npos) << h.log();
  EXPECT_EQ(h.broker().stats().started, 1u);
  EXPECT_EQ(h.broker().stats().stray_started, 1u);
}

// Issue 30: leases are stored with their holder. After a coordinator
// restart, a peer cannot claim another worker's lease by listing it as
// running, nor return its result; the holder can do both.
TEST(FleetBroker, AfterARestartOnlyTheStoredHolderClaimsOrAnswersALease) {
  const std::vector<JobSpec> jobs = {job(0, Executor::kNss), job(1, Executor::kNss)};
  std::vector<JobSpec> got;
  {
    BrokerOptions o;
    o.grace_ms = 0;
    Harness h("holder-restart", o, jobs);
    h.start();
    FakeWorker a(h.ctx, h.ep());
    a.ready("a", "sim", {Executor::kNss}, 2);
    got = take_jobs(a, 2);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_FALSE(h.stop());
    for (auto& [id, st] : h.store().jobs(kRun)) EXPECT_EQ(st.holder, "a") << id;
  }
  BrokerOptions o2;
  o2.liveness = 30;
  o2.recovered_hold_ms = 1500;
  Harness h("holder-restart", o2, jobs, false);
  h.start();
  FakeWorker a2(h.ctx, h.ep()), x(h.ctx, h.ep());
  x.ready("x", "sim", {Executor::kCss}, 1, {got[0].id, got[1].id});  // claims a's leases
  x.result(got[0].id, Executor::kNss, Status::kError);
  auto ack = x.next(2000);
  ASSERT_TRUE(ack && ack->type == FleetType::kResultAck) << h.log();
  EXPECT_EQ(h.broker().stats().foreign_results, 1u) << h.log();
  EXPECT_NE(h.log().find("(held by a): dropped"), std::string::npos) << h.log();
  a2.ready("a", "sim", {Executor::kNss}, 2, {got[0].id, got[1].id});
  EXPECT_TRUE(gets_no_job(a2, 300)) << "a runs both already";
  a2.result(got[0].id, Executor::kNss);
  a2.result(got[1].id, Executor::kNss, Status::kDifference);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  ASSERT_EQ(h.done().size(), 2u);
  for (const auto& [spec, r] : h.done()) EXPECT_NE(r.status, Status::kError) << spec.id << ": x's result was taken";
  EXPECT_EQ(h.broker().stats().dispatched, 0u) << "no job was leased again";
  EXPECT_NE(h.log().find("resumed 2 running jobs"), std::string::npos) << h.log();
}

// Issue 30: a worker id is a name the peer gives itself. Under CURVE it
// belongs to the key that first registered it: another key cannot take it
// (and with it the leases and late results of that worker), a connection
// cannot rename itself, and a dropped foreign result is logged with the
// sender's CURVE key.
TEST(FleetBroker, UnderCurveAWorkerIdBelongsToItsKeyAndForeignResultsNameTheKey) {
  char server_pub[41], server_sec[41], a_pub[41], a_sec[41], b_pub[41], b_sec[41];
  ASSERT_EQ(zmq_curve_keypair(server_pub, server_sec), 0);
  ASSERT_EQ(zmq_curve_keypair(a_pub, a_sec), 0);
  ASSERT_EQ(zmq_curve_keypair(b_pub, b_sec), 0);
  BrokerOptions o;
  o.curve_secret_key = server_sec;
  o.allowed_client_keys = {a_pub, b_pub};
  Harness h("curve-ids", o, {job(0, Executor::kHost)});
  h.start();
  FakeWorker a(h.ctx, h.ep(), {server_pub, a_pub, a_sec}), b(h.ctx, h.ep(), {server_pub, b_pub, b_sec});
  a.ready("w1", "sim", {Executor::kHost}, 1);
  auto got = take_jobs(a, 1);
  ASSERT_EQ(got.size(), 1u) << h.log();
  b.ready("w1", "sim", {Executor::kHost}, 1);  // a's name with b's key
  auto m = b.next(2000);
  ASSERT_TRUE(m && m->type == FleetType::kDisconnect) << h.log();
  EXPECT_NE(m->reason.find("worker id w1 is registered with another CURVE key"), std::string::npos) << m->reason;
  while (b.next(300, false)) {
  }  // (the heartbeats it sent meanwhile were answered "not registered")
  b.ready("w2", "sim", {Executor::kCss}, 1);
  b.result(got[0].id, Executor::kHost);  // a's job
  b.ready("w1", "sim", {Executor::kCss}, 1);  // renaming its connection
  std::string reasons;
  for (auto x = b.next(2000); x; x = b.next(2000))
    if (x->type == FleetType::kDisconnect) {
      reasons += x->reason + "\n";
      if (x->reason.find("changes this connection's worker id from w2 to w1") != std::string::npos) break;
    }
  EXPECT_NE(reasons.find("changes this connection's worker id from w2 to w1"), std::string::npos) << reasons << h.log();
  EXPECT_NE(h.log().find("from worker w2 (connection "), std::string::npos) << h.log();
  EXPECT_NE(h.log().find(std::string("CURVE key ") + b_pub + "), which does not hold it (held by w1): dropped"),
            std::string::npos)
      << h.log();
  a.result(got[0].id, Executor::kHost, Status::kDifference);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  ASSERT_EQ(h.done().size(), 1u);
  EXPECT_EQ(h.done()[0].second.status, Status::kDifference) << "only a's result counts";
  EXPECT_EQ(h.broker().stats().foreign_results, 1u);
}

// A draining worker (capacity 0) gets nothing, prefetch or not.
TEST(FleetBroker, DrainingWorkerGetsNoPrefetchedJob) {
  Harness h("prefetch-drain", {}, {job(0, Executor::kCss)});
  h.start();
  FakeWorker a(h.ctx, h.ep()), b(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kCss}, 0, {}, 3);
  EXPECT_TRUE(gets_no_job(a, 300));
  b.ready("b", "sim", {Executor::kCss}, 1);
  auto j = take_jobs(b, 1);
  ASSERT_EQ(j.size(), 1u);
  b.result(j[0].id, Executor::kCss);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
}

TEST(FleetBroker, SilentWorkersJobIsRequeuedAndEndsAsCrashAfterMaxAttempts) {
  BrokerOptions o;
  o.max_attempts = 2;
  o.heartbeat_ms = 100;
  o.liveness = 8;  // b must register before a's 800 ms of silence end
  Harness h("silent", o, {job(0, Executor::kCss), job(1, Executor::kCss)});
  h.start();
  FakeWorker a(h.ctx, h.ep()), b(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kCss}, 1);
  auto first = take_jobs(a, 1);
  ASSERT_EQ(first.size(), 1u);
  b.ready("b", "sim", {Executor::kCss}, 1);
  auto other = take_jobs(b, 1);
  ASSERT_EQ(other.size(), 1u);
  b.result(other[0].id, Executor::kCss);
  // a goes silent: after 8 heartbeats its job moves to b, which dies too.
  auto again = take_jobs(b, 1, 3000);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].id, first[0].id);
  auto bye = a.next(500, false);
  ASSERT_TRUE(bye);
  EXPECT_EQ(bye->type, FleetType::kDisconnect);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  auto done = h.done();
  ASSERT_EQ(done.size(), 2u);
  const ExecResult& crash = done[1].first.id == first[0].id ? done[1].second : done[0].second;
  EXPECT_EQ(crash.status, Status::kError);
  EXPECT_EQ(crash.error_class, "crash");
  EXPECT_EQ(crash.attempts, 2u);
  EXPECT_EQ(h.broker().stats().crashed, 1u);
  EXPECT_EQ(h.broker().stats().workers_expired, 2u);
  // The crash is committed like any result.
  auto stored = h.store().layer_results(kRun, kHash, static_cast<int>(first[0].first_node));
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].error_class, "crash");
}

// A lease given back unrun ("declined": it reached a device that was not
// Good) and one lost to the infrastructure go back to the queue; neither is
// an attempt, and the summary counts them apart.
TEST(FleetBroker, DeclinedAndInfrastructureLostLeasesAreRequeuedWithoutAnAttempt) {
  Harness h("declined", {}, {job(0, Executor::kCss)});
  h.start();
  FakeWorker a(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kCss}, 1);
  for (const char* cls : {pipeline::kDeclinedClass, pipeline::kInfrastructureClass}) {
    auto j = take_jobs(a, 1);
    ASSERT_EQ(j.size(), 1u) << cls;
    ExecResult r;
    r.job_id = j[0].id;
    r.executor = Executor::kCss;
    r.status = Status::kError;
    r.error_class = cls;
    r.error_message = "worker a is Unknown";
    a.send(pipeline::encode_result_message(r));
  }
  auto j = take_jobs(a, 1);
  ASSERT_EQ(j.size(), 1u);
  a.result(j[0].id, Executor::kCss);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  auto done = h.done();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].second.status, Status::kSuccess);
  EXPECT_EQ(done[0].second.attempts, 1u);
  EXPECT_EQ(h.broker().stats().declined, 1u);
  EXPECT_EQ(h.broker().stats().infra_requeued, 1u);
  EXPECT_EQ(h.broker().stats().requeued, 0u);
  EXPECT_NE(h.log().find("declined by worker a (worker a is Unknown); requeued"), std::string::npos) << h.log();
}

// Results are committed on the commit writer's thread while the broker
// goes on receiving: with hundreds of results arriving in bursts (several
// batches in turn), each acknowledgement must still come only once its
// result is in the store and reported, every job exactly once, and
// duplicates of results in a batch still being written are acknowledged
// only after it.
TEST(FleetBroker, EveryAcknowledgedResultIsInTheStoreAndReportedWhenItsAckArrives) {
  constexpr int kJobs = 600;
  std::vector<JobSpec> jobs;
  for (int l = 0; l < kJobs; ++l) jobs.push_back(job(l, Executor::kHost));
  Harness h("acks", {}, jobs);
  h.start();
  FakeWorker a(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kHost}, kJobs);
  auto got = take_jobs(a, kJobs);
  ASSERT_EQ(got.size(), static_cast<size_t>(kJobs)) << h.log();
  std::map<std::string, int> layer_of, acks;
  for (const auto& j : got) layer_of[j.id] = static_cast<int>(j.first_node);
  auto check_ack = [&](const pipeline::FleetMessage& m) {
    ASSERT_EQ(m.type, FleetType::kResultAck) << pipeline::fleet_type_name(m.type);
    ASSERT_TRUE(layer_of.count(m.job_id)) << m.job_id;
    ++acks[m.job_id];
    const auto stored = h.store().layer_results(kRun, kHash, layer_of[m.job_id]);
    ASSERT_EQ(stored.size(), 1u) << m.job_id << " acknowledged before its result was stored";
    bool reported = false;
    for (const auto& [j, r] : h.done()) reported |= j.id == m.job_id;
    EXPECT_TRUE(reported) << m.job_id << " acknowledged before it was reported";
  };
  for (int burst = 0; burst < 6; ++burst) {
    for (int k = burst * 100; k < (burst + 1) * 100; ++k) a.result(got[k].id, Executor::kHost);
    a.result(got[burst * 100].id, Executor::kHost, Status::kDifference);  // a duplicate, maybe mid-commit
    for (int k = 0; k < 101; ++k) {
      auto m = a.next(5000);
      ASSERT_TRUE(m) << "burst " << burst << ": " << k << " of 101 acknowledgements\n" << h.log();
      check_ack(*m);
    }
  }
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  EXPECT_EQ(acks.size(), static_cast<size_t>(kJobs));
  for (int burst = 0; burst < 6; ++burst) EXPECT_EQ(acks[got[burst * 100].id], 2) << burst;
  EXPECT_EQ(h.done().size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(h.broker().stats().duplicates, 6u);
  for (int l = 0; l < kJobs; ++l) {
    const auto stored = h.store().layer_results(kRun, kHash, l);
    ASSERT_EQ(stored.size(), 1u) << l;
    EXPECT_EQ(stored[0].status, Status::kSuccess) << "layer " << l << ": the first result wins";
  }
}

TEST(FleetBroker, LateAndDuplicateResultsAreAcknowledgedAndDropped) {
  Harness h("dup", {}, {job(0, Executor::kHost), job(1, Executor::kHost)});
  h.start();
  FakeWorker a(h.ctx, h.ep()), b(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kHost}, 1);
  auto j = take_jobs(a, 1);
  ASSERT_EQ(j.size(), 1u);
  a.result(j[0].id, Executor::kHost, Status::kSuccess);
  int acks = 0;
  std::optional<JobSpec> second;
  for (int i = 0; i < 4 && (acks < 1 || !second); ++i) {
    auto m = a.next(2000);
    ASSERT_TRUE(m);
    if (m->type == FleetType::kResultAck) ++acks;
    if (m->type == FleetType::kJob) second = m->job;
  }
  EXPECT_EQ(acks, 1);
  a.result(j[0].id, Executor::kHost, Status::kDifference);  // duplicate
  auto am = a.next(2000);
  ASSERT_TRUE(am && am->type == FleetType::kResultAck);
  b.ready("b", "sim", {Executor::kCss}, 1);
  b.result(j[0].id, Executor::kHost, Status::kError);  // late, from another worker
  auto bm = b.next(2000);
  ASSERT_TRUE(bm && bm->type == FleetType::kResultAck);
  ASSERT_TRUE(second);
  a.result(second->id, Executor::kHost);
  ASSERT_TRUE(h.wait_finished(5000));
  auto done = h.done();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].second.status, Status::kSuccess) << "the first result wins";
  EXPECT_EQ(h.broker().stats().duplicates, 2u);
  auto stored = h.store().layer_results(kRun, kHash, 0);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].status, Status::kSuccess);
}

// Issue 32: a million-job run kept every job it had served. A job leaves
// the broker once its result is committed: with at most 20 queued and 5
// leased, 600 jobs never hold more than those and the 5 whose commit is
// pending; a late duplicate of a retired job is still told from a
// stranger's, and a job the source asks for again once retired is
// answered from the store, not run again.
TEST(FleetBroker, CommittedJobsLeaveTheTableAndAreStillKnown) {
  constexpr int kJobs = 600;
  std::vector<JobSpec> jobs;
  for (int l = 0; l < kJobs; ++l) jobs.push_back(job(l, Executor::kHost));
  jobs.push_back(job(0, Executor::kHost));  // asked again at the end (a bisection does)
  BrokerOptions o;
  o.max_queued = 20;
  Harness h("bounded", o, jobs);
  h.start();
  FakeWorker a(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kHost}, 5);
  std::string first;
  size_t answered = 0;
  std::vector<JobSpec> pending;
  // The worker answers its 5 jobs, then waits for their acknowledgements
  // (their commit) before the next 5: at most 5 wait for a commit.
  while (answered < static_cast<size_t>(kJobs)) {
    while (pending.size() < 5 && answered + pending.size() < static_cast<size_t>(kJobs)) {
      auto m = a.next(3000);
      ASSERT_TRUE(m) << answered << " answered\n" << h.log();
      ASSERT_EQ(m->type, FleetType::kJob) << pipeline::fleet_type_name(m->type);
      pending.push_back(m->job);
    }
    for (const auto& j : pending) {
      if (first.empty()) first = j.id;
      a.result(j.id, Executor::kHost);
    }
    answered += pending.size();
    size_t acks = 0, batch = pending.size();
    pending.clear();
    while (acks < batch) {
      auto m = a.next(3000);
      ASSERT_TRUE(m) << acks << " of " << batch << " acknowledgements\n" << h.log();
      if (m->type == FleetType::kResultAck) ++acks;
      else if (m->type == FleetType::kJob) pending.push_back(m->job);
      else FAIL() << pipeline::fleet_type_name(m->type);
    }
    if (answered == 50) {  // a late duplicate of a job long committed: acknowledged at once
      a.result(first, Executor::kHost, Status::kError);
      for (;;) {
        auto m = a.next(3000);
        ASSERT_TRUE(m) << h.log();
        if (m->type == FleetType::kResultAck) break;
        pending.push_back(m->job);
      }
    }
  }
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  const auto& st = h.broker().stats();
  EXPECT_LE(st.table_peak, 30u) << "the table kept done jobs";  // 20 queued + 5 leased + 5 committing
  EXPECT_GE(st.table_peak, 20u);
  EXPECT_EQ(st.dispatched, static_cast<size_t>(kJobs)) << "job 0 asked again was run again";
  EXPECT_EQ(st.reported_from_store, 1u);
  const auto done = h.done();
  ASSERT_EQ(done.size(), static_cast<size_t>(kJobs) + 1);
  size_t reports_of_first = 0;
  for (const auto& [j, r] : done) {
    reports_of_first += j.id == first;
    EXPECT_EQ(r.status, Status::kSuccess) << j.id << ": the first result wins";
  }
  EXPECT_EQ(reports_of_first, 2u);
  for (int l = 0; l < kJobs; ++l) ASSERT_EQ(h.store().layer_results(kRun, kHash, l).size(), 1u) << l;
  // The late duplicate: counted as one, not logged as a result for an unknown job.
  EXPECT_EQ(st.duplicates, 1u);
  EXPECT_EQ(h.log().find("unknown job"), std::string::npos) << h.log();
}

// Issue 30: a registered peer sent RESULTs for jobs it was never given and
// all were stored. Only the lease holder's result counts: the others are
// acknowledged (so that the sender stops), dropped, counted and logged with
// the sender's registered id.
TEST(FleetBroker, AResultFromAWorkerThatDoesNotHoldTheLeaseIsDropped) {
  Harness h("foreign", {}, {job(0, Executor::kHost), job(1, Executor::kHost)});
  h.start();
  FakeWorker a(h.ctx, h.ep()), b(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kHost}, 1);
  auto j = take_jobs(a, 1);
  ASSERT_EQ(j.size(), 1u);
  b.ready("b", "sim", {Executor::kCss}, 1);  // gets no host job
  const std::string other = j[0].id == job(0, Executor::kHost).id ? job(1, Executor::kHost).id : job(0, Executor::kHost).id;
  b.result(j[0].id, Executor::kHost, Status::kError);  // leased to a
  b.result(other, Executor::kHost, Status::kError);    // leased to nobody
  int acks = 0;
  for (int i = 0; i < 4 && acks < 2; ++i) {
    auto m = b.next(2000);
    ASSERT_TRUE(m);
    if (m->type == FleetType::kResultAck) ++acks;
  }
  EXPECT_EQ(acks, 2);
  EXPECT_EQ(h.broker().stats().foreign_results, 2u);
  EXPECT_NE(h.log().find("result for job " + j[0].id + " from worker b"), std::string::npos) << h.log();
  EXPECT_NE(h.log().find("(held by a): dropped"), std::string::npos) << h.log();
  EXPECT_NE(h.log().find("(never leased): dropped"), std::string::npos) << h.log();
  a.result(j[0].id, Executor::kHost, Status::kSuccess);
  auto second = take_jobs(a, 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].id, other);
  a.result(other, Executor::kHost, Status::kDifference);
  ASSERT_TRUE(h.wait_finished(5000));
  for (const auto& [spec, r] : h.done()) {
    EXPECT_NE(r.status, Status::kError) << spec.id << ": b's result was taken";
    EXPECT_EQ(r.attempts, 1u) << spec.id;
  }
  EXPECT_EQ(h.done().size(), 2u);
}

TEST(FleetBroker, BadFramesDisconnectTheSenderAndEveryoneElseIsServed) {
  BrokerOptions o;
  o.max_inbound_bytes = 64 << 10;
  Harness h("bad", o, {job(0, Executor::kHost), job(1, Executor::kHost), job(2, Executor::kHost)});
  h.start();
  FakeWorker good(h.ctx, h.ep());
  good.ready("good", "sim", {Executor::kHost}, 1);
  auto gj = take_jobs(good, 1);
  ASSERT_EQ(gj.size(), 1u);

  auto envelope = [](uint16_t version, torq::schema::Message type) {
    flatbuffers::FlatBufferBuilder b;
    auto body = torq::schema::CreateHeartbeat(b).Union();
    torq::schema::EnvelopeBuilder eb(b);
    eb.add_version(version);
    eb.add_message_type(type);
    eb.add_message(body);
    torq::schema::FinishEnvelopeBuffer(b, eb.Finish());
    return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  };
  flatbuffers::FlatBufferBuilder fb;
  const std::string junk(64, '\x55');
  auto body = torq::schema::CreateResultMsg(fb, fb.CreateVector(reinterpret_cast<const uint8_t*>(junk.data()), junk.size()));
  torq::schema::EnvelopeBuilder eb(fb);
  eb.add_version(pipeline::kFleetProtocolVersion);
  eb.add_message_type(torq::schema::Message::ResultMsg);
  eb.add_message(body.Union());
  torq::schema::FinishEnvelopeBuffer(fb, eb.Finish());
  const std::string bad_nested(reinterpret_cast<const char*>(fb.GetBufferPointer()), fb.GetSize());
  const std::string ready = [] {
    pipeline::WorkerInfo w;
    w.worker_id = "x";
    w.executors = {Executor::kHost};
    return pipeline::encode_ready(w);
  }();
  const std::vector<std::vector<std::string>> attacks = {
      {std::string("\x01\x02random garbage\xff", 17)},
      {ready.substr(0, ready.size() / 2)},                           // truncated
      {std::string(100 << 10, 'A')},                                 // oversize
      {pipeline::encode_heartbeat(), pipeline::encode_heartbeat()},  // two frames
      {bad_nested},                                                  // valid envelope, bad FlatBuffer inside
      {envelope(pipeline::kFleetProtocolVersion, static_cast<torq::schema::Message>(42))},  // unknown type
      {envelope(99, torq::schema::Message::Heartbeat)},              // other protocol version
      {pipeline::encode_job_message(pipeline::encode_job(job(5, Executor::kHost)))},  // wrong direction
  };
  FakeWorker evil(h.ctx, h.ep());
  for (const auto& frames : attacks) {
    evil.send_frames(frames);
    auto m = evil.next(2000, false);
    ASSERT_TRUE(m) << "no answer to attack " << frames[0].size();
    EXPECT_EQ(m->type, FleetType::kDisconnect);
  }
  EXPECT_EQ(h.broker().stats().bad_frames, attacks.size()) << h.log();

  // A registered worker that misbehaves loses its lease to the others.
  FakeWorker rogue(h.ctx, h.ep());
  rogue.ready("rogue", "sim", {Executor::kHost}, 1);
  auto rj = take_jobs(rogue, 1);
  ASSERT_EQ(rj.size(), 1u);
  rogue.send("not a flatbuffer");
  good.result(gj[0].id, Executor::kHost);
  std::vector<JobSpec> rest;
  while (rest.size() < 2) {
    auto m = good.next(3000);
    ASSERT_TRUE(m) << h.log();
    if (m->type != FleetType::kJob) continue;
    rest.push_back(m->job);
    good.result(m->job.id, Executor::kHost);
  }
  EXPECT_TRUE(rest[0].id == rj[0].id || rest[1].id == rj[0].id) << "the rogue's job was requeued";
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  EXPECT_EQ(h.done().size(), 3u);
  EXPECT_NE(h.log().find("bad frame from worker rogue"), std::string::npos) << h.log();
}

TEST(FleetBroker, RestartKeepsDoneJobsAndRequeuesLeasedOnes) {
  const std::vector<JobSpec> jobs = {job(0, Executor::kNss), job(1, Executor::kNss), job(2, Executor::kNss)};
  std::string first_id;
  {
    BrokerOptions o;
    o.grace_ms = 0;
    Harness h("restart", o, jobs);
    h.start();
    FakeWorker a(h.ctx, h.ep());
    a.ready("a", "sim", {Executor::kNss}, 3);
    auto got = take_jobs(a, 3);
    ASSERT_EQ(got.size(), 3u);
    first_id = got[0].id;
    a.result(first_id, Executor::kNss, Status::kDifference);
    auto ack = a.next(2000);
    ASSERT_TRUE(ack && ack->type == FleetType::kResultAck);
    EXPECT_FALSE(h.stop()) << "stopped before the end";
    auto states = h.store().jobs(kRun);
    ASSERT_EQ(states.size(), 3u);
    for (auto& [id, st] : states) EXPECT_EQ(st.state, id == first_id ? 'D' : 'L') << id;
  }
  // A new broker on the same store: the done job is reported from the store,
  // the leased ones run again (one kept by the worker that reconnects).
  // a2 is silent while the test waits on b: 3 s of liveness, and the
  // recovered leases are released to others after 300 ms.
  BrokerOptions o2;
  o2.liveness = 30;
  o2.recovered_hold_ms = 300;
  Harness h("restart", o2, jobs, false);
  EXPECT_EQ(h.broker().stats().recovered, 2u);
  h.start();
  std::string kept = first_id == jobs[1].id ? jobs[2].id : jobs[1].id;
  FakeWorker a2(h.ctx, h.ep()), b(h.ctx, h.ep());
  a2.ready("a", "sim", {Executor::kNss}, 1, {kept});
  EXPECT_TRUE(gets_no_job(a2, 200)) << "a2 already runs its job";
  b.ready("b", "sim", {Executor::kNss}, 3);
  auto bj = take_jobs(b, 1);
  ASSERT_EQ(bj.size(), 1u);
  EXPECT_NE(bj[0].id, kept);
  EXPECT_NE(bj[0].id, first_id);
  EXPECT_TRUE(gets_no_job(a2, 200)) << "a2 already runs its job";
  a2.result(kept, Executor::kNss);
  b.result(bj[0].id, Executor::kNss);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  auto done = h.done();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(h.broker().stats().reported_from_store, 1u);
  EXPECT_EQ(h.broker().stats().dispatched, 1u);
  for (auto& [j, r] : done) {
    if (j.id == first_id) {
      EXPECT_EQ(r.status, Status::kDifference);
    }
  }
}

// Issue 30: after a full disk, a resume kept 2,112 stored error/fetch
// results as the ops' own. A job whose stored result is an infrastructure
// error (here the `fetch` an older build stored) runs again on resume; a
// real result is reported from the store.
TEST(FleetBroker, AResumeRunsAgainAJobWhoseStoredResultIsAnInfrastructureError) {
  const std::vector<JobSpec> jobs = {job(0, Executor::kNss), job(1, Executor::kNss)};
  {
    Harness h("infra-resume", {}, jobs);
    std::vector<pipeline::Store::KeyedCommit> commits;
    for (const JobSpec& j : jobs) {
      ExecResult r;
      r.job_id = j.id;
      r.executor = j.executor;
      r.tolerance_used = j.tolerance;
      r.status = j.first_node == 0 ? Status::kError : Status::kSuccess;
      if (j.first_node == 0) {
        r.error_class = "fetch";
        r.error_message = "cannot write the model cache";
      }
      commits.push_back({pipeline::result_key_of(j), {static_cast<int>(j.first_node), r, j.id, pipeline::encode_job(j)}});
    }
    h.store().commit_results(kRun, commits);
  }
  Harness h("infra-resume", {}, jobs, false);
  h.start();
  FakeWorker a(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kNss}, 2);
  auto got = take_jobs(a, 1);
  ASSERT_EQ(got.size(), 1u) << h.log();
  EXPECT_EQ(got[0].id, jobs[0].id);
  EXPECT_TRUE(gets_no_job(a, 300)) << "the stored success is not run again";
  a.result(jobs[0].id, Executor::kNss, Status::kSuccess);
  ASSERT_TRUE(h.wait_finished(5000)) << h.log();
  ASSERT_EQ(h.done().size(), 2u);
  for (const auto& [j, r] : h.done()) EXPECT_EQ(r.status, Status::kSuccess) << j.id;
  EXPECT_EQ(h.broker().stats().reported_from_store, 1u);
  EXPECT_EQ(h.broker().stats().dispatched, 1u);
}

TEST(FleetBroker, BlobRequestsAreServedFromTheStore) {
  Harness h("blob", {}, {job(0, Executor::kHost)});
  h.start();
  FakeWorker a(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kHost}, 1);
  auto j = take_jobs(a, 1);
  a.send(pipeline::encode_blob_request(kHash));
  auto m = a.next(2000);
  ASSERT_TRUE(m && m->type == FleetType::kBlobReply);
  EXPECT_TRUE(m->blob_known);
  EXPECT_EQ(m->blob, "fake model bytes");
  EXPECT_EQ(m->blob_offset, 0u);
  EXPECT_EQ(m->blob_total, 16u);
  // In chunks, as workers fetch: offset and max_bytes; the last one is short.
  a.send(pipeline::encode_blob_request(kHash, 0, 5));
  a.send(pipeline::encode_blob_request(kHash, 15, 5));
  a.send(pipeline::encode_blob_request(kHash, 16, 5));
  for (const auto& [offset, bytes] : {std::pair<uint64_t, std::string>{0, "fake "}, {15, "s"}, {16, ""}}) {
    m = a.next(2000);
    ASSERT_TRUE(m && m->type == FleetType::kBlobReply);
    EXPECT_TRUE(m->blob_known);
    EXPECT_EQ(m->blob_offset, offset);
    EXPECT_EQ(m->blob_total, 16u);
    EXPECT_EQ(m->blob, bytes);
  }
  const std::string other = pipeline::sha256_hex("other");
  a.send(pipeline::encode_blob_request(other, 0, 1024));
  m = a.next(2000);
  ASSERT_TRUE(m && m->type == FleetType::kBlobReply);
  EXPECT_FALSE(m->blob_known);
  a.result(j.at(0).id, Executor::kHost);
  ASSERT_TRUE(h.wait_finished(5000));
}

TEST(FleetBroker, ABlobChunkPastTheEndIsAProtocolError) {
  Harness h("blob-past-end", {}, {job(0, Executor::kHost)});
  h.start();
  FakeWorker a(h.ctx, h.ep());
  a.ready("a", "sim", {Executor::kHost}, 1);
  take_jobs(a, 1);
  a.send(pipeline::encode_blob_request(kHash, 17, 5));
  auto m = a.next(2000);
  ASSERT_TRUE(m && m->type == FleetType::kDisconnect);
  EXPECT_EQ(m->reason, "protocol error: BLOB_REQUEST for offset 17 of model " + kHash + " (16 bytes)");
}
