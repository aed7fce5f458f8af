// A large model blob served to real workers while heartbeats must keep
// flowing (the zoo nightly's 347 MB vit_b_16: workers reconnected after
// "coordinator silent for 3000 ms" and jobs were requeued). Real processes
// on loopback, a real ONNX model of ~100 MB generated here, and a heartbeat
// interval of 100 ms (liveness 3: 300 ms of silence is death), which a
// blob served in one message held up far longer than that.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <regex>

#include "pipeline/wire/codec.h"
#include "pipeline/store/store.h"
#include "tests/fleet/fleet_harness.h"
#include "tests/fleet/matmul_model.h"

using namespace torq;
using namespace torq::fleet_test;

namespace {

constexpr int kHeartbeatMs = 100;

}  // namespace

TEST(FleetLargeBlob, ServedWithoutSilenceReconnectOrRequeue) {
  const std::string dir = fresh_dir("large-blob");
  const std::string ep = endpoint(free_port());
  const std::string model = matmul_relu_model(dir + "/big.onnx", 1024, 24576);  // 96 MiB of weights
  ASSERT_GT(std::filesystem::file_size(model), size_t{96} << 20);
  Proc coord({bin("torq-coordinator"), "--model", model, "--bind", ep, "--db", dir + "/db", "--export", dir + "/out",
              "--heartbeat-ms", std::to_string(kHeartbeatMs), "--min-workers", "2"},
             dir + "/coordinator.log");
  // Workers join a listening coordinator (one still importing the model
  // would be silent to them, rightly).
  ASSERT_TRUE(coord.wait_for("listening on", 120000)) << coord.output();
  std::vector<Proc> workers;
  for (const std::string id : {"w1", "w2"})
    workers.emplace_back(std::vector<std::string>{bin("torq-worker"), "--connect", ep, "--id", id, "--cache",
                                                  dir + "/cache-" + id, "--capacity", "1", "--heartbeat-ms",
                                                  std::to_string(kHeartbeatMs), "-v"},
                         dir + "/" + id + ".log");
  const auto code = coord.wait(240000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  for (auto& w : workers) w.signal(SIGTERM);
  std::string logs;
  for (auto& w : workers) {
    EXPECT_EQ(w.wait(20000), 0) << w.output();
    logs += w.output();
  }
  const std::string out = coord.output();
  // Both workers fetched the blob, and nobody went silent meanwhile.
  EXPECT_EQ(summary_number(out, "(\\d+) model blobs served"), 2) << out;
  EXPECT_EQ(summary_number(out, "(\\d+) worker registrations"), 2) << out;
  EXPECT_EQ(summary_number(out, "(\\d+) expired"), 0) << out;
  EXPECT_EQ(summary_number(out, "(\\d+) jobs requeued"), 0) << out;
  EXPECT_EQ(out.find("silent"), std::string::npos) << out;
  EXPECT_EQ(logs.find("silent"), std::string::npos) << logs;
  // The only reconnect: after the coordinator said it was shutting down.
  EXPECT_EQ(count(logs, "reconnecting"), count(logs, "(coordinator shutting down); reconnecting")) << logs;
  for (const std::string id : {"w1", "w2"}) {
    const std::string cached_note = "[worker " + id + "] cached model ";
    EXPECT_NE(logs.find(cached_note), std::string::npos) << logs;
  }

  // Every job done, with its results stored: 2 layers x 3 executors.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("run ([0-9a-f]{16}):"))) << out;
  auto store = pipeline::Store::open(dir + "/db");
  std::string hash;
  size_t jobs = 0;
  for (auto& [id, st] : store->jobs(m[1])) {
    EXPECT_EQ(st.state, 'D') << id;
    hash = pipeline::decode_job(st.encoded.data(), st.encoded.size()).model_hash;
    ++jobs;
  }
  EXPECT_GE(jobs, 6u);
  const auto results = store->model_results(m[1], hash);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& [layer, rs] : results) EXPECT_EQ(rs.size(), 3u) << "layer " << layer;
  // The cached copies are the stored model, byte for byte.
  const std::optional<std::string> stored = store->get_model(hash);
  ASSERT_TRUE(stored);
  EXPECT_GT(stored->size(), size_t{96} << 20);
  for (const std::string id : {"w1", "w2"}) {
    const std::string cached = slurp(dir + "/cache-" + id + "/" + hash + ".onnx");
    EXPECT_TRUE(cached == *stored) << id << ": " << cached.size() << " bytes cached, stored " << stored->size();
  }
}
