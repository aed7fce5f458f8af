// Model blobs in the store (pipeline/store/store.h) on a real RocksDB:
// chunked writes read back whole and by range, a blob stored again
// compared chunk by chunk, an older store's whole blob still read, and a
// damaged or half-written blob told apart from a model (issue 32).
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pipeline/base/spawn.h"
#include "pipeline/store/store.h"
#include "tests/unit/temp_dir.h"

using namespace torq::pipeline;
using torq::test::TempDir;

namespace {

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Runs fn on the store's models column family through RocksDB itself (the
// store closed): what is really on disk, or an older store's layout.
void with_models_cf(const std::string& dir, const std::function<void(rocksdb::DB*, rocksdb::ColumnFamilyHandle*)>& fn) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& n : names) descs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), dir, descs, &handles, &db).ok());
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == "models") fn(db, handles[i]);
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  delete db;
}

std::vector<std::string> model_keys(const std::string& dir) {
  std::vector<std::string> keys;
  with_models_cf(dir, [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), cf));
    for (it->SeekToFirst(); it->Valid(); it->Next()) keys.push_back(it->key().ToString());
  });
  return keys;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const PipelineError& e) {
    return e.what();
  }
  return "";
}

// The bytes of the store's write-ahead logs (*.log) in dir.
uintmax_t log_bytes(const std::string& dir) {
  uintmax_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".log") n += e.file_size();
  return n;
}

constexpr size_t kChunk = Store::kModelChunkBytes;

}  // namespace

TEST(StoreModels, ABlobIsStoredInChunksAndReadBackWholeAndByRange) {
  TempDir d{"torq-store-models"};
  const std::string bytes = random_bytes(2 * kChunk + kChunk / 2 + 7, 1);
  {
    auto s = Store::open(d.path());
    // Handed over in odd pieces, as protobuf's 256 KB buffers never line up with chunks.
    s->put_model("h1", [&](const torq::base::ByteSink& sink) {
      for (size_t at = 0; at < bytes.size(); at += 100003) sink(bytes.data() + at, std::min<size_t>(100003, bytes.size() - at));
    });
    EXPECT_EQ(s->model_size("h1"), bytes.size());
  }
  // On disk: the manifest under the hash and three chunks, none the whole blob.
  EXPECT_EQ(model_keys(d.path()), (std::vector<std::string>{"h1", "h1#00000000", "h1#00000001", "h1#00000002"}));
  auto s = Store::open(d.path());
  EXPECT_EQ(s->get_model("h1"), bytes);
  EXPECT_EQ(s->model_size("h1"), bytes.size());
  EXPECT_EQ(s->read_model("h1", kChunk - 10, 20), bytes.substr(kChunk - 10, 20));  // across a chunk boundary
  EXPECT_EQ(s->read_model("h1", 0, 3 * kChunk), bytes);                            // more than there is
  EXPECT_EQ(s->read_model("h1", bytes.size() - 5, 100), bytes.substr(bytes.size() - 5));
  EXPECT_EQ(s->read_model("h1", bytes.size(), 100), std::string());
  EXPECT_EQ(s->read_model("h1", 2 * kChunk, kChunk), bytes.substr(2 * kChunk, kChunk));
  EXPECT_FALSE(s->get_model("h9").has_value());
  EXPECT_FALSE(s->model_size("h9").has_value());
  EXPECT_FALSE(s->read_model("h9", 0, 1).has_value());
}

// A process that stored a model and was then SIGKILLed (no close, no
// flush at exit): the model is whole in the store it left. Its chunks
// never went through the write-ahead log (a nightly's GBs of models went
// through it twice, issue 32): they are only in the flushed files, which
// is what makes them survive the kill.
TEST(StoreModels, AStoredModelSurvivesAKillWithoutPassingThroughTheLog) {
  TempDir d{"torq-store-models"};
  // Three chunks, less than the models memtable (16 MB): nothing flushes
  // them but put_model itself.
  const size_t size = 3 * kChunk - 11;
  const unsigned seed = 7;
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  torq::base::SpawnOptions so;
  so.stdout_fd = fds[1];
  const pid_t pid = torq::base::spawn_process(
                        {TORQ_STORE_WRITER, d.path(), "h1", std::to_string(size), std::to_string(seed)}, so)
                        .pid;
  close(fds[1]);
  char said[16] = {};
  const ssize_t got = read(fds[0], said, sizeof said - 1);  // blocks until it stored or died
  close(fds[0]);
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_EQ(std::string(said, got > 0 ? got : 0), "stored\n") << "writer status " << status;
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "writer status " << status;
  // The log holds the manifest and a run record written before the model
  // (which keeps the log it is in), not 12 MB of chunks.
  EXPECT_LT(log_bytes(d.path()), uintmax_t{64} << 10);
  auto s = Store::open(d.path());
  EXPECT_EQ(s->model_size("h1"), size);
  EXPECT_EQ(s->get_model("h1"), random_bytes(size, seed));
}

TEST(StoreModels, StoringAHashAgainComparesEveryChunk) {
  TempDir d{"torq-store-models"};
  const std::string bytes = random_bytes(3 * kChunk, 2);
  auto s = Store::open(d.path());
  s->put_model("h", bytes);
  s->put_model("h", bytes);  // the same bytes: a no-op
  std::string last = bytes;
  last.back() ^= 1;  // differs in the last byte of the last chunk only
  for (const std::string& other : {last, bytes.substr(0, bytes.size() - 1), bytes + "x", std::string("y")})
    EXPECT_NE(error_of([&] { s->put_model("h", other); }).find("'h' is already stored with different bytes"),
              std::string::npos)
        << other.size();
  EXPECT_EQ(s->get_model("h"), bytes);
}

TEST(StoreModels, AnOlderStoresWholeBlobIsStillReadAndCompared) {
  TempDir d{"torq-store-models"};
  Store::open(d.path());  // creates the column families
  const std::string bytes = random_bytes(kChunk + 3, 3);
  with_models_cf(d.path(), [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), cf, "old", bytes).ok());
  });
  auto s = Store::open(d.path());
  EXPECT_EQ(s->get_model("old"), bytes);
  EXPECT_EQ(s->model_size("old"), bytes.size());
  EXPECT_EQ(s->read_model("old", kChunk, 10), bytes.substr(kChunk));
  s->put_model("old", bytes);
  EXPECT_NE(error_of([&] { s->put_model("old", bytes.substr(1)); }).find("different bytes"), std::string::npos);
}

TEST(StoreModels, AMissingChunkIsAnErrorAndAMissingManifestNoModel) {
  TempDir d{"torq-store-models"};
  const std::string bytes = random_bytes(2 * kChunk + 1, 4);
  Store::open(d.path())->put_model("h", bytes);
  with_models_cf(d.path(), [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
    ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), cf, "h#00000001").ok());
  });
  {
    auto s = Store::open(d.path());
    const std::string why = error_of([&] { s->get_model("h"); });
    EXPECT_NE(why.find("model hash 'h': chunk 1 of 3 is missing"), std::string::npos) << why;
    EXPECT_EQ(s->read_model("h", 0, 10), bytes.substr(0, 10));  // the chunks that are there still read
  }
  // A writer killed before its manifest: chunks without one are no model, and storing it again completes it.
  with_models_cf(d.path(), [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
    ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), cf, "h").ok());
  });
  auto s = Store::open(d.path());
  EXPECT_FALSE(s->get_model("h").has_value());
  s->put_model("h", bytes);
  EXPECT_EQ(s->get_model("h"), bytes);
}

TEST(StoreModels, ADamagedManifestIsAnError) {
  TempDir d{"torq-store-models"};
  Store::open(d.path())->put_model("h", random_bytes(10, 5));
  with_models_cf(d.path(), [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), cf, "h", std::string("\0torq-model-chunks v1 10 7 4194304", 34)).ok());
  });
  auto s = Store::open(d.path());
  const std::string why = error_of([&] { s->get_model("h"); });
  EXPECT_NE(why.find("model hash 'h': damaged manifest '10 7 4194304'"), std::string::npos) << why;
}
