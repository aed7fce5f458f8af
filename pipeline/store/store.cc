// The durable store (store.h): opening RocksDB with its five column
// families, key layout, synced writes, and decoding reads into
// PipelineErrors that name the key.
#include "pipeline/store/store.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/options.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "pipeline/wire/codec.h"
#include "pipeline/store/store_merge.h"
#include "pipeline/store/store_io.h"

namespace torq::pipeline {

using namespace store_detail;  // NOLINT(google-build-using-namespace)

namespace {

constexpr const char* kJobs = "jobs";
constexpr const char* kResults = "results";
constexpr const char* kCache = "cache";
constexpr const char* kRuns = "runs";

void check_component(const std::string& dir, const char* what, const std::string& v) {
  if (v.empty()) throw PipelineError(fail_prefix(dir) + "empty " + what);
  if (v.find('/') != std::string::npos)
    throw PipelineError(fail_prefix(dir) + what + " '" + v + "' must not contain '/'");
}

std::string layer_prefix(const std::string& dir, const std::string& run, const std::string& hash) {
  check_component(dir, "run id", run);
  check_component(dir, "model hash", hash);
  return run + "/" + hash + "/";
}

std::string result_key(const std::string& dir, const std::string& run, const std::string& hash, int layer) {
  if (layer < 0 || layer > 99999999)
    throw PipelineError(fail_prefix(dir) + "layer index " + std::to_string(layer) + " out of range");
  char digits[16];
  std::snprintf(digits, sizeof digits, "%0*d", Store::kLayerDigits, layer);
  return layer_prefix(dir, run, hash) + digits;
}

std::string job_key(const std::string& dir, const std::string& run, const std::string& job_id) {
  check_component(dir, "run id", run);
  check_nonempty(dir, "job id", job_id);
  return run + "/" + job_id;
}

void check_job_value(const std::string& dir, char state, const std::string& encoded_job, const std::string& key) {
  if (state != 'Q' && state != 'L' && state != 'D')
    throw PipelineError(fail_prefix(dir) + "job state '" + std::string(1, state) + "' of jobs key '" + key +
                        "' is not Q, L or D");
  try {
    validate_job(encoded_job.data(), encoded_job.size());
  } catch (const PipelineError& e) {
    throw PipelineError(fail_prefix(dir) + "job of jobs key '" + key + "' is not a valid encoded job: " + e.what());
  }
}

std::string job_value(char state, const std::string& encoded_job) {
  std::string v;
  v.reserve(1 + encoded_job.size());
  v.push_back(state);
  v += encoded_job;
  return v;
}

// A lease with its holder: 'l', the holder's length (2 bytes, little
// endian), the holder, the encoded job. Read back as state 'L'.
constexpr char kLeaseWithHolder = 'l';
std::string lease_value(const std::string& holder, const std::string& encoded_job) {
  std::string v;
  v.reserve(3 + holder.size() + encoded_job.size());
  v.push_back(kLeaseWithHolder);
  v.push_back(static_cast<char>(holder.size() & 0xff));
  v.push_back(static_cast<char>(holder.size() >> 8));
  v += holder;
  v += encoded_job;
  return v;
}

void sort_by_priority(std::vector<ExecResult>& rs) {
  std::stable_sort(rs.begin(), rs.end(), [](const ExecResult& a, const ExecResult& b) {
    return static_cast<int>(a.executor) < static_cast<int>(b.executor);
  });
}

std::vector<ExecResult> decode_record(const std::string& dir, const std::string& key, const rocksdb::Slice& v) {
  try {
    auto rs = decode_layer_record(v.data(), v.size());
    sort_by_priority(rs);
    return rs;
  } catch (const PipelineError& e) {
    throw PipelineError(fail_prefix(dir) + "corrupt layer record at results key '" + key + "': " + e.what());
  }
}

// RocksDB's own diagnostics: errors to stderr, the rest nowhere. Its
// default logger writes a LOG file into the store, and once a write to it
// failed (a full disk) its next append is an assertion in Debian's build:
// the coordinator died with SIGABRT instead of reporting the store's write
// error (issue 30). The store's own errors are ours to report.
class StoreLogger : public rocksdb::Logger {
 public:
  StoreLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::ERROR_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < rocksdb::InfoLogLevel::ERROR_LEVEL || level == rocksdb::InfoLogLevel::HEADER_LEVEL) return;
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    // Opening a new store, RocksDB lists its directory before creating it
    // and logs the miss as an error: a first run is not an error.
    if (std::strncmp(line, "Error when reading", 18) == 0 && std::strstr(line, "NotFound")) return;
    std::fprintf(stderr, "[rocksdb] %s\n", line);
  }
};

}  // namespace

std::unique_ptr<Store> Store::open(const std::string& dir) {
  if (dir.empty()) throw PipelineError("cannot open store: empty directory path");
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  db_opts.info_log = std::make_shared<StoreLogger>();
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
  const rocksdb::Status st = rocksdb::DB::Open(db_opts, dir, descs, &s->handles_, &s->db_);
  if (!st.ok()) {
    const std::string msg = st.ToString();
    if (st.IsIOError() && msg.find("/LOCK") != std::string::npos)
      throw PipelineError("cannot open store '" + dir +
                          "': it is already open (locked) by another process or by another Store in this process "
                          "(RocksDB lock file " + dir + "/LOCK): " + msg);
    throw PipelineError("cannot open store '" + dir + "': " + msg);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == kModels) s->models_ = s->handles_[i];
    if (names[i] == kJobs) s->jobs_ = s->handles_[i];
    if (names[i] == kResults) s->results_ = s->handles_[i];
    if (names[i] == kCache) s->cache_ = s->handles_[i];
    if (names[i] == kRuns) s->runs_ = s->handles_[i];
  }
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

Store::~Store() {
  if (!db_) return;
  for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
  const rocksdb::Status st = db_->Close();
  if (!st.ok()) std::fprintf(stderr, "torq store '%s': close: %s\n", dir_.c_str(), st.ToString().c_str());
  delete db_;
}

namespace {

// Calls fn(key, value) for every key of `cf` starting with `prefix`, in key
// order, on one consistent snapshot.
template <class Fn>
void scan(const std::string& dir, rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const char* cf_name,
          const std::string& prefix, Fn&& fn) {
  rocksdb::ReadOptions ro;
  std::string upper = prefix;
  upper.back() = static_cast<char>(upper.back() + 1);  // prefixes end in '/'; '/' + 1 == '0'
  rocksdb::Slice upper_slice(upper);
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro, cf));
  for (it->Seek(prefix); it->Valid(); it->Next()) fn(it->key().ToString(), it->value());
  if (!it->status().ok())
    throw PipelineError(fail_prefix(dir) + "cannot scan " + cf_name + " keys '" + prefix + "*': " +
                        it->status().ToString());
}

}  // namespace

void Store::merge_result(const std::string& run, const std::string& model_hash, int layer, const ExecResult& r) {
  const std::string key = result_key(dir_, run, model_hash, layer);
  check_write(dir_, db_->Merge(synced(), results_, key, encode_result(r)), kResults, key);
}

std::vector<ExecResult> Store::layer_results(const std::string& run, const std::string& model_hash,
                                             int layer) const {
  const std::string key = result_key(dir_, run, model_hash, layer);
  const auto v = get(dir_, db_, results_, kResults, key);
  if (!v) return {};
  return decode_record(dir_, key, *v);
}

std::unique_ptr<Store::LayerCursor> Store::layer_cursor(const std::string& run, const std::string& model_hash) const {
  layer_prefix(dir_, run, model_hash);  // checks the components
  return std::unique_ptr<LayerCursor>(new LayerCursor(*this, run, model_hash));
}

Store::LayerCursor::LayerCursor(const Store& store, std::string run, std::string model_hash)
    : store_(store),
      run_(std::move(run)),
      hash_(std::move(model_hash)) {}

Store::LayerCursor::~LayerCursor() = default;

void Store::LayerCursor::renew() {
  // No upper bound: at() compares keys itself (a bound's Slice would have to
  // outlive the iterator), and it stops at the first key past the target.
  it_.reset(store_.db_->NewIterator(rocksdb::ReadOptions(), store_.results_));
  positioned_ = false;
  renewed_at_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<ExecResult> Store::LayerCursor::at(int layer) {
  const std::string key = result_key(store_.dir_, run_, hash_, layer);
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch()).count();
  if (!it_ || now_ms - renewed_at_ms_ > kRenewAfterMs) renew();
  const rocksdb::Slice target(key);
  // Forward by a few Next()s from where it stands (the next layer, or a
  // few on), a Seek otherwise.
  bool sought = false;
  if (positioned_ && it_->Valid() && it_->key().compare(target) <= 0) {
    for (int i = 0; i < 4 && it_->Valid() && it_->key().compare(target) < 0; ++i) it_->Next();
    sought = it_->Valid() && it_->key().compare(target) >= 0;
  }
  if (!sought) {
    it_->Seek(target);
    positioned_ = true;
  }
  if (!it_->status().ok())
    throw PipelineError(fail_prefix(store_.dir_) + "cannot read " + kResults + " key '" + key + "': " +
                        it_->status().ToString());
  if (!it_->Valid() || it_->key() != target) return {};
  return decode_record(store_.dir_, key, it_->value());
}

void Store::for_each_layer_results(const std::string& run, const std::string& model_hash,
                                   const std::function<void(int layer, std::vector<ExecResult> results)>& fn) const {
  const std::string prefix = layer_prefix(dir_, run, model_hash);
  scan(dir_, db_, results_, kResults, prefix, [&](const std::string& key, const rocksdb::Slice& v) {
    const std::string suffix = key.substr(prefix.size());
    if (suffix.size() != static_cast<size_t>(kLayerDigits) ||
        !std::all_of(suffix.begin(), suffix.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw PipelineError(fail_prefix(dir_) + "malformed results key '" + key + "' (layer index is not " +
                          std::to_string(kLayerDigits) + " digits)");
    auto rs = decode_record(dir_, key, v);
    if (!rs.empty()) fn(std::stoi(suffix), std::move(rs));
  });
}

std::map<int, std::vector<ExecResult>> Store::model_results(const std::string& run,
                                                            const std::string& model_hash) const {
  std::map<int, std::vector<ExecResult>> out;
  for_each_layer_results(run, model_hash,
                         [&](int layer, std::vector<ExecResult> rs) { out.emplace(layer, std::move(rs)); });
  return out;
}

std::vector<std::string> Store::result_runs() const {
  std::vector<std::string> runs;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), results_));
  for (it->SeekToFirst(); it->Valid();) {
    const std::string key = it->key().ToString();
    const size_t slash = key.find('/');
    if (slash == std::string::npos || slash == 0)
      throw PipelineError(fail_prefix(dir_) + "malformed results key '" + key + "' (no run id)");
    runs.push_back(key.substr(0, slash));
    it->Seek(runs.back() + "0");  // past "<run>/...": '/' + 1 == '0'
  }
  if (!it->status().ok())
    throw PipelineError(fail_prefix(dir_) + "cannot scan " + kResults + " keys: " + it->status().ToString());
  return runs;
}

void Store::erase_result(const std::string& run, const std::string& model_hash, int layer, Executor e) {
  const std::string key = result_key(dir_, run, model_hash, layer);
  check_write(dir_, db_->Merge(synced(), results_, key, store_detail::erase_operand(e)), kResults, key);
}

void Store::erase_results(const std::string& run, const std::string& model_hash, const std::vector<int>& layers,
                          const std::vector<Executor>& executors) {
  if (layers.empty() || executors.empty()) return;
  rocksdb::WriteBatch batch;
  rocksdb::Status st;
  for (int layer : layers)
    for (Executor e : executors)
      if (st.ok()) st = batch.Merge(results_, result_key(dir_, run, model_hash, layer), store_detail::erase_operand(e));
  if (st.ok()) st = db_->Write(synced(), &batch);
  check_write(dir_, st, kResults, result_key(dir_, run, model_hash, layers.front()));
}

void Store::put_cache(const std::string& key, const ExecResult& r) {
  check_nonempty(dir_, "cache key", key);
  // The cache is advisory (the results column family is the durable record):
  // written through the WAL without fsync, so it survives a killed process
  // and costs no disk flush on the scheduler's path.
  check_write(dir_, db_->Put(rocksdb::WriteOptions(), cache_, key, encode_result(r)), kCache, key);
}

void Store::put_caches(const std::vector<std::pair<std::string, ExecResult>>& entries) {
  if (entries.empty()) return;
  rocksdb::WriteBatch batch;
  rocksdb::Status st;
  for (const auto& [key, r] : entries) {
    check_nonempty(dir_, "cache key", key);
    if (st.ok()) st = batch.Put(cache_, key, encode_result(r));
  }
  if (st.ok()) st = db_->Write(rocksdb::WriteOptions(), &batch);
  check_write(dir_, st, kCache, entries.front().first);
}

std::optional<ExecResult> Store::get_cache(const std::string& key) const {
  check_nonempty(dir_, "cache key", key);
  const auto v = get(dir_, db_, cache_, kCache, key);
  if (!v) return std::nullopt;
  try {
    return decode_result(v->data(), v->size());
  } catch (const PipelineError& e) {
    throw PipelineError(fail_prefix(dir_) + "corrupt result at cache key '" + key + "': " + e.what());
  }
}

void Store::put_job_state(const std::string& run, const std::string& job_id, char state,
                          const std::string& encoded_job) {
  const std::string key = job_key(dir_, run, job_id);
  check_job_value(dir_, state, encoded_job, key);
  check_write(dir_, db_->Put(synced(), jobs_, key, job_value(state, encoded_job)), kJobs, key);
}

void Store::put_job_states(const std::string& run, char state,
                           const std::vector<std::pair<std::string, std::string>>& jobs) {
  if (jobs.empty()) return;
  rocksdb::WriteBatch batch;
  rocksdb::Status st;
  for (const auto& [id, encoded] : jobs) {
    const std::string key = job_key(dir_, run, id);
    check_job_value(dir_, state, encoded, key);
    if (st.ok()) st = batch.Put(jobs_, key, job_value(state, encoded));
  }
  if (st.ok()) st = db_->Write(synced(), &batch);
  if (!st.ok())
    throw StoreWriteError(fail_prefix(dir_) + "cannot write " + std::to_string(jobs.size()) +
                        " job state(s), first job '" + jobs.front().first + "': " + st.ToString());
}

void Store::put_leases(const std::string& run, const std::vector<Lease>& leases) {
  if (leases.empty()) return;
  rocksdb::WriteBatch batch;
  rocksdb::Status st;
  for (const auto& l : leases) {
    const std::string key = job_key(dir_, run, l.job_id);
    check_job_value(dir_, 'L', l.encoded_job, key);
    if (l.holder.size() > 0xffff)
      throw PipelineError(fail_prefix(dir_) + "holder of jobs key '" + key + "' is longer than 65535 bytes");
    if (st.ok()) st = batch.Put(jobs_, key, lease_value(l.holder, l.encoded_job));
  }
  // Through the write-ahead log, not fsynced (store.h says why).
  if (st.ok()) st = db_->Write(rocksdb::WriteOptions(), &batch);
  if (!st.ok())
    throw StoreWriteError(fail_prefix(dir_) + "cannot write " + std::to_string(leases.size()) +
                          " lease(s), first job '" + leases.front().job_id + "': " + st.ToString());
}

void Store::for_each_job(const std::string& run, const std::function<void(std::string id, StoredJob job)>& fn,
                         bool done_jobs_encoded) const {
  check_component(dir_, "run id", run);
  const std::string prefix = run + "/";
  scan(dir_, db_, jobs_, kJobs, prefix, [&](const std::string& key, const rocksdb::Slice& v) {
    if (v.empty()) throw PipelineError(fail_prefix(dir_) + "empty value at jobs key '" + key + "'");
    StoredJob j;
    j.state = v[0];
    if (j.state == 'D' && !done_jobs_encoded) {
      fn(key.substr(prefix.size()), std::move(j));
      return;
    }
    size_t at = 1;
    if (v[0] == kLeaseWithHolder) {
      const size_t n = v.size() < 3 ? 0
                                    : static_cast<size_t>(static_cast<uint8_t>(v[1])) |
                                          static_cast<size_t>(static_cast<uint8_t>(v[2])) << 8;
      if (v.size() < 3 || v.size() - 3 < n)
        throw PipelineError(fail_prefix(dir_) + "truncated lease holder at jobs key '" + key + "'");
      j.state = 'L';
      j.holder.assign(v.data() + 3, n);
      at = 3 + n;
    }
    j.encoded.assign(v.data() + at, v.size() - at);
    check_job_value(dir_, j.state, j.encoded, key);
    fn(key.substr(prefix.size()), std::move(j));
  });
}

std::map<std::string, Store::StoredJob> Store::jobs(const std::string& run) const {
  std::map<std::string, StoredJob> out;
  for_each_job(run, [&](std::string id, StoredJob j) { out.emplace(std::move(id), std::move(j)); });
  return out;
}

void Store::put_run_meta(const std::string& run, const std::string& json) {
  check_component(dir_, "run id", run);
  if (!nlohmann::json::accept(json))
    throw PipelineError(fail_prefix(dir_) + "metadata of run '" + run + "' is not valid JSON");
  check_write(dir_, db_->Put(synced(), runs_, run, json), kRuns, run);
}

void Store::append_health(const std::string& worker, const std::string& health, const std::string& reason,
                          const std::string& since) {
  check_component(dir_, "worker id", worker);
  // The key orders a worker's transitions: nanoseconds since the epoch.
  char seq[32];
  std::snprintf(seq, sizeof seq, "%020lld",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count()));
  const std::string key = "health/" + worker + "/" + seq;
  const std::string v =
      nlohmann::json({{"worker", worker}, {"health", health}, {"reason", reason}, {"since", since}}).dump();
  check_write(dir_, db_->Put(synced(), runs_, key, v), kRuns, key);
}

std::vector<Store::HealthEntry> Store::health_log() const {
  std::vector<HealthEntry> out;
  scan(dir_, db_, runs_, kRuns, "health/", [&](const std::string& key, const rocksdb::Slice& v) {
    const auto j = nlohmann::json::parse(v.ToString(), nullptr, false);
    if (!j.is_object()) throw PipelineError(fail_prefix(dir_) + "corrupt health entry at runs key '" + key + "'");
    out.push_back(HealthEntry{j.value("worker", ""), j.value("health", ""), j.value("reason", ""),
                              j.value("since", "")});
  });
  return out;
}

std::optional<std::string> Store::get_run_meta(const std::string& run) const {
  check_component(dir_, "run id", run);
  auto v = get(dir_, db_, runs_, kRuns, run);
  if (v && !nlohmann::json::accept(*v))
    throw PipelineError(fail_prefix(dir_) + "corrupt metadata at runs key '" + run + "' (not JSON)");
  return v;
}

namespace {

void check_record_key(const std::string& dir, const std::string& key) {
  if (key.find('/') == std::string::npos)
    throw PipelineError(fail_prefix(dir) + "run record key '" + key + "' must contain '/'");
}

}  // namespace

void Store::put_run_records(const std::vector<std::pair<std::string, std::string>>& records) {
  if (records.empty()) return;
  rocksdb::WriteBatch batch;
  rocksdb::Status st;
  for (const auto& [key, json] : records) {
    check_record_key(dir_, key);
    if (!nlohmann::json::accept(json))
      throw PipelineError(fail_prefix(dir_) + "run record '" + key + "' is not valid JSON");
    if (st.ok()) st = batch.Put(runs_, key, json);
  }
  if (st.ok()) st = db_->Write(synced(), &batch);
  check_write(dir_, st, kRuns, records.front().first);
}

std::optional<std::string> Store::get_run_record(const std::string& key) const {
  check_record_key(dir_, key);
  return get(dir_, db_, runs_, kRuns, key);
}

std::vector<std::pair<std::string, std::string>> Store::run_records(const std::string& prefix) const {
  if (prefix.empty() || prefix.back() != '/')
    throw PipelineError(fail_prefix(dir_) + "run record prefix '" + prefix + "' must end in '/'");
  std::vector<std::pair<std::string, std::string>> out;
  scan(dir_, db_, runs_, kRuns, prefix,
       [&](const std::string& key, const rocksdb::Slice& v) { out.emplace_back(key, v.ToString()); });
  return out;
}

void Store::commit_result(const std::string& run, const std::string& model_hash, int layer, const ExecResult& r,
                          const std::string& job_id, const std::string& encoded_job) {
  commit_results(run, model_hash, {Commit{layer, r, job_id, encoded_job}});
}

void Store::sync_log() {
  const rocksdb::Status st = db_->SyncWAL();
  if (!st.ok()) throw StoreWriteError(fail_prefix(dir_) + "cannot flush the write-ahead log: " + st.ToString());
}

namespace {

// The results and done job states of `n` commits in one WriteBatch, each
// key checked before anything is written; at(i) gives the i-th commit's
// model hash and Commit.
template <class At>
void write_commits(const std::string& dir, rocksdb::DB* db, rocksdb::ColumnFamilyHandle* results,
                   rocksdb::ColumnFamilyHandle* jobs, const std::string& run, size_t n, At at, bool sync) {
  if (n == 0) return;
  rocksdb::WriteBatch batch;
  rocksdb::Status st;
  for (size_t i = 0; i < n; ++i) {
    const auto& [model_hash, c] = at(i);
    const std::string rkey = result_key(dir, run, model_hash, c.layer);
    const std::string jkey = job_key(dir, run, c.job_id);
    check_job_value(dir, 'D', c.encoded_job, jkey);
    if (st.ok()) st = batch.Merge(results, rkey, encode_result(c.result));
    if (st.ok()) st = batch.Put(jobs, jkey, job_value('D', c.encoded_job));
  }
  if (st.ok()) st = db->Write(sync ? synced() : rocksdb::WriteOptions(), &batch);
  if (!st.ok())
    throw StoreWriteError(fail_prefix(dir) + "cannot commit " + std::to_string(n) + " result(s), first job '" +
                        at(0).second.job_id + "': " + st.ToString());
}

}  // namespace

void Store::commit_results(const std::string& run, const std::string& model_hash, const std::vector<Commit>& commits,
                           bool sync) {
  write_commits(dir_, db_, results_, jobs_, run, commits.size(),
                [&](size_t i) { return std::pair<const std::string&, const Commit&>(model_hash, commits[i]); }, sync);
}

void Store::commit_results(const std::string& run, const std::vector<KeyedCommit>& commits, bool sync) {
  write_commits(dir_, db_, results_, jobs_, run, commits.size(),
                [&](size_t i) {
                  return std::pair<const std::string&, const Commit&>(commits[i].model_hash, commits[i].commit);
                },
                sync);
}

}  // namespace torq::pipeline
