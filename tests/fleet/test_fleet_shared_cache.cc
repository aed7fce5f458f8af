// Workers sharing one model cache directory (several boards' workers on one
// host, a nightly's local workers) fetch each model once between them: the
// one holding the claim <cache>/.fetching/<hash> (an flock) fetches, the
// others wait for its file, and take the claim over when its holder lets go
// without the model or is killed (worker/runner/cache_claim.h). Real
// coordinator and worker processes on loopback, real ONNX models; the
// coordinator's summary counts the blobs it served. Also MODEL_HINT: a
// worker fetches the model of queued jobs before any of them reaches it.
#include <gtest/gtest.h>
#include <sys/file.h>

#include <regex>

#include "pipeline/core/sha256.h"
#include "pipeline/model/model_import.h"
#include "pipeline/store/store.h"
#include "pipeline/wire/codec.h"
#include "tests/fleet/fleet_harness.h"
#include "tests/fleet/matmul_model.h"

using namespace torq;
using namespace torq::fleet_test;

namespace {

// The name a model has in the workers' caches: its SHA-256 as the
// coordinator imports it (shape inference adds value infos to the file's
// bytes).
std::string model_hash(const std::string& path) { return pipeline::ImportedModel::from_file(path)->hash(); }

// Those bytes, as a worker that fetched the model writes them.
std::string imported_bytes(const std::string& path) {
  pipeline::ImportOptions o;
  o.copy_to = path + ".imported";
  pipeline::ImportedModel::from_file(path, o);
  return slurp(o.copy_to);
}

// A cached model is the model as imported, byte for byte.
void expect_cached(const std::string& dir, const std::string& hash) {
  const std::string cached = slurp(dir + "/cache/" + hash + ".onnx");
  EXPECT_EQ(pipeline::sha256_hex(cached), hash) << cached.size() << " bytes cached";
}

// Every job of the run done, with 2 layers x 3 executors of results, on the
// model `hash` (the worker's cache name: the coordinator hashes the model's
// bytes as parsed and serialised again).
void expect_all_results(const std::string& dir, const std::string& out, const std::string& hash) {
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("run ([0-9a-f]{16}):"))) << out;
  auto store = pipeline::Store::open(dir + "/db");
  size_t jobs = 0;
  for (auto& [id, st] : store->jobs(m[1])) {
    EXPECT_EQ(st.state, 'D') << id;
    EXPECT_EQ(pipeline::decode_job(st.encoded.data(), st.encoded.size()).model_hash, hash) << id;
    ++jobs;
  }
  EXPECT_GE(jobs, 6u);
  const auto results = store->model_results(m[1], hash);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& [layer, rs] : results) EXPECT_EQ(rs.size(), 3u) << "layer " << layer;
}

Proc coordinator(const std::string& dir, const std::string& ep, const std::string& model, int workers) {
  return Proc({bin("torq-coordinator"), "--model", model, "--bind", ep, "--db", dir + "/db", "--export",
               dir + "/out", "--min-workers", std::to_string(workers)},
              dir + "/coordinator.log");
}

Proc worker(const std::string& dir, const std::string& ep, const std::string& id) {
  return Proc({bin("torq-worker"), "--connect", ep, "--id", id, "--cache", dir + "/cache", "--capacity", "1", "-v"},
              dir + "/" + id + ".log");
}

// A child process holding the claim on `hash` (as a worker fetching the
// model does, to the kernel) until it is killed.
class ClaimHolder {
 public:
  ClaimHolder(const std::string& dir, const std::string& hash) {
    std::filesystem::create_directories(dir + "/cache/.fetching");
    const std::string lock = dir + "/cache/.fetching/" + hash;
    int ready[2];
    if (pipe(ready) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {  // async-signal-safe calls only: the test process has threads
      const int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      const char ok = fd >= 0 && flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
      if (write(ready[1], &ok, 1) != 1) _exit(1);
      for (;;) pause();
    }
    close(ready[1]);
    char ok = 0;
    held_ = read(ready[0], &ok, 1) == 1 && ok == 'y';
    close(ready[0]);
  }
  ~ClaimHolder() { kill_it(); }
  bool held() const { return held_; }
  // SIGKILL, as a worker dies mid-fetch; the kernel lets the claim go.
  void kill_it() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  bool held_ = false;
};

std::string stop_workers(std::vector<Proc>& workers) {
  std::string logs;
  for (auto& w : workers) w.signal(SIGTERM);
  for (auto& w : workers) {
    EXPECT_EQ(w.wait(20000), 0) << w.output();
    logs += w.output();
  }
  return logs;
}

}  // namespace

TEST(FleetSharedCache, TwoWorkersOnOneCacheFetchTheModelOnce) {
  const std::string dir = fresh_dir("shared-cache-once");
  const std::string ep = endpoint(free_port());
  const std::string model = matmul_relu_model(dir + "/m.onnx", 1024, 8192);  // 32 MiB of weights
  const std::string hash = model_hash(model);
  Proc coord = coordinator(dir, ep, model, 2);  // both workers get their first job at once
  ASSERT_TRUE(coord.wait_for("listening on", 120000)) << coord.output();
  std::vector<Proc> workers;
  for (const std::string id : {"w1", "w2"}) workers.push_back(worker(dir, ep, id));
  const auto code = coord.wait(240000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string logs = stop_workers(workers);
  const std::string out = coord.output();
  // Without the claim each worker fetched it: 2 blobs served.
  EXPECT_EQ(summary_number(out, "(\\d+) model blobs served"), 1) << out << logs;
  const std::regex fetched("cached model " + hash.substr(0, 16) + " \\(\\d+ bytes\\)");
  EXPECT_EQ(std::distance(std::sregex_iterator(logs.begin(), logs.end(), fetched), std::sregex_iterator()), 1)
      << logs;
  expect_cached(dir, hash);
  expect_all_results(dir, out, hash);
}

// One worker whose model's claim a ClaimHolder holds from the start: the
// run, once the worker says it waits for the holder.
struct HeldClaimRun {
  explicit HeldClaimRun(const std::string& name)
      : dir(fresh_dir(name)),
        ep(endpoint(free_port())),
        model(matmul_relu_model(dir + "/m.onnx", 256, 1024)),
        hash(model_hash(model)),
        holder(dir, hash) {}
  // Starts the coordinator and the worker; false (with the reason added as
  // a failure) unless the worker came to wait for the holder.
  bool start() {
    EXPECT_TRUE(holder.held());
    coord = coordinator(dir, ep, model, 1);
    if (!coord.wait_for("listening on", 120000)) {
      ADD_FAILURE() << coord.output();
      return false;
    }
    workers.push_back(worker(dir, ep, "w1"));
    if (!workers[0].wait_for(hash.substr(0, 16) + ": another process sharing the cache", 60000)) {
      ADD_FAILURE() << workers[0].output();
      return false;
    }
    return true;
  }
  // The coordinator's exit (0 expected), then the workers stopped: the
  // coordinator's output and the workers' logs.
  std::pair<std::string, std::string> finish() {
    const auto code = coord.wait(120000);
    EXPECT_TRUE(code && *code == 0) << coord.output();
    const std::string logs = stop_workers(workers);
    return {coord.output(), logs};
  }
  std::string dir, ep, model, hash;
  ClaimHolder holder;
  Proc coord;
  std::vector<Proc> workers;
};

TEST(FleetSharedCache, AWorkerWaitsForTheHoldersFileAndFetchesNothing) {
  HeldClaimRun r("shared-cache-adopt");
  ASSERT_TRUE(r.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(r.workers[0].output().find("] cached model "), std::string::npos) << r.workers[0].output();
  // The holder's fetch ends as a worker's does: the file renamed into place,
  // then the claim let go.
  const std::string cached = r.dir + "/cache/" + r.hash + ".onnx";
  { std::ofstream(cached + ".tmp.holder", std::ios::binary) << imported_bytes(r.model); }
  std::filesystem::rename(cached + ".tmp.holder", cached);
  r.holder.kill_it();
  const auto [out, logs] = r.finish();
  EXPECT_EQ(summary_number(out, "(\\d+) model blobs served"), 0) << out << logs;
  EXPECT_EQ(count(logs, "cached model " + r.hash.substr(0, 16) + " (fetched by another process sharing the cache)"),
            1u)
      << logs;
  expect_cached(r.dir, r.hash);
  expect_all_results(r.dir, out, r.hash);
}

TEST(FleetSharedCache, AHolderKilledWithoutTheModelHandsTheFetchOver) {
  HeldClaimRun r("shared-cache-takeover");
  ASSERT_TRUE(r.start());
  // A half-written file of the holder's, as a killed fetch leaves it.
  { std::ofstream(r.dir + "/cache/" + r.hash + ".onnx.tmp.999999") << "partial"; }
  r.holder.kill_it();
  EXPECT_TRUE(r.workers[0].wait_for(
      r.hash.substr(0, 16) + ": the other process let go without it; fetching it here", 10000))
      << r.workers[0].output();
  const auto [out, logs] = r.finish();
  EXPECT_EQ(summary_number(out, "(\\d+) model blobs served"), 1) << out << logs;
  expect_cached(r.dir, r.hash);
  expect_all_results(r.dir, out, r.hash);
}

// MODEL_HINT (protocol 4): a worker hears of the models of queued jobs and
// fetches them before any of their jobs reaches it. Here no job can reach
// it yet (the coordinator waits for two workers), and the model is in its
// cache all the same; without the hint it fetched a model only for a job.
TEST(FleetModelHint, AWorkerFetchesTheQueuedJobsModelBeforeItsFirstJob) {
  const std::string dir = fresh_dir("model-hint");
  const std::string ep = endpoint(free_port());
  const std::string model = matmul_relu_model(dir + "/m.onnx", 256, 1024);
  const std::string hash = model_hash(model);
  Proc coord = coordinator(dir, ep, model, 2);
  ASSERT_TRUE(coord.wait_for("listening on", 120000)) << coord.output();
  std::vector<Proc> workers;
  workers.push_back(worker(dir, ep, "w1"));
  ASSERT_TRUE(workers[0].wait_for("cached model " + hash.substr(0, 16) + " (", 30000)) << workers[0].output();
  EXPECT_EQ(workers[0].output().find("finished"), std::string::npos) << workers[0].output();
  expect_cached(dir, hash);
  // The second worker (its own cache) lets the jobs go; the first has its model.
  workers.push_back(Proc({bin("torq-worker"), "--connect", ep, "--id", "w2", "--cache", dir + "/cache-w2",
                          "--capacity", "1", "-v"},
                         dir + "/w2.log"));
  const auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string logs = stop_workers(workers);
  // w1's fetch, and w2's if a job reached it before w1 took them all.
  EXPECT_GE(summary_number(coord.output(), "(\\d+) model blobs served"), 1) << coord.output() << logs;
  expect_all_results(dir, coord.output(), hash);
}
