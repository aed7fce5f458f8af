// Opening the store (store.h): RocksDB with its five column families and
// their options, the checks of a damaged store (its logs replayed strictly,
// every table's checksums read, the seal compared), and closing it.
#include <atomic>
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/metadata.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "pipeline/store/store.h"
#include "pipeline/store/store_io.h"
#include "pipeline/store/store_merge.h"

namespace torq::pipeline {

using namespace store_detail;  // NOLINT(google-build-using-namespace)

namespace {

// RocksDB's own diagnostics: errors to stderr, the rest nowhere. Its
// default logger writes a LOG file into the store, and once a write to it
// failed (a full disk) its next append is an assertion in Debian's build:
// the coordinator died with SIGABRT instead of reporting the store's write
// error (issue 30). The store's own errors are ours to report.
// Warnings that name damage ("<dir>/000034.log: dropping 1165 bytes;
// Corruption: checksum mismatch": the only place RocksDB names a damaged
// log file) are kept, the last few, for open()'s error.
class StoreLogger : public rocksdb::Logger {
 public:
  StoreLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < rocksdb::InfoLogLevel::WARN_LEVEL || level == rocksdb::InfoLogLevel::HEADER_LEVEL) return;
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    if (level == rocksdb::InfoLogLevel::WARN_LEVEL) {
      if (!std::strstr(line, "Corruption") || std::strstr(line, "DB::Open() failed")) return;
      std::lock_guard<std::mutex> lock(mu_);
      if (damage_.size() == 4) damage_.erase(damage_.begin());
      damage_.emplace_back(line);
      return;
    }
    // Opening a new store, RocksDB lists its directory before creating it
    // and logs the miss as an error: a first run is not an error.
    if (std::strncmp(line, "Error when reading", 18) == 0 && std::strstr(line, "NotFound")) return;
    std::fprintf(stderr, "[rocksdb] %s\n", line);
  }
  // The damage warnings logged so far, "; "-separated.
  std::string damage() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& l : damage_) out += (out.empty() ? "" : "; ") + l;
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> damage_;
};

// The MANIFEST that CURRENT names (RocksDB replaces it at open), or "".
std::string current_manifest(const std::string& dir) {
  std::FILE* f = std::fopen((dir + "/CURRENT").c_str(), "r");
  if (!f) return "";
  char name[256] = {0};
  const bool ok = std::fgets(name, sizeof name, f) != nullptr;
  std::fclose(f);
  std::string n = ok ? name : "";
  while (!n.empty() && (n.back() == '\n' || n.back() == '\r')) n.pop_back();
  return n;
}

// The column family of the live table file that RocksDB's message `msg`
// names ("... in <dir>/000023.sst offset ..."), or "".
std::string column_family_of_table(rocksdb::DB* db, const std::string& msg) {
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  for (const auto& f : files)
    if (!f.name.empty() && msg.find((f.name[0] == '/' ? "" : "/") + f.name + " ") != std::string::npos)
      return f.column_family_name;
  return "";
}

}  // namespace

std::unique_ptr<Store> Store::open(const std::string& dir) {
  if (dir.empty()) throw PipelineError("cannot open store: empty directory path");
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  const auto logger = std::make_shared<StoreLogger>();
  db_opts.info_log = logger;
  // A log record damaged before the log's end fails the open; a torn last
  // record (a writer killed mid-append) is dropped (store.h: Verification).
  db_opts.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  // One writer at a time (the coordinator's thread, or its cache writer's
  // batches); the job states' vector memtable cannot take concurrent inserts.
  db_opts.allow_concurrent_memtable_write = false;
  // A writer that finds another writing waits on a condition variable, not
  // spinning in sched_yield (RocksDB's default): with every core running
  // jobs, the coordinator's and its cache writer's spins took a tenth of a
  // core from them.
  db_opts.enable_write_thread_adaptive_yield = false;
  // After a crash (a SIGKILLed coordinator) the write-ahead log is replayed
  // into memtables before the run can resume: at most 64 MB of it, as the
  // column families holding the oldest entries are flushed once the log
  // reaches that (a million-job run killed half-way replayed ~2.5 s of log
  // with the default, which waits for four times the memtables' size).
  db_opts.max_total_wal_size = uint64_t{64} << 20;

  // One block cache for every column family, of a fixed size: without it
  // each table factory made its own 8 MB one, and those filled as a run read
  // more (a coordinator's memory grew with the models of a spec, issue 32).
  std::shared_ptr<rocksdb::Cache> block_cache = rocksdb::NewLRUCache(kBlockCacheBytes);
  const auto table_factory = [&](bool filter) {
    rocksdb::BlockBasedTableOptions t;
    t.block_cache = block_cache;
    if (filter) t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    return std::shared_ptr<rocksdb::TableFactory>(rocksdb::NewBlockBasedTableFactory(t));
  };
  rocksdb::ColumnFamilyOptions plain;
  plain.table_factory = table_factory(false);
  // Results and cache entries are read by point lookups, most of which find
  // nothing in a run that is not resumed (a layer not yet tested, a layer
  // never cached): a Bloom filter (10 bits a key, ~1% false positives)
  // answers those without reading a block. A resumed million-job run spent
  // a third of a core reading blocks for such misses (issue 32).
  rocksdb::ColumnFamilyOptions looked_up;
  looked_up.table_factory = table_factory(true);
  rocksdb::ColumnFamilyOptions merged = looked_up;
  merged.merge_operator = store_detail::make_layer_record_merge_operator();
  // A run's keys start with its 16-digit id and "/"; within a run, jobs and
  // results are written in nearly key order (layer by layer), so a memtable
  // insert starts from where the run's last one went instead of searching
  // the skip list from its top (a third of the coordinator's dispatch time).
  std::shared_ptr<const rocksdb::SliceTransform> run_prefix(rocksdb::NewFixedPrefixTransform(17));
  plain.memtable_insert_with_hint_prefix_extractor = run_prefix;
  merged.memtable_insert_with_hint_prefix_extractor = run_prefix;
  looked_up.memtable_insert_with_hint_prefix_extractor = run_prefix;

  // Open every column family already in the directory (RocksDB requires it),
  // plus ours. ListColumnFamilies fails on a new directory: then only ours.
  std::vector<std::string> names = {rocksdb::kDefaultColumnFamilyName, kModels, kJobs, kResults, kCache, kRuns};
  std::vector<std::string> existing;
  if (rocksdb::DB::ListColumnFamilies(db_opts, dir, &existing).ok())
    for (const auto& n : existing)
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  // Job states are written three times per job (queued or leased, done)
  // and read only by a scan when a run resumes: an append-only memtable,
  // sorted once when flushed or scanned, instead of a skip list insert each.
  rocksdb::ColumnFamilyOptions job_states = plain;
  job_states.memtable_factory = std::make_shared<rocksdb::VectorRepFactory>();
  // Model blobs (chunks of Store::kModelChunkBytes) go to blob files when
  // flushed, so compactions move only their small references, and through
  // small memtables: storing a 346 MB model holds at most two of them.
  rocksdb::ColumnFamilyOptions blobs = plain;
  blobs.enable_blob_files = true;
  blobs.min_blob_size = 4096;
  blobs.write_buffer_size = size_t{16} << 20;
  // Run records (the history: every layer of every test of a run, written
  // once at its end, ~100 MB for 160 models) through small memtables too:
  // with the default 64 MB ones they stayed in the coordinator's memory
  // until it exited (issue 32).
  rocksdb::ColumnFamilyOptions records = plain;
  records.write_buffer_size = size_t{8} << 20;
  for (const auto& n : names)
    descs.emplace_back(n, n == kResults ? merged
                          : n == kJobs  ? job_states
                          : n == kModels ? blobs
                          : n == kRuns   ? records
                          : n == kCache  ? looked_up
                                         : plain);

  std::unique_ptr<Store> s(new Store());
  s->dir_ = dir;
  const std::string manifest = current_manifest(dir);
  const rocksdb::Status st = rocksdb::DB::Open(db_opts, dir, descs, &s->handles_, &s->db_);
  if (!st.ok()) {
    const std::string msg = st.ToString();
    if (st.IsIOError() && msg.find("/LOCK") != std::string::npos)
      throw PipelineError("cannot open store '" + dir +
                          "': it is already open (locked) by another process or by another Store in this process "
                          "(RocksDB lock file " + dir + "/LOCK): " + msg);
    if (st.IsCorruption()) {
      const std::string logged = logger->damage();
      throw_damage(dir, "", "cannot open: " + msg + (logged.empty() ? "" : " (RocksDB: " + logged + ")"));
    }
    throw PipelineError("cannot open store '" + dir + "': " + msg);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == kModels) s->models_ = s->handles_[i];
    if (names[i] == kJobs) s->jobs_ = s->handles_[i];
    if (names[i] == kResults) s->results_ = s->handles_[i];
    if (names[i] == kCache) s->cache_ = s->handles_[i];
    if (names[i] == kRuns) s->runs_ = s->handles_[i];
  }
  // Nothing of a damaged store is sealed: its next open says the same.
  s->seal_on_close_ = false;
  // Every live table read once: a damaged block fails here, naming its
  // file, not in whatever read meets it later.
  if (const rocksdb::Status v = s->db_->VerifyChecksum(); !v.ok()) {
    const std::string msg = v.ToString(), cf = column_family_of_table(s->db_, msg);
    throw_damage(dir, cf, "a table file" + (cf.empty() ? std::string() : " of column family '" + cf + "'") +
                              " fails verification: " + msg);
  }
  s->check_seal(manifest);
  s->seal_on_close_ = true;
  return s;
}

uint64_t Store::memory_bytes() const {
  uint64_t total = 0;
  for (const char* property : {"rocksdb.cur-size-all-mem-tables", "rocksdb.estimate-table-readers-mem"}) {
    uint64_t v = 0;
    if (db_->GetAggregatedIntProperty(property, &v)) total += v;
  }
  uint64_t cache = 0;  // one cache for every column family: asked of one
  if (db_->GetIntProperty(results_, "rocksdb.block-cache-usage", &cache)) total += cache;
  return total;
}

namespace {
std::atomic<bool> g_write_failed{false};
}  // namespace

StoreWriteError::StoreWriteError(const std::string& message) : PipelineError(message) { g_write_failed = true; }

bool store_write_failed() { return g_write_failed; }

Store::~Store() {
  if (!db_) return;
  // After a failed write the seal stays as it was: the next open finds the
  // store at or past it (what was committed is kept), and says nothing lost.
  if (seal_on_close_ && !store_write_failed()) {
    try {
      std::lock_guard<std::mutex> lock(seal_mu_);
      write_seal();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "torq store '%s': close: %s\n", dir_.c_str(), e.what());
    }
  }
  for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
  const rocksdb::Status st = db_->Close();
  if (!st.ok()) std::fprintf(stderr, "torq store '%s': close: %s\n", dir_.c_str(), st.ToString().c_str());
  delete db_;
}

}  // namespace torq::pipeline
