// The fleet with real processes on loopback: torq-coordinator, torq-worker
// processes (each running jobs in `--stdio` children), a real RocksDB store
// and the demo model. Workers and coordinators are killed with SIGKILL
// mid-run; raw garbage is thrown at the coordinator's port.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "pipeline/wire/codec.h"
#include "pipeline/store/store.h"
#include "tests/fleet/fleet_harness.h"

using namespace torq;
using namespace torq::fleet_test;
using nlohmann::json;

namespace {

constexpr int kHeartbeatMs = 200;
// 1 s of silence is death both ways: kills are seen quickly, and a loop
// held up for half a second on a loaded CI machine is not a death.
constexpr const char* kLiveness = "5";

json read_json(const std::string& path) { return json::parse(slurp(path)); }

std::string demo_model(const std::string& dir) {
  const std::string path = dir + "/demo.onnx";
  Proc p({bin("torq-sim"), "demo", "--save", path}, dir + "/sim.log");
  EXPECT_EQ(p.wait(60000), 0) << p.output();
  return path;
}

// One coordinator and its workers in `dir`, on a free loopback port.
// Pids whose parent is `parent` (from /proc).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream st(e.path() / "stat");
    std::string line;
    if (!std::getline(st, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && state != 'Z') out.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return out;
}

struct Fleet {
  explicit Fleet(const std::string& name) : dir(fresh_dir(name)), ep(endpoint(free_port())) {}

  Proc coordinator(const std::string& model, const std::string& log, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {bin("torq-coordinator"), "--model", model, "--bind", ep, "--db", dir + "/db",
                                     "--export", dir + "/out", "--heartbeat-ms", std::to_string(kHeartbeatMs),
                                     "--liveness", kLiveness};
    args.insert(args.end(), extra.begin(), extra.end());
    return Proc(args, dir + "/" + log);
  }
  void add_worker(const std::vector<std::string>& env = {}, const std::vector<std::string>& extra = {}) {
    const std::string id = "w" + std::to_string(workers.size() + 1);
    std::vector<std::string> args{bin("torq-worker"), "--connect", ep, "--id", id, "--cache",
                                  dir + "/cache-" + id, "--capacity", "1", "--heartbeat-ms",
                                  std::to_string(kHeartbeatMs), "--liveness", kLiveness, "-v"};
    args.insert(args.end(), extra.begin(), extra.end());
    workers.emplace_back(args, dir + "/" + id + ".log", env);
  }
  // SIGTERM every worker; each must leave cleanly.
  void stop_workers() {
    for (auto& w : workers) w.signal(SIGTERM);
    for (auto& w : workers) {
      auto code = w.wait(20000);
      EXPECT_TRUE(code.has_value()) << "worker did not stop on SIGTERM";
      if (code && *code != 128 + SIGKILL) {
        EXPECT_EQ(*code, 0) << w.output();
      }
    }
  }
  std::string worker_logs() const {
    std::string all;
    for (const auto& w : workers) all += w.output();
    return all;
  }

  std::string dir, ep;
  std::vector<Proc> workers;
};

std::string run_id(const std::string& coordinator_output) {
  std::smatch m;
  if (std::regex_search(coordinator_output, m, std::regex("run ([0-9a-f]{16}):"))) return m[1];
  return "";
}

// Store contents of a run: job id -> state; and the model's results.
struct StoreView {
  std::map<std::string, char> states;
  std::map<int, std::vector<pipeline::ExecResult>> results;
};
StoreView read_store(const std::string& db, const std::string& run) {
  StoreView v;
  auto store = pipeline::Store::open(db);
  std::string hash;
  for (auto& [id, st] : store->jobs(run)) {
    v.states[id] = st.state;
    hash = pipeline::decode_job(st.encoded.data(), st.encoded.size()).model_hash;
  }
  if (!hash.empty()) v.results = store->model_results(run, hash);
  return v;
}

// A coordinator played by hand: a ROUTER that answers with heartbeats.
struct HandCoordinator {
  explicit HandCoordinator(std::string endpoint) : ep(std::move(endpoint)), router(ctx, zmq::socket_type::router) {
    router.set(zmq::sockopt::linger, 0);
    router.bind(ep);
  }
  // The next message other than HEARTBEAT within 60 s.
  std::optional<pipeline::FleetMessage> next() {
    const auto until = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < until) {
      zmq_pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(100));
      if (!(item.revents & ZMQ_POLLIN)) {
        if (!identity.empty()) send(pipeline::encode_heartbeat());
        continue;
      }
      zmq::message_t id, body;
      EXPECT_TRUE(router.recv(id, zmq::recv_flags::none));
      EXPECT_TRUE(router.recv(body, zmq::recv_flags::none));
      identity = id.to_string();
      auto m = pipeline::decode_fleet_message(body.data(), body.size());
      if (m.type != pipeline::FleetType::kHeartbeat) return m;
    }
    return std::nullopt;
  }
  // A JOB for the last worker heard (its model is never needed here).
  void lease(const std::string& job_id, pipeline::Executor e) {
    pipeline::JobSpec j;
    j.id = job_id;
    j.model_hash = std::string(64, 'a');
    j.executor = e;
    send(pipeline::encode_job_message(pipeline::encode_job(j)));
  }
  void send(const std::string& payload) {
    router.send(zmq::buffer(identity), zmq::send_flags::sndmore);
    router.send(zmq::buffer(payload), zmq::send_flags::none);
  }

  std::string ep;
  zmq::context_t ctx;
  zmq::socket_t router;
  std::string identity;  // of the last worker heard
};

}  // namespace

TEST(FleetProcesses, DemoOverThreeWorkersMatchesSingleMachineDiscover) {
  Fleet f("demo");
  const std::string model = demo_model(f.dir);
  std::filesystem::create_directories(f.dir + "/local/.torq-store");
  Proc local({bin("torq-gen-config"), "discover", "--model", model, "--output-dir", f.dir + "/local", "--workers",
              "2"},
             f.dir + "/local.log");
  ASSERT_EQ(local.wait(120000), 0) << local.output();

  // Every worker is Good (its health check passed) before the coordinator
  // starts, and dispatch waits for all three; at 30 ms a job, none can
  // finish the demo's 42 jobs before the others are served.
  for (int i = 0; i < 3; ++i) f.add_worker({"TORQ_WORKER_DELAY_MS=30"});
  for (const auto& w : f.workers) ASSERT_TRUE(w.wait_for("health Good", 60000)) << w.output();
  Proc coord = f.coordinator(model, "coordinator.log", {"--min-workers", "3"});
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  f.stop_workers();

  const json a = read_json(f.dir + "/local/torq_gen_config_demo.json");
  const json b = read_json(f.dir + "/out/torq_gen_config_demo.json");
  ASSERT_EQ(a["ops"].size(), 14u);
  ASSERT_EQ(b["ops"].size(), a["ops"].size());
  for (auto& [id, op] : a["ops"].items()) {
    ASSERT_TRUE(b["ops"].contains(id)) << id;
    const json& other = b["ops"][id];
    EXPECT_EQ(other["recommended_executor"], op["recommended_executor"]) << id;
    EXPECT_EQ(other["mlir_location"], op["mlir_location"]) << id;
    for (const char* e : {"nss", "css", "host"})
      EXPECT_EQ(other["executors"][e]["status"], op["executors"][e]["status"]) << id << " " << e;
  }
  EXPECT_EQ(read_json(f.dir + "/out/torq_gen_config_demo_compiler.json"),
            read_json(f.dir + "/local/torq_gen_config_demo_compiler.json"));
  // Every worker fetched the model once and took part.
  const std::string out = coord.output();
  EXPECT_EQ(summary_number(out, "(\\d+) model blobs served"), 3) << out;
  // Every job's worker said when it started (STARTED: its lease runs the
  // job's own timeout from then; issue 30).
  EXPECT_GT(summary_number(out, "(\\d+) run on the fleet"), 0) << out;
  EXPECT_EQ(summary_number(out, "(\\d+) leases started"), summary_number(out, "(\\d+) run on the fleet")) << out;
  for (const auto& w : f.workers) EXPECT_NE(w.output().find("finished "), std::string::npos) << w.output();
}

// A frozen worker (SIGSTOP: its connection stays up, it just says nothing)
// is declared dead for --liveness heartbeats of silence (5 x 200 ms here,
// as the log says) and its jobs move to another worker; thawed, it finds
// itself forgotten and leaves cleanly on SIGTERM.
TEST(FleetProcesses, AFrozenWorkerIsDeadAfterItsLivenessAndItsJobsMove) {
  Fleet f("frozen_worker");
  const std::string model = demo_model(f.dir);
  Proc coord = f.coordinator(model, "coordinator.log");
  f.add_worker({"TORQ_WORKER_DELAY_MS=300"});
  ASSERT_TRUE(f.workers[0].wait_for("finished ", 60000)) << f.workers[0].output();
  f.workers[0].signal(SIGSTOP);
  f.add_worker();
  auto code = coord.wait(120000);
  f.workers[0].signal(SIGCONT);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string out = coord.output();
  EXPECT_NE(out.find("worker w1 expired (silent for 1000 ms)"), std::string::npos) << out;
  EXPECT_GE(summary_number(out, "(\\d+) jobs requeued"), 1) << out;
  EXPECT_EQ(summary_number(out, "(\\d+) crashed"), 0) << out;
  StoreView v = read_store(f.dir + "/db", run_id(out));
  EXPECT_EQ(v.results.size(), 14u);
  for (const auto& [id, st] : v.states) EXPECT_EQ(st, 'D') << id;
  f.stop_workers();
}

TEST(FleetProcesses, WorkerKilledMidRunEveryJobExactlyOnceInStore) {
  Fleet f("kill_worker");
  const std::string model = demo_model(f.dir);
  Proc coord = f.coordinator(model, "coordinator.log");
  // w1 is slow, so it certainly holds a job when it dies.
  f.add_worker({"TORQ_WORKER_DELAY_MS=3000"});
  for (int i = 0; i < 2; ++i) f.add_worker({"TORQ_WORKER_DELAY_MS=150"});
  ASSERT_TRUE(f.workers[0].wait_for("cached model", 60000)) << f.workers[0].output();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  f.workers[0].signal(SIGKILL);
  f.workers[0].wait(5000);
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string out = coord.output();
  EXPECT_NE(out.find("worker w1 expired"), std::string::npos) << out;
  EXPECT_GE(summary_number(out, "(\\d+) jobs requeued"), 1) << out;

  StoreView v = read_store(f.dir + "/db", run_id(out));
  ASSERT_EQ(v.states.size(), 42u);
  for (auto& [id, st] : v.states) EXPECT_EQ(st, 'D') << id;
  ASSERT_EQ(v.results.size(), 14u);
  for (auto& [layer, rs] : v.results) {
    std::set<pipeline::Executor> seen;
    for (auto& r : rs) EXPECT_TRUE(seen.insert(r.executor).second) << "layer " << layer;
    EXPECT_EQ(rs.size(), 3u) << "layer " << layer;
  }
  f.stop_workers();
}

TEST(FleetProcesses, CoordinatorKilledAndRestartedResumesWithoutRecomputing) {
  Fleet f("kill_coordinator");
  const std::string model = demo_model(f.dir);
  Proc first = f.coordinator(model, "coordinator1.log");
  for (int i = 0; i < 3; ++i) f.add_worker({"TORQ_WORKER_DELAY_MS=200"});
  ASSERT_TRUE(first.wait_for("jobs 25/42", 120000)) << first.output();
  first.signal(SIGKILL);
  ASSERT_TRUE(first.wait(5000));
  const std::string run = run_id(first.output());
  ASSERT_FALSE(run.empty()) << first.output();
  std::set<std::string> finished;
  for (auto& [id, st] : read_store(f.dir + "/db", run).states)
    if (st == 'D') finished.insert(id);
  ASSERT_GE(finished.size(), 25u);
  ASSERT_LT(finished.size(), 42u);

  Proc second = f.coordinator(model, "coordinator2.log");
  auto code = second.wait(120000);
  ASSERT_TRUE(code) << second.output();
  EXPECT_EQ(*code, 0) << second.output();
  const std::string out = second.output();
  EXPECT_EQ(run_id(out), run);
  EXPECT_EQ(summary_number(out, "(\\d+) resumed from the store"), static_cast<long>(finished.size())) << out;
  StoreView v = read_store(f.dir + "/db", run);
  ASSERT_EQ(v.states.size(), 42u);
  for (auto& [id, st] : v.states) EXPECT_EQ(st, 'D') << id;
  // No job finished before the kill ran again on any worker.
  const std::string logs = f.worker_logs();
  for (const auto& id : finished) EXPECT_EQ(count(logs, "finished " + id + ":"), 1u) << id;
  // The restart says how many jobs it found done and when it sent its first
  // job (issue 32: a resume is timed).
  EXPECT_NE(out.find("resuming: " + std::to_string(finished.size()) + " jobs done"), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(phases +first job sent at [0-9.]+ s, job phase [0-9.]+ s, )"
                                                R"(export [0-9.]+ s, wall [0-9.]+ s; coordinator peak RSS [0-9]+ MB)")))
      << out;
  EXPECT_TRUE(std::filesystem::exists(f.dir + "/out/torq_gen_config_demo.json"));
  f.stop_workers();
}

TEST(FleetProcesses, GarbageFramesToTheCoordinatorPortDoNotStopTheRun) {
  Fleet f("garbage");
  const std::string model = demo_model(f.dir);
  Proc coord = f.coordinator(model, "coordinator.log");
  for (int i = 0; i < 2; ++i) f.add_worker({"TORQ_WORKER_DELAY_MS=100"});
  ASSERT_TRUE(coord.wait_for("listening on", 60000)) << coord.output();

  zmq::context_t ctx;
  FakeWorker raw(ctx, f.ep);
  pipeline::WorkerInfo w;
  w.worker_id = "raw";
  w.executors = {pipeline::Executor::kHost};
  const std::string ready = pipeline::encode_ready(w);
  pipeline::ExecResult r;
  r.job_id = "x";
  std::string bad_result = pipeline::encode_result_message(r);
  bad_result[bad_result.size() - 9] ^= 0x5a;  // corrupt the nested result, keep the envelope
  std::string bad_nested = pipeline::encode_result_message(r);
  for (size_t i = 40; i < bad_nested.size(); ++i) bad_nested[i] = static_cast<char>(0xff);
  const std::vector<std::vector<std::string>> attacks = {
      {std::string("\x00\x13garbage\xfe\xff", 11)},
      {ready.substr(0, ready.size() - 7)},
      {std::string((17 << 20), 'Z')},  // over the coordinator's 16 MiB cap
      {ready, ready, ready},
      {bad_nested},
  };
  for (const auto& frames : attacks) {
    raw.send_frames(frames);
    auto m = raw.next(5000, false);
    ASSERT_TRUE(m) << "the coordinator did not answer a bad frame";
    EXPECT_EQ(m->type, pipeline::FleetType::kDisconnect);
  }
  raw.send_frames({bad_result});  // whatever it decodes to, the run must go on
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string out = coord.output();
  EXPECT_GE(summary_number(out, "(\\d+) bad frames"), static_cast<long>(attacks.size())) << out;
  EXPECT_NE(out.find("bad frame from peer"), std::string::npos);
  const json rep = read_json(f.dir + "/out/torq_gen_config_demo.json");
  ASSERT_EQ(rep["ops"].size(), 14u);
  for (auto& [id, op] : rep["ops"].items()) EXPECT_EQ(op["executors"]["host"]["status"], "success") << id;
  f.stop_workers();
}

TEST(FleetProcesses, HangingAndCrashingExecutorsAreErrorsAndWorkersLiveOn) {
  Fleet f("faults");
  const std::string model = demo_model(f.dir);
  Proc coord = f.coordinator(model, "coordinator.log", {"--job-timeout-ms", "1500"});
  for (int i = 0; i < 2; ++i) f.add_worker({"TORQ_WORKER_FAULT=hang:/2/host,crash:/4/css"});
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string out = coord.output();
  EXPECT_EQ(summary_number(out, "(\\d+) expired"), 0) << out;
  const json rep = read_json(f.dir + "/out/torq_gen_config_demo.json");
  int checked = 0;
  for (auto& [id, op] : rep["ops"].items()) {
    if (op["_node_index"] == 2) {
      EXPECT_EQ(op["executors"]["host"]["status"], "error") << id;
      EXPECT_EQ(op["executors"]["host"]["error_class"], "timeout") << id;
      ++checked;
    }
    if (op["_node_index"] == 4) {
      EXPECT_EQ(op["executors"]["css"]["status"], "error") << id;
      EXPECT_EQ(op["executors"]["css"]["error_class"], "crash") << id;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);
  for (auto& w : f.workers) EXPECT_FALSE(w.wait(0).has_value()) << "a worker died: " << w.output();
  f.stop_workers();
}

TEST(FleetProcesses, SigtermStopsDispatchWaitsForLeasedJobsAndTheRunResumes) {
  Fleet f("sigterm");
  const std::string model = demo_model(f.dir);
  Proc first = f.coordinator(model, "coordinator1.log", {"--grace-s", "20"});
  for (int i = 0; i < 2; ++i) f.add_worker({"TORQ_WORKER_DELAY_MS=300"});
  ASSERT_TRUE(f.workers[0].wait_for("finished ", 60000));
  first.signal(SIGTERM);
  auto code = first.wait(30000);
  ASSERT_TRUE(code) << first.output();
  EXPECT_EQ(*code, 3) << "a run stopped early is never a green one: " << first.output();
  const std::string out1 = first.output();
  EXPECT_NE(out1.find("stop requested"), std::string::npos) << out1;
  EXPECT_NE(out1.find("STOPPED EARLY"), std::string::npos) << out1;
  // Nothing was leased when it left: every job is either done or never sent.
  for (auto& [id, st] : read_store(f.dir + "/db", run_id(out1)).states) EXPECT_EQ(st, 'D') << id;
  EXPECT_FALSE(std::filesystem::exists(f.dir + "/out/torq_gen_config_demo.json"));

  Proc second = f.coordinator(model, "coordinator2.log");
  code = second.wait(120000);
  ASSERT_TRUE(code) << second.output();
  EXPECT_EQ(*code, 0) << second.output();
  EXPECT_GE(summary_number(second.output(), "(\\d+) resumed from the store"), 1);
  EXPECT_TRUE(std::filesystem::exists(f.dir + "/out/torq_gen_config_demo.json"));
  f.stop_workers();
}

TEST(FleetProcesses, CurveWorkerWithUnknownKeyGetsNoJobAndTheAllowedOneWorks) {
  Fleet f("curve");
  const std::string model = demo_model(f.dir);
  for (const char* name : {"server", "good", "bad"}) {
    Proc kg({bin("torq-coordinator"), "keygen", f.dir + "/" + name}, f.dir + "/keygen.log");
    ASSERT_EQ(kg.wait(10000), 0) << kg.output();
  }
  EXPECT_EQ(std::filesystem::status(f.dir + "/server.key").permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);
  {
    std::ofstream allow(f.dir + "/allow.txt");
    allow << "# workers allowed to connect\n" << slurp(f.dir + "/good.pub");
  }
  Proc coord = f.coordinator(model, "coordinator.log", {"--key", f.dir + "/server", "--allow", f.dir + "/allow.txt"});
  ASSERT_TRUE(coord.wait_for("listening on", 30000)) << coord.output();
  auto worker = [&](const std::string& id, std::vector<std::string> keys) {
    std::vector<std::string> args = {bin("torq-worker"), "--connect", f.ep, "--id", id, "--cache",
                                     f.dir + "/cache-" + id, "--heartbeat-ms", std::to_string(kHeartbeatMs),
                                     "--liveness", kLiveness, "-v"};
    args.insert(args.end(), keys.begin(), keys.end());
    return Proc(args, f.dir + "/" + id + ".log");
  };
  Proc bad = worker("bad", {"--server-key", f.dir + "/server.pub", "--key", f.dir + "/bad"});
  Proc plain = worker("plain", {});
  ASSERT_TRUE(coord.wait_for("unknown CURVE key", 10000)) << coord.output();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(coord.output().find("ready:"), std::string::npos) << "an unknown worker registered";
  Proc good = worker("good", {"--server-key", f.dir + "/server.pub", "--key", f.dir + "/good"});
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  EXPECT_EQ(count(good.output(), "finished "), 42u) << good.output();
  EXPECT_EQ(bad.output().find("finished "), std::string::npos);
  EXPECT_EQ(plain.output().find("finished "), std::string::npos);
  EXPECT_EQ(summary_number(coord.output(), "(\\d+) worker registrations"), 1) << coord.output();
  for (Proc* p : {&good, &bad, &plain}) {
    p->signal(SIGTERM);
    EXPECT_TRUE(p->wait(20000));
  }
}

TEST(FleetProcesses, MatrixSpecRunsOnTheFleetAndBadSpecsAreRejectedWithAPosition) {
  Fleet f("spec");
  const std::string model = demo_model(f.dir);
  {
    std::ofstream s(f.dir + "/bad.yaml");
    s << "models: [demo.onnx]\noptions:\n  skip_mod: true\n";
  }
  Proc bad({bin("torq-coordinator"), "--spec", f.dir + "/bad.yaml", "--db", f.dir + "/db"}, f.dir + "/bad.log");
  EXPECT_EQ(bad.wait(30000), 2);
  EXPECT_NE(bad.output().find("bad.yaml:3:3: unknown key 'skip_mod'"), std::string::npos) << bad.output();
  EXPECT_NE(bad.output().find("did you mean 'skip_mode'"), std::string::npos) << bad.output();
  Proc wide({bin("torq-coordinator"), "--model", model, "--db", f.dir + "/db", "--bind", "tcp://0.0.0.0:" +
             std::to_string(free_port())}, f.dir + "/wide.log");
  EXPECT_EQ(wide.wait(30000), 2);
  EXPECT_NE(wide.output().find("--insecure"), std::string::npos) << wide.output();
  {
    std::ofstream s(f.dir + "/spec.yaml");
    s << "models:\n  - demo.onnx\nexecutors: [css, host]\noptions:\n  skip_mode: true\n  dedup: true\n";
  }
  Proc coord({bin("torq-coordinator"), "--spec", f.dir + "/spec.yaml", "--bind", f.ep, "--db", f.dir + "/db",
              "--export", f.dir + "/out", "--heartbeat-ms", std::to_string(kHeartbeatMs), "--liveness", kLiveness},
             f.dir + "/coordinator.log");
  f.add_worker();
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  EXPECT_NE(coord.output().find("passed   demo-fp32-sim-discover"), std::string::npos) << coord.output();
  const json rep = read_json(f.dir + "/out/reports/demo-fp32-sim-discover/torq_gen_config_demo.json");
  for (auto& [id, op] : rep["ops"].items()) {
    EXPECT_FALSE(op["executors"].contains("nss")) << id;
    // Skip mode: host only where css did not succeed.
    if (op["executors"]["css"]["status"] == "success") {
      EXPECT_FALSE(op["executors"].contains("host")) << id;
    }
  }
  f.stop_workers();
}

// Subgraph jobs go over the fleet like layer jobs: the one worker that holds
// a subgraph test's range run is killed -9 while it runs it; the job is
// requeued to a worker that joins later and the test passes.
TEST(FleetProcesses, SubgraphRangeJobSurvivesItsWorkerBeingKilled) {
  Fleet f("subgraph_kill");
  demo_model(f.dir);
  {
    std::ofstream s(f.dir + "/spec.yaml");
    s << "models:\n  - {path: demo.onnx, subgraphs: [{from: 1, to: 8}]}\nmodes: [subgraph]\n";
  }
  Proc coord({bin("torq-coordinator"), "--spec", f.dir + "/spec.yaml", "--bind", f.ep, "--db", f.dir + "/db",
              "--export", f.dir + "/out", "--heartbeat-ms", std::to_string(kHeartbeatMs), "--liveness", kLiveness},
             f.dir + "/coordinator.log");
  // w1 runs the 24 layer jobs (layers 1..8 x 3 executors), then hangs on the
  // range run (its id ends in "-full1_8/0/host").
  f.add_worker({"TORQ_WORKER_FAULT=hang:-full1_8/"});
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (count(f.workers[0].output(), "finished ") < 24 && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(count(f.workers[0].output(), "finished "), 24u) << f.workers[0].output();
  ASSERT_TRUE(f.workers[0].wait_for("[fault] hanging on ", 60000)) << f.workers[0].output();
  EXPECT_EQ(count(f.workers[0].output(), "finished "), 24u);  // the range run has not finished on w1
  // Its job process hangs; killing the worker must not leave it behind.
  const std::vector<pid_t> children = children_of(f.workers[0].pid());
  ASSERT_EQ(children.size(), 1u);
  f.workers[0].signal(SIGKILL);
  f.workers[0].wait(5000);
  const auto gone_by = Clock::now() + std::chrono::seconds(5);
  while (::kill(children[0], 0) == 0 && Clock::now() < gone_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_NE(::kill(children[0], 0), 0) << "the hung job process " << children[0] << " outlived its worker";
  f.add_worker();
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string out = coord.output();
  EXPECT_NE(out.find("passed   demo-fp32-sim-subgraph-1-8"), std::string::npos) << out;
  EXPECT_GE(summary_number(out, "(\\d+) jobs requeued"), 1) << out;
  EXPECT_NE(f.workers[1].output().find("-full1_8/0/host"), std::string::npos) << f.workers[1].output();
  const json sub = read_json(f.dir + "/out/reports/demo-fp32-sim-subgraph-1-8/torq_gen_config_demo_subgraph_1_8.json");
  EXPECT_EQ(sub["ops"].size(), 8u);
  EXPECT_EQ(sub["full_model"]["passed"], true);
  EXPECT_EQ(sub["full_model"]["worker"], "w2");
  f.stop_workers();
}

// Device health (LAVA's model): every worker checks itself before its first
// job; one whose check fails is Bad, takes no job and retries with backoff;
// the coordinator's summary lists the boards and the store keeps every
// transition with its reason.
TEST(FleetHealth, ABadBoardTakesNoJobAndItsTransitionsAreStored) {
  Fleet f("health_bad");
  const std::string model = demo_model(f.dir);
  Proc coord = f.coordinator(model, "coordinator.log");
  f.add_worker({"TORQ_WORKER_FAULT=crash:health-check"}, {"--health-retry-s", "1"});
  // w2 joins once w1 is Bad (its check crashes its job process three times,
  // once per attempt): a run that ended first would show w1 still Unknown.
  ASSERT_TRUE(coord.wait_for("worker w1 health Unknown -> Bad", 60000)) << coord.output() << f.workers[0].output();
  f.add_worker();
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string out = coord.output();
  EXPECT_EQ(count(f.workers[0].output(), "finished "), 0u) << f.workers[0].output();
  EXPECT_EQ(count(f.workers[1].output(), "finished "), 42u) << f.workers[1].output();
  EXPECT_NE(out.find("board     w1 Bad (target sim): health check failed: crash"), std::string::npos) << out;
  EXPECT_NE(out.find("board     w2 Good (target sim): health check passed"), std::string::npos) << out;
  f.stop_workers();
  auto store = pipeline::Store::open(f.dir + "/db");
  std::map<std::string, std::vector<std::string>> seen;
  for (const auto& h : store->health_log()) seen[h.worker].push_back(h.health + ": " + h.reason);
  ASSERT_GE(seen["w1"].size(), 2u);
  EXPECT_EQ(seen["w1"][0], "Unknown: starting: health check before the first job");
  EXPECT_EQ(seen["w1"][1].rfind("Bad: health check failed: crash", 0), 0u) << seen["w1"][1];
  ASSERT_GE(seen["w2"].size(), 2u);
  EXPECT_EQ(seen["w2"][1], "Good: health check passed");
}

// A job lost to an infrastructure error is requeued without counting as an
// attempt or as the op's error, and the board checks its health again.
TEST(FleetHealth, AnInfrastructureErrorRequeuesTheJobAndTriggersACheck) {
  Fleet f("health_infra");
  const std::string model = demo_model(f.dir);
  Proc coord = f.coordinator(model, "coordinator.log");
  f.add_worker({"TORQ_WORKER_FAULT=infra:/3/css"});
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string out = coord.output();
  EXPECT_NE(out.find("lost to an infrastructure error on worker w1"), std::string::npos) << out;
  EXPECT_EQ(summary_number(out, "infra     (\\d+) jobs lost"), 1) << out;
  EXPECT_EQ(summary_number(out, "(\\d+) crashed"), 0) << out;
  StoreView v = read_store(f.dir + "/db", run_id(out));
  ASSERT_EQ(v.results.size(), 14u);
  bool found = false;
  for (const auto& r : v.results[3])
    if (r.executor == pipeline::Executor::kCss) {
      found = true;
      EXPECT_EQ(r.status, pipeline::Status::kSuccess);  // the op did not fail
      EXPECT_EQ(r.attempts, 1u);                        // and the lost run was not an attempt
    }
  EXPECT_TRUE(found);
  f.stop_workers();
  auto store = pipeline::Store::open(f.dir + "/db");
  std::vector<std::string> w1;
  for (const auto& h : store->health_log())
    if (h.worker == "w1") w1.push_back(h.health);
  EXPECT_EQ(w1, (std::vector<std::string>{"Unknown", "Good", "Unknown", "Good"}));
}

// The worker's side of that race, against a coordinator played by hand: it
// announces Unknown before the infrastructure error's RESULT (so a broker
// never leases the requeued job straight back), and a lease that reaches it
// while its check runs (300 ms a job here) is declined, not lost.
TEST(FleetHealth, AWorkerAnnouncesUnknownBeforeTheLostResultAndDeclinesLeasesMeanwhile) {
  const std::string dir = fresh_dir("health_declined");
  HandCoordinator c(endpoint(free_port()));
  Proc worker({bin("torq-worker"), "--connect", c.ep, "--id", "w1", "--cache", dir + "/cache", "--capacity", "1",
               "--heartbeat-ms", "200", "-v"},
              dir + "/w1.log", {"TORQ_WORKER_FAULT=infra:/3/css", "TORQ_WORKER_DELAY_MS=300"});
  std::vector<std::string> health;
  for (auto m = c.next(); m && m->type == pipeline::FleetType::kReady; m = c.next()) {
    health.push_back(m->ready.health);
    if (m->ready.health != "Unknown") break;
  }
  ASSERT_EQ(health, (std::vector<std::string>{"Unknown", "Good"})) << worker.output();
  c.lease("demo/3/css", pipeline::Executor::kCss);
  c.lease("demo/4/css", pipeline::Executor::kCss);
  std::vector<std::string> seen;  // what came back, in order
  while (seen.size() < 4) {
    auto m = c.next();
    ASSERT_TRUE(m) << worker.output();
    if (m->type == pipeline::FleetType::kReady)
      seen.push_back("READY " + m->ready.health + (m->ready.health_reason.find("infrastructure error") == 0
                                                         ? " (infrastructure error)" : ""));
    else if (m->type == pipeline::FleetType::kResult)
      seen.push_back("RESULT " + m->result.job_id + " " + m->result.error_class);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"READY Unknown (infrastructure error)",
                                            "RESULT demo/3/css infrastructure", "RESULT demo/4/css declined",
                                            "READY Good"}))
      << worker.output();
  worker.signal(SIGTERM);
  EXPECT_EQ(worker.wait(20000), 0) << worker.output();
}

// A worker that starts well before its coordinator (whose health check
// passes meanwhile) keeps the socket ZeroMQ is connecting: the coordinator's
// first message from it is the READY that says Unknown, so the store's
// health history starts where the worker did. (It used to replace the
// socket after the liveness window, and the queued READY went with it.)
TEST(FleetHealth, AWorkerStartedBeforeItsCoordinatorKeepsItsFirstReady) {
  const std::string dir = fresh_dir("health_early_worker");
  const std::string ep = endpoint(free_port());
  Proc worker({bin("torq-worker"), "--connect", ep, "--id", "w1", "--cache", dir + "/cache", "--capacity", "1",
               "--heartbeat-ms", "200", "-v"},
              dir + "/w1.log");
  ASSERT_TRUE(worker.wait_for("health Good", 60000)) << worker.output();
  // Past its liveness window (3 heartbeats of 200 ms) with nobody there.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_NE(worker.output().find("no answer from the coordinator yet"), std::string::npos) << worker.output();
  HandCoordinator c(ep);
  std::vector<std::string> readies;
  while (readies.size() < 2) {
    auto m = c.next();
    if (!m || m->type != pipeline::FleetType::kReady) break;
    readies.push_back(m->ready.health + ": " + m->ready.health_reason);
  }
  EXPECT_EQ(readies, (std::vector<std::string>{"Unknown: starting: health check before the first job",
                                               "Good: health check passed"}))
      << worker.output();
  EXPECT_EQ(count(worker.output(), "reconnecting"), 0u) << worker.output();
  worker.signal(SIGTERM);
  EXPECT_EQ(worker.wait(20000), 0) << worker.output();
}

// The same against the real coordinator: the READYs the early worker queued
// (Unknown, Good, then the same again) register it once, log one update
// (its health) and store its history from Unknown.
TEST(FleetHealth, AnEarlyWorkersRepeatedReadysRegisterItOnceAndQuietly) {
  Fleet f("health_early_fleet");
  const std::string model = demo_model(f.dir);
  f.add_worker();
  ASSERT_TRUE(f.workers[0].wait_for("health Good", 60000)) << f.workers[0].output();
  ASSERT_TRUE(f.workers[0].wait_for("no answer from the coordinator yet", 60000)) << f.workers[0].output();
  Proc coord = f.coordinator(model, "coordinator.log");
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string out = coord.output();
  EXPECT_EQ(count(out, "worker w1 ready:"), 1u) << out;
  EXPECT_EQ(count(out, "worker w1 updated:"), 1u) << out;
  EXPECT_EQ(count(out, "worker w1 health - -> Unknown: starting"), 1u) << out;
  EXPECT_EQ(summary_number(out, "(\\d+) worker registrations"), 1) << out;
  f.stop_workers();
  // The one reconnect: when the finished coordinator said it was shutting down.
  EXPECT_EQ(count(f.workers[0].output(), "reconnecting"),
            count(f.workers[0].output(), "(coordinator shutting down); reconnecting"))
      << f.workers[0].output();
}

// Device tags: a matrix target that requires tags is served only by workers
// offering them; when no registered worker does, the run says so and (with
// missing_tags: fail) stops with exit 2 instead of starving silently.
TEST(FleetHealth, TaggedTargetsGoToTaggedWorkersAndMissingTagsAreReported) {
  Fleet f("tags");
  demo_model(f.dir);
  {
    std::ofstream s(f.dir + "/spec.yaml");
    s << "models: [demo.onnx]\ntargets: {chip: {requires: [sl2610]}}\n"
         "options: {missing_tags: fail, missing_tags_wait_s: 1}\n";
  }
  Proc local({bin("torq-coordinator"), "--spec", f.dir + "/spec.yaml", "--db", f.dir + "/db-local", "--export",
              f.dir + "/out-local", "--local-workers", "1"},
             f.dir + "/local.log");
  EXPECT_EQ(local.wait(60000), 2) << local.output();
  EXPECT_NE(local.output().find("offers tags [sl2610]"), std::string::npos) << local.output();

  Proc coord({bin("torq-coordinator"), "--spec", f.dir + "/spec.yaml", "--bind", f.ep, "--db", f.dir + "/db",
              "--export", f.dir + "/out", "--heartbeat-ms", std::to_string(kHeartbeatMs), "--liveness", kLiveness},
             f.dir + "/coordinator.log");
  f.add_worker({}, {"--tags", "sl2610,astra-machina"});
  f.add_worker();
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  EXPECT_GE(count(f.workers[0].output(), "finished "), 42u) << f.workers[0].output();
  EXPECT_EQ(count(f.workers[1].output(), "finished "), 0u) << f.workers[1].output();
  const std::string junit = slurp(f.dir + "/out/junit.xml");
  EXPECT_NE(junit.find("name=\"board.w1\" value=\"w1 Good (target sim, tags sl2610,astra-machina)"),
            std::string::npos) << junit;
  EXPECT_NE(slurp(f.dir + "/out/report.html").find("board w1"), std::string::npos);
  f.stop_workers();
}

// CPU time (user + system, seconds) of process `pid` and its children.
static double cpu_seconds(pid_t pid) {
  double ticks = 0;
  std::vector<pid_t> all = children_of(pid);
  all.push_back(pid);
  for (pid_t p : all) {
    std::ifstream st("/proc/" + std::to_string(p) + "/stat");
    std::string line;
    if (!std::getline(st, line)) continue;
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    ticks += utime + stime;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Issue 30: a worker whose coordinator is unreachable, or gone after it
// spoke, waited 0 ms in zmq_poll between heartbeats it never sent: a full
// core. It must sleep: under 1% of a core over 10 s, both before the
// coordinator ever answers and while it reconnects to one that vanished.
TEST(FleetFaults, AWorkerWithoutItsCoordinatorSleepsBetweenPolls) {
  const std::string dir = fresh_dir("faults_idle_worker");
  const std::string ep = endpoint(free_port());
  Proc worker({bin("torq-worker"), "--connect", ep, "--id", "w1", "--cache", dir + "/cache", "--capacity", "1", "-v"},
              dir + "/w1.log");
  ASSERT_TRUE(worker.wait_for("health Good", 60000)) << worker.output();
  double before = cpu_seconds(worker.pid());
  std::this_thread::sleep_for(std::chrono::seconds(10));
  double used = cpu_seconds(worker.pid()) - before;
  EXPECT_LT(used, 0.1) << "unreachable coordinator: " << used << " s of CPU in 10 s\n" << worker.output();
  {
    HandCoordinator c(ep);  // takes its READY, speaks, then is gone
    ASSERT_TRUE(c.next()) << worker.output();
    c.send(pipeline::encode_heartbeat());
  }
  ASSERT_TRUE(worker.wait_for("reconnecting", 60000)) << worker.output();
  before = cpu_seconds(worker.pid());
  std::this_thread::sleep_for(std::chrono::seconds(10));
  used = cpu_seconds(worker.pid()) - before;
  EXPECT_LT(used, 0.1) << "vanished coordinator: " << used << " s of CPU in 10 s\n" << worker.output();
  worker.signal(SIGTERM);
  EXPECT_EQ(worker.wait(20000), 0) << worker.output();
}

// Issue 30: a local worker outlived a kill -9 of its coordinator for
// minutes (SIGTERM from PR_SET_PDEATHSIG made it finish its running job
// first, here one that hangs for its 10-minute timeout). It must leave
// within seconds, its job processes with it.
TEST(FleetFaults, ALocalWorkerLeavesSoonAfterItsCoordinatorIsKilled) {
  const std::string dir = fresh_dir("faults_orphan_worker");
  const std::string model = demo_model(dir);
  const std::string spec = dir + "/spec.yaml";
  std::ofstream(spec) << "models: [" << model << "]\nmodes: [discover]\noptions: {job_timeout_ms: 600000}\n";
  Proc coord({bin("torq-coordinator"), "--spec", spec, "--local-workers", "1", "--db", dir + "/db", "--export",
              dir + "/out"},
             dir + "/coordinator.log", {"TORQ_WORKER_FAULT=hang:/2/host"});
  std::vector<pid_t> workers;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (workers.empty() && std::chrono::steady_clock::now() < until) {
    workers = children_of(coord.pid());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(workers.empty()) << coord.output();
  // The hanging job is leased once the layers before it are done.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  ASSERT_FALSE(coord.wait(0).has_value()) << "the run ended before the kill: " << coord.output();
  std::vector<pid_t> all = workers;
  for (pid_t w : workers)
    for (pid_t c : children_of(w)) all.push_back(c);
  coord.signal(SIGKILL);
  coord.wait(10000);
  const auto kill_time = std::chrono::steady_clock::now();
  for (;;) {
    bool any = false;
    for (pid_t p : all) {
      std::ifstream st("/proc/" + std::to_string(p) + "/stat");
      std::string line;
      if (std::getline(st, line) && line.substr(line.rfind(')') + 2, 1) != "Z") any = true;
    }
    if (!any) break;
    ASSERT_LT(std::chrono::steady_clock::now() - kill_time, std::chrono::seconds(15))
        << "a local worker or its job process outlived its coordinator by 15 s";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Issue 30: with the store's filesystem full, every job's "cannot write the
// model cache" was stored as the op's error/fetch, and kept by the resume.
// A worker whose cache takes no write (here: a file size limit, as root
// ignores permissions; SIGXFSZ ignored as a full disk sends none) fails its
// health check and takes no job; the run completes on a worker that can,
// and no result is an infrastructure error.
TEST(FleetFaults, AWorkerThatCannotWriteItsModelCacheIsBadAndPoisonsNoResult) {
  Fleet f("faults_full_cache");
  const std::string model = demo_model(f.dir);
  Proc coord = f.coordinator(model, "coordinator.log");
  Proc full({"/bin/bash", "-c",
             "trap '' XFSZ; ulimit -f 16; exec " + bin("torq-worker") + " --connect " + f.ep +
                 " --id full --cache " + f.dir + "/cache-full --capacity 1 --heartbeat-ms " +
                 std::to_string(kHeartbeatMs) + " --liveness " + kLiveness + " -v"},
            f.dir + "/full.log");
  ASSERT_TRUE(full.wait_for("health check failed: model cache", 60000)) << full.output();
  EXPECT_NE(full.output().find("File too large"), std::string::npos) << full.output();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_FALSE(coord.wait(0).has_value()) << "no job can run on a Bad device: " << coord.output();
  f.add_worker();
  auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const json rep = read_json(f.dir + "/out/torq_gen_config_demo.json");
  int results = 0;
  for (auto& [id, op] : rep["ops"].items())
    for (auto& [e, r] : op["executors"].items()) {
      ++results;
      EXPECT_NE(r.value("error_class", ""), "fetch") << id << " " << e;
      EXPECT_NE(r.value("error_class", ""), "infrastructure") << id << " " << e;
      EXPECT_EQ(r["worker_id"], "w1") << id << " " << e;
    }
  EXPECT_GT(results, 20);
  EXPECT_NE(coord.output().find("worker full ready"), std::string::npos) << coord.output();
  full.signal(SIGTERM);
  EXPECT_EQ(full.wait(20000), 0) << full.output();
  f.stop_workers();
}

// The fields of every result of a report that a rerun must reproduce:
// everything but where and how long it ran (host_ms, worker_id, attempts,
// cached).
static std::map<std::string, json> comparable_results(const json& rep) {
  std::map<std::string, json> out;
  for (auto& [id, op] : rep["ops"].items())
    for (auto& [e, r] : op["executors"].items()) {
      json x = r;
      for (const char* k : {"host_ms", "worker_id", "attempts", "cached"}) x.erase(k);
      out[id + "/" + e] = x;
    }
  return out;
}

// Issue 30's chaos test: kill -9 the coordinator or a worker, each only
// after the coordinator is listening, again and again during dispatch,
// restart it, and the finished run's results equal a clean run's in every
// field (status, metrics, outputs, timing, toolchain, job id).
TEST(FleetChaos, KillsDuringDispatchChangeNoResultField) {
  Fleet clean("chaos_clean");
  const std::string model = demo_model(clean.dir);
  {
    Proc c = clean.coordinator(model, "coordinator.log");
    for (int i = 0; i < 2; ++i) clean.add_worker();
    auto code = c.wait(120000);
    ASSERT_TRUE(code && *code == 0) << c.output();
    clean.stop_workers();
  }
  const auto expected = comparable_results(read_json(clean.dir + "/out/torq_gen_config_demo.json"));
  ASSERT_EQ(expected.size(), 42u);

  Fleet f("chaos");
  const std::vector<std::string> slow = {"TORQ_WORKER_DELAY_MS=150"};
  std::vector<Proc> coords;
  coords.push_back(f.coordinator(model, "coordinator0.log"));
  for (int i = 0; i < 2; ++i) f.add_worker(slow);
  std::mt19937 rng(30);
  int kills = 0;
  for (int round = 1; round <= 8; ++round) {
    Proc& c = coords.back();
    ASSERT_TRUE(c.wait_for("listening on", 60000)) << c.output();
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 500));
    if (c.wait(0)) break;  // finished
    if (round % 2 == 1) {  // the coordinator: restarted on the same store and port
      c.signal(SIGKILL);
      c.wait(10000);
      coords.push_back(f.coordinator(model, "coordinator" + std::to_string(round) + ".log"));
    } else {  // a worker: restarted under its id
      const size_t k = rng() % f.workers.size();
      f.workers[k].signal(SIGKILL);
      f.workers[k].wait(10000);
      std::vector<std::string> args{bin("torq-worker"), "--connect", f.ep, "--id", "w" + std::to_string(k + 1),
                                    "--cache", f.dir + "/cache-w" + std::to_string(k + 1), "--capacity", "1",
                                    "--heartbeat-ms", std::to_string(kHeartbeatMs), "--liveness", kLiveness, "-v"};
      f.workers[k] = Proc(args, f.dir + "/w" + std::to_string(k + 1) + "-" + std::to_string(round) + ".log", slow);
    }
    ++kills;
  }
  auto code = coords.back().wait(180000);
  ASSERT_TRUE(code) << coords.back().output();
  ASSERT_EQ(*code, 0) << coords.back().output();
  f.stop_workers();
  EXPECT_GE(kills, 4) << "the run ended before the chaos";
  const auto got = comparable_results(read_json(f.dir + "/out/torq_gen_config_demo.json"));
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [key, x] : expected) {
    auto it = got.find(key);
    ASSERT_NE(it, got.end()) << key;
    EXPECT_EQ(it->second, x) << key;
  }
}

// Issue 30: a full disk crashed the coordinator (a RocksDB assertion in its
// info log writer, SIGABRT, exit 134). The store's filesystem full (a file
// size limit here, as root ignores permissions; SIGXFSZ ignored, as a full
// disk sends none): a clean error naming the store, exit 2, and a store
// the same run resumes from once there is room.
TEST(FleetFaults, AFullDiskStopsTheCoordinatorCleanlyAndTheStoreResumes) {
  const std::string dir = fresh_dir("faults_full_store");
  const std::string model = demo_model(dir);
  const std::string spec = dir + "/spec.yaml";
  std::ofstream(spec) << "models: [" << model << "]\nvariants: [fp32, bf16]\nmodes: [discover]\n";
  for (const int limit_kib : {40, 80}) {
    const std::string db = dir + "/db" + std::to_string(limit_kib);
    Proc full({"/bin/bash", "-c",
               "trap '' XFSZ; ulimit -f " + std::to_string(limit_kib) + "; exec " + bin("torq-coordinator") +
                   " --spec " + spec + " --local-workers 1 --db " + db + " --export " + dir + "/out"},
              dir + "/full" + std::to_string(limit_kib) + ".log");
    auto code = full.wait(120000);
    ASSERT_TRUE(code) << full.output();
    EXPECT_EQ(*code, 2) << full.output();
    EXPECT_NE(full.output().find("torq-coordinator: error: store '" + db + "': cannot "), std::string::npos)
        << full.output();
    EXPECT_NE(full.output().find("File too large"), std::string::npos) << full.output();
    EXPECT_EQ(full.output().find("Assertion"), std::string::npos) << full.output();
    EXPECT_EQ(full.output().find("import failed"), std::string::npos) << "a store error became a test's result\n"
                                                                      << full.output();
    Proc again({bin("torq-coordinator"), "--spec", spec, "--local-workers", "1", "--db", db, "--export",
                dir + "/out"},
               dir + "/again" + std::to_string(limit_kib) + ".log");
    code = again.wait(120000);
    ASSERT_TRUE(code) << again.output();
    EXPECT_EQ(*code, 0) << again.output();
    EXPECT_NE(again.output().find("matrix: 2 passed, 0 failed"), std::string::npos) << again.output();
  }
}
