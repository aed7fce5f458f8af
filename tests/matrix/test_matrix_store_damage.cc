// Store damage is the store's, never a test's (issue 60). The real
// torq-coordinator runs a spec (the demo CNN, local workers) into a real
// RocksDB store; the test damages that store the ways a disk, a tool or a
// person does — a byte flipped in a model blob's value (its SHA-256 then
// fails), in a blob file, in a table (SST) file or in the write-ahead log,
// one byte cut off the MANIFEST — and runs the spec again, and a --model
// run on the same store. Each must stop with exit 2, name the file (or the
// column family and key) and the store, give the repair hint (what is
// recomputed, what is lost), and write no outcome, JUnit line or history
// record from it. Before the fix a flipped blob made the test
// `failed [FAILED_FE_COMPILATION]` (exit 1, "still failing" ever after), a
// damaged log or a MANIFEST cut short silently lost the latest run's
// history (the next run took its number), and no error said how to repair.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pipeline/model/model_import.h"
#include "pipeline/store/run_history.h"
#include "pipeline/store/store.h"
#include "tests/fleet/fleet_harness.h"
#include "tests/matrix/matrix_helpers.h"

using namespace torq::fleet_test;
namespace fs = std::filesystem;

namespace {

// The byte at `offset` of `path` XORed with 1 (doing it twice restores the file).
void flip(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << path;
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  ASSERT_TRUE(f.get(c)) << path << " offset " << offset;
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 1));
  ASSERT_TRUE(f.good()) << path;
}

// The largest file of `dir` whose name ends in `ext`, or "".
std::string largest(const std::string& dir, const std::string& ext) {
  std::string best;
  uintmax_t size = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0 && e.file_size() >= size) {
      size = e.file_size();
      best = e.path().string();
    }
  }
  return best;
}

// RocksDB opened directly, every column family with default options (as
// the other store tests damage a store "through RocksDB itself").
class RawDb {
 public:
  explicit RawDb(const std::string& dir, bool read_only) {
    std::vector<std::string> names;
    EXPECT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> descs;
    for (const auto& n : names) descs.emplace_back(n, rocksdb::ColumnFamilyOptions());
    const rocksdb::Status st = read_only ? rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), dir, descs, &h_, &db_)
                                         : rocksdb::DB::Open(rocksdb::DBOptions(), dir, descs, &h_, &db_);
    EXPECT_TRUE(st.ok()) << st.ToString();
    names_ = names;
  }
  ~RawDb() {
    for (auto* x : h_) db_->DestroyColumnFamilyHandle(x);
    delete db_;
  }
  rocksdb::ColumnFamilyHandle* cf(const std::string& name) const {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return h_[i];
    ADD_FAILURE() << "no column family " << name;
    return nullptr;
  }
  rocksdb::DB* db() const { return db_; }

 private:
  rocksdb::DB* db_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> h_;
  std::vector<std::string> names_;
};

class StoreDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("store-damage-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ + "/models");
    auto [code, out] = run({bin("torq-sim"), "demo", "--save", model()}, dir_ + "/demo.log");
    ASSERT_EQ(code, 0) << out;
    write(spec(), "models:\n  - models/demo.onnx\nvariants: [fp32]\nmodes: [discover]\n");
    const auto [first, first_out] = rerun("first");
    ASSERT_EQ(first, 0) << first_out;
    ASSERT_NE(first_out.find("history   run 1 of this spec"), std::string::npos) << first_out;
  }

  std::string model() const { return dir_ + "/models/demo.onnx"; }
  std::string spec() const { return dir_ + "/spec.yaml"; }
  std::string store() const { return dir_ + "/out/.torq-store"; }

  // The spec run again into the same export directory (and store).
  std::pair<int, std::string> rerun(const std::string& name) const {
    return run({bin("torq-coordinator"), "--spec", spec(), "--export", dir_ + "/out", "--local-workers", "1",
                "--heartbeat-ms", "200"},
               dir_ + "/" + name + ".log");
  }
  // A --model run on the store (no worker: a damaged store stops it first).
  std::pair<int, std::string> model_run(const std::string& name) const {
    return run({bin("torq-coordinator"), "--model", model(), "--db", store(), "--bind", endpoint(free_port()),
                "--export", dir_ + "/" + name, "--heartbeat-ms", "200"},
               dir_ + "/" + name + ".log", 60000);
  }
  size_t runs_in_history() const {
    auto s = torq::pipeline::Store::open(store());
    return torq::pipeline::history::History(*s, spec()).runs().size();
  }

  // A run stopped by the store: exit 2, the error names the store and
  // `names`, says what it costs (`cost`) and how to repair; no test ran to
  // an outcome and no junit.xml or summary.json was written.
  void expect_stopped_by_store(const std::pair<int, std::string>& r, const std::string& names,
                               const std::string& cost) const {
    const auto& [code, out] = r;
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find("torq-coordinator: error: store '" + store() + "'"), std::string::npos) << out;
    EXPECT_NE(out.find(names), std::string::npos) << "no '" << names << "' in:\n" << out;
    EXPECT_NE(out.find(cost), std::string::npos) << "no '" << cost << "' in:\n" << out;
    EXPECT_EQ(out.find("FAILED_FE_COMPILATION"), std::string::npos) << out;
    EXPECT_EQ(out.find("] test 1/1: "), std::string::npos) << out;  // no test's outcome
    EXPECT_EQ(out.find("history   run"), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(dir_ + "/out/junit.xml"));
    EXPECT_FALSE(fs::exists(dir_ + "/out/summary.json"));
  }
  // The same for a --model run: exit 2, the names, the way back, no report written.
  void expect_model_run_stopped(const std::string& name, const std::string& names) const {
    const auto [code, out] = model_run(name);
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find(names), std::string::npos) << "no '" << names << "' in:\n" << out;
    EXPECT_NE(out.find("restore '" + store() + "' from a backup"), std::string::npos) << out;
    EXPECT_TRUE(!fs::exists(dir_ + "/" + name) || fs::is_empty(dir_ + "/" + name));
  }
  // After the damage is undone: the spec's next run is run `next` (nothing
  // was recorded from the stopped runs) and passes.
  void expect_next_run(int next) const {
    EXPECT_EQ(runs_in_history(), static_cast<size_t>(next - 1));
    const auto [code, out] = rerun("after");
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("history   run " + std::to_string(next) + " of this spec"), std::string::npos) << out;
  }

  std::string dir_;
};

const std::string kRepair = "To repair: move the store aside";

}  // namespace

// A byte flipped in the value of the stored blob (written through RocksDB,
// so its checksums pass): the stored bytes fail the SHA-256 their key
// names while the model file is intact. Before: the test failed with
// FAILED_FE_COMPILATION ("already stored with different bytes"), exit 1.
TEST_F(StoreDamage, AFlippedByteInAModelBlobValueStopsTheRunNotTheTest) {
  const std::string hash = torq::pipeline::ImportedModel::from_file(model())->hash();
  const std::string key = hash + "#00000000";
  std::string original;
  {
    RawDb raw(store(), false);
    ASSERT_TRUE(raw.db()->Get(rocksdb::ReadOptions(), raw.cf("models"), key, &original).ok()) << key;
    std::string damaged = original;
    damaged[damaged.size() / 2] ^= 1;
    ASSERT_TRUE(raw.db()->Put(rocksdb::WriteOptions(), raw.cf("models"), key, damaged).ok());
  }
  const std::string names = "model hash '" + hash + "' is already stored with different bytes";
  expect_stopped_by_store(rerun("damaged"), names, "Nothing is lost: a model blob is a copy of its model file");
  expect_stopped_by_store(rerun("again"), names, kRepair);  // every rerun, not a test "still failing"
  expect_model_run_stopped("model-out", names);
  {
    RawDb raw(store(), false);
    ASSERT_TRUE(raw.db()->Put(rocksdb::WriteOptions(), raw.cf("models"), key, original).ok());
  }
  expect_next_run(2);
}

// A byte flipped in the blob file on disk: RocksDB's record checksum fails.
TEST_F(StoreDamage, AFlippedByteInABlobFileStopsTheRunNamingTheKey) {
  const std::string blob = largest(store(), ".blob");
  ASSERT_FALSE(blob.empty());
  const uint64_t at = fs::file_size(blob) / 2;
  flip(blob, at);
  const std::string hash = torq::pipeline::ImportedModel::from_file(model())->hash();
  const std::string names = "cannot read models key '" + hash + "#00000000': Corruption: Blob CRC mismatch";
  expect_stopped_by_store(rerun("damaged"), names, "Nothing is lost: a model blob is a copy of its model file");
  expect_model_run_stopped("model-out", names);
  flip(blob, at);
  expect_next_run(2);
}

// A byte flipped in the middle of the run history's table file: found when
// the store opens (every live table's checksums are read), named with its
// column family.
TEST_F(StoreDamage, AFlippedByteInAnSstFileStopsTheRunNamingTheFile) {
  std::string sst;
  uint64_t size = 0;
  {
    RawDb raw(store(), true);
    std::vector<rocksdb::LiveFileMetaData> files;
    raw.db()->GetLiveFilesMetaData(&files);
    for (const auto& f : files)
      if (f.column_family_name == "runs" && f.size >= size) {
        size = f.size;
        sst = store() + "/" + fs::path(f.name).filename().string();
      }
  }
  ASSERT_FALSE(sst.empty());
  const uint64_t at = 10;  // in its first data block (RocksDB reads no data block when it opens a table)
  flip(sst, at);
  const std::string names = "a table file of column family 'runs' fails verification: Corruption: block checksum "
                            "mismatch";
  expect_stopped_by_store(rerun("damaged"), names, "Lost: the run history");
  expect_stopped_by_store(rerun("again"), "in " + sst + " offset", kRepair);
  expect_model_run_stopped("model-out", sst);
  flip(sst, at);
  expect_next_run(2);
}

// One byte cut off the MANIFEST after its last edit recorded the table
// that holds run 2's history: RocksDB opens the store without a word and
// deletes that table. Before: the next run called itself run 2. Now the
// seal says what is lost; removing it accepts the loss.
TEST_F(StoreDamage, AManifestCutShortIsALossSaidNotASilentlyShorterHistory) {
  const auto [second, second_out] = rerun("second");
  ASSERT_EQ(second, 0) << second_out;
  ASSERT_NE(second_out.find("history   run 2 of this spec"), std::string::npos) << second_out;
  // A reader of the store (diff) opens it: the log holding run 2 is replayed
  // into a table, recorded by the MANIFEST's last edit.
  const auto [diff, diff_out] = run({bin("torq-coordinator"), "diff", "--export", dir_ + "/out", "--spec", spec()},
                                    dir_ + "/diff.log");
  ASSERT_EQ(diff, 0) << diff_out;
  const std::string manifest = store() + "/" + [&] {
    std::string n = slurp(store() + "/CURRENT");
    while (!n.empty() && n.back() == '\n') n.pop_back();
    return n;
  }();
  fs::resize_file(manifest, fs::file_size(manifest) - 1);
  const std::string seal = store() + "/torq-seal.json";
  const std::string lost = "the store lost writes";
  const auto cut = rerun("cut");
  expect_stopped_by_store(cut, "lost: 1 of the 2 runs in the history of spec '" + spec() + "' (1 left)",
                          "remove " + seal + " (the loss is accepted");
  EXPECT_NE(cut.second.find("Its MANIFEST (" + manifest + ", replaced at this open)"), std::string::npos)
      << cut.second;
  expect_stopped_by_store(rerun("again"), lost, "restore '" + store() + "' from a backup");
  expect_model_run_stopped("model-out", lost);
  // The loss accepted: the history goes on from what is left.
  ASSERT_TRUE(fs::remove(seal));
  expect_next_run(2);
}

// A byte flipped in the write-ahead log that holds run 2 (a run's last
// writes stay in the log until the next open): RocksDB's default replay
// stopped at the damage and dropped the rest, run 2's history with it.
TEST_F(StoreDamage, AFlippedByteInTheWriteAheadLogStopsTheRunNamingTheLog) {
  const auto [second, second_out] = rerun("second");
  ASSERT_EQ(second, 0) << second_out;
  const std::string log = largest(store(), ".log");
  ASSERT_FALSE(log.empty());
  ASSERT_GT(fs::file_size(log), 1000u) << log;
  const uint64_t at = fs::file_size(log) / 2;
  flip(log, at);
  const std::string names = log + ": dropping ";
  expect_stopped_by_store(rerun("damaged"), names, "run history held there is lost");
  expect_stopped_by_store(rerun("again"), "Corruption: checksum mismatch", kRepair);
  expect_model_run_stopped("model-out", names);
  flip(log, at);
  expect_next_run(3);
}
