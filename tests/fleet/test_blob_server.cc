// The coordinator's blob server (coordinator/fleet/blob_server.h) over a real
// store: a blob of several store chunks served to two workers in chunks
// whose bytes reassemble to the stored model, the whole blob to an old
// worker, a request past the end refused, an unknown or damaged blob
// answered as unknown, no serve() that waits for the store, the ranges
// kept for later workers within their byte budget, a worker's 1 MiB
// requests read once per store chunk, and the wake fd that says a read
// ended.
#include <gtest/gtest.h>
#include <poll.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/fleet/blob_server.h"
#include "pipeline/core/sha256.h"
#include "pipeline/store/store.h"
#include "tests/unit/temp_dir.h"

using namespace torq;
using pipeline::FleetMessage;

namespace {

std::string random_bytes(size_t n) {
  std::mt19937 rng(7);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

FleetMessage ask(const std::string& hash, uint64_t offset, uint32_t max) {
  const std::string wire = pipeline::encode_blob_request(hash, offset, max);
  return pipeline::decode_fleet_message(wire.data(), wire.size());
}

struct Worker {
  std::vector<FleetMessage> replies;
  std::vector<std::string> bad;
};

// serve() until each of `ids` has `want` answers (or 20 s): replies as the workers decode them.
void serve_until(coordinator::BlobServer& s, std::map<std::string, Worker>& workers, size_t want,
                 const std::vector<std::string>& ids) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto done = [&] {
    for (const auto& id : ids)
      if (workers[id].replies.size() + workers[id].bad.size() < want) return false;
    return true;
  };
  while (!done() && std::chrono::steady_clock::now() < until) {
    std::vector<std::pair<std::string, std::string>> sent;
    const auto t0 = std::chrono::steady_clock::now();
    s.serve(
        [&](const std::string& id, const std::string& payload) {
          sent.emplace_back(id, payload);
          return true;
        },
        [&](const std::string& id, const std::string& why) { workers[id].bad.push_back(why); });
    // The store is read on the loader thread: serve() only sends what is
    // there (a generous bound: loaded 2-core CI machines).
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1000));
    for (const auto& [id, payload] : sent)
      workers[id].replies.push_back(pipeline::decode_fleet_message(payload.data(), payload.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

TEST(BlobServer, ServesAStoredBlobChunkByChunkToTwoWorkersAndWholeToAnOldOne) {
  test::TempDir d{"torq-blob-server"};
  auto store = pipeline::Store::open(d.path());
  const std::string bytes = random_bytes(3 * pipeline::Store::kModelChunkBytes + 12345);
  const std::string hash = pipeline::sha256_hex(bytes);
  store->put_model(hash, bytes);
  std::vector<std::string> logs;
  coordinator::BlobServer server(*store, [&](const std::string& l) { logs.push_back(l); });
  std::map<std::string, Worker> workers;
  // Two workers fetch with 1 MB and 4 MB chunks at once (offsets that cross the store's chunks).
  const std::map<std::string, uint32_t> chunk = {{"a", 1u << 20}, {"b", pipeline::kMaxBlobChunkBytes}};
  std::map<std::string, std::string> got;
  for (size_t round = 0;; ++round) {
    std::vector<std::string> asked;
    for (const auto& [id, n] : chunk)
      if (got[id].size() < bytes.size()) {
        server.request(id, "worker " + id, ask(hash, got[id].size(), n));
        asked.push_back(id);
      }
    if (asked.empty()) break;
    ASSERT_LT(round, 100u);
    serve_until(server, workers, round + 1, asked);
    for (const auto& [id, n] : chunk) {
      if (workers[id].replies.size() != round + 1) continue;
      const FleetMessage& m = workers[id].replies.back();
      ASSERT_TRUE(m.blob_known);
      EXPECT_EQ(m.blob_total, bytes.size());
      EXPECT_EQ(m.blob_offset, got[id].size());
      EXPECT_EQ(m.blob.size(), std::min<size_t>(n, bytes.size() - got[id].size()));
      got[id] += m.blob;
    }
  }
  EXPECT_EQ(got["a"], bytes);
  EXPECT_EQ(got["b"], bytes);
  // A protocol-1 worker asks for the whole blob: one reply with all of it.
  server.request("c", "worker c", ask(hash, 0, 0));
  serve_until(server, workers, 1, {"c"});
  ASSERT_EQ(workers["c"].replies.size(), 1u);
  EXPECT_TRUE(workers["c"].replies[0].blob_known);
  EXPECT_EQ(workers["c"].replies[0].blob, bytes);
  // Past the end: a protocol error; an unknown hash: unknown.
  server.request("d", "worker d", ask(hash, bytes.size() + 1, 1024));
  server.request("e", "worker e", ask(std::string(64, 'f'), 0, 1024));
  serve_until(server, workers, 1, {"d", "e"});
  ASSERT_EQ(workers["d"].bad.size(), 1u);
  EXPECT_NE(workers["d"].bad[0].find("offset " + std::to_string(bytes.size() + 1)), std::string::npos);
  ASSERT_EQ(workers["e"].replies.size(), 1u);
  EXPECT_FALSE(workers["e"].replies[0].blob_known);
  EXPECT_TRUE(logs.empty() || logs.back().find("unknown model") != std::string::npos);
}

TEST(BlobServer, ADamagedBlobIsAnsweredAsUnknownAndLogged) {
  test::TempDir d{"torq-blob-server"};
  const std::string bytes = random_bytes(2 * pipeline::Store::kModelChunkBytes + 1);
  const std::string hash = pipeline::sha256_hex(bytes);
  pipeline::Store::open(d.path())->put_model(hash, bytes);
  {  // the blob's second chunk lost (a damaged store), through RocksDB itself
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), d.path(), &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> descs;
    for (const auto& n : names) descs.emplace_back(n, rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> h;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), d.path(), descs, &h, &db).ok());
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != "models") continue;
      ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), h[i], hash + "#00000001").ok());
    }
    for (auto* x : h) db->DestroyColumnFamilyHandle(x);
    delete db;
  }
  auto store = pipeline::Store::open(d.path());
  std::vector<std::string> logs;
  coordinator::BlobServer server(*store, [&](const std::string& l) { logs.push_back(l); });
  std::map<std::string, Worker> workers;
  server.request("a", "worker a", ask(hash, 0, pipeline::kMaxBlobChunkBytes));  // chunk 0: there
  serve_until(server, workers, 1, {"a"});
  server.request("a", "worker a", ask(hash, pipeline::kMaxBlobChunkBytes, pipeline::kMaxBlobChunkBytes));
  serve_until(server, workers, 2, {"a"});
  ASSERT_EQ(workers["a"].replies.size(), 2u);
  EXPECT_TRUE(workers["a"].replies[0].blob_known);
  EXPECT_EQ(workers["a"].replies[0].blob, bytes.substr(0, pipeline::kMaxBlobChunkBytes));
  EXPECT_FALSE(workers["a"].replies[1].blob_known);
  bool logged = false;
  for (const auto& l : logs) logged = logged || l.find("chunk 1 of 3 is missing") != std::string::npos;
  EXPECT_TRUE(logged);
}

// Two workers fetch two blobs at once, each with four 1 MB chunks asked
// ahead (as a worker's fetch window does), under a 2 MB budget for the kept
// ranges: both get their bytes, the kept ranges never hold more than the
// budget after a serve(), and a range evicted and asked for again is read
// again. Before the budget, each blob kept eight ranges for 10 s after
// their last use: the models just served, 60-100 MB of the coordinator's
// heap in a long matrix run (issue 32).
TEST(BlobServer, KeptRangesStayWithinTheirBudgetAcrossBlobs) {
  test::TempDir d{"torq-blob-server"};
  auto store = pipeline::Store::open(d.path());
  std::map<std::string, std::string> blob;  // worker -> the blob it fetches
  for (const char* id : {"a", "b"}) {
    std::string bytes = random_bytes(3 * pipeline::Store::kModelChunkBytes + 777);
    bytes[0] = id[0];  // two different blobs
    blob[id] = bytes;
    store->put_model(pipeline::sha256_hex(bytes), bytes);
  }
  constexpr uint64_t kBudget = 2 * pipeline::Store::kModelChunkBytes;  // ranges are whole store chunks
  constexpr uint32_t kChunk = 1u << 20;
  coordinator::BlobServer server(*store, [](const std::string&) {}, kBudget);
  std::map<std::string, std::string> got;
  std::map<std::string, uint64_t> asked;  // the next offset each worker asks for
  uint64_t most_kept = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((got["a"].size() < blob["a"].size() || got["b"].size() < blob["b"].size()) &&
         std::chrono::steady_clock::now() < until) {
    for (const char* id : {"a", "b"})  // up to four chunks out per worker
      while (asked[id] < blob[id].size() && asked[id] - got[id].size() < 4 * uint64_t{kChunk}) {
        server.request(id, std::string("worker ") + id, ask(pipeline::sha256_hex(blob[id]), asked[id], kChunk));
        asked[id] += kChunk;
      }
    server.serve(
        [&](const std::string& id, const std::string& payload) {
          const FleetMessage m = pipeline::decode_fleet_message(payload.data(), payload.size());
          EXPECT_TRUE(m.blob_known);
          EXPECT_EQ(m.blob_offset, got[id].size());
          got[id] += m.blob;
          return true;
        },
        [](const std::string& id, const std::string& why) { ADD_FAILURE() << id << ": " << why; });
    most_kept = std::max(most_kept, server.kept_bytes());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(got["a"], blob["a"]);
  EXPECT_EQ(got["b"], blob["b"]);
  EXPECT_LE(most_kept, kBudget);
  EXPECT_GE(most_kept, pipeline::Store::kModelChunkBytes);  // ranges are kept (for other workers), within the budget
  // A third worker fetches blob a again from the start: its first range was evicted, and is read again.
  const std::string hash_a = pipeline::sha256_hex(blob["a"]);
  std::map<std::string, Worker> workers;
  server.request("c", "worker c", ask(hash_a, 0, kChunk));
  serve_until(server, workers, 1, {"c"});
  ASSERT_EQ(workers["c"].replies.size(), 1u);
  EXPECT_EQ(workers["c"].replies[0].blob, blob["a"].substr(0, kChunk));
  EXPECT_LE(server.kept_bytes(), kBudget);
}

// A worker asks for 1 MiB at a time (worker/runner/fleet_worker.cc): each
// 4 MiB store chunk is read once for its four requests, and the loop that
// waits on wake_fd() is woken as each read ends, not by a timer.
TEST(BlobServer, OneMiBRequestsReadEachStoreChunkOnceAndWakeTheLoop) {
  test::TempDir d{"torq-blob-server"};
  auto store = pipeline::Store::open(d.path());
  const std::string bytes = random_bytes(3 * pipeline::Store::kModelChunkBytes + 4321);
  const std::string hash = pipeline::sha256_hex(bytes);
  store->put_model(hash, bytes);
  coordinator::BlobServer server(*store, [](const std::string&) {});
  constexpr uint32_t kAsk = 1u << 20;
  std::string got;
  uint64_t asked = 0;
  int wakes = 0, waits = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (got.size() < bytes.size() && std::chrono::steady_clock::now() < until) {
    for (; asked < bytes.size() && asked - got.size() < 8 * uint64_t{kAsk}; asked += kAsk)
      server.request("w", "worker w", ask(hash, asked, kAsk));
    server.serve(
        [&](const std::string&, const std::string& payload) {
          const FleetMessage m = pipeline::decode_fleet_message(payload.data(), payload.size());
          EXPECT_EQ(m.blob_offset, got.size());
          EXPECT_LE(m.blob.size(), kAsk);
          got += m.blob;
          return true;
        },
        [](const std::string& id, const std::string& why) { ADD_FAILURE() << id << ": " << why; });
    if (got.size() < bytes.size() && server.loading()) {  // as the broker does: sleep on the fd
      pollfd p{server.wake_fd(), POLLIN, 0};
      ++waits;
      wakes += poll(&p, 1, 5000) == 1;
    }
  }
  EXPECT_EQ(got, bytes);
  // The size, then one read per store chunk (4 of them): not one per request (13).
  EXPECT_EQ(server.reads(), 5u);
  EXPECT_EQ(wakes, waits) << "a wait on wake_fd() timed out while a read was under way";
  EXPECT_GE(waits, 1);
}
