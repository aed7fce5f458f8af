// The durable store (store.h): key layout, synced writes, and decoding
// reads into errors that name the key (opening it: store_open.cc).
#include "pipeline/store/store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "pipeline/wire/codec.h"
#include "pipeline/store/store_merge.h"
#include "pipeline/store/store_io.h"

namespace torq::pipeline {

using namespace store_detail;  // NOLINT(google-build-using-namespace)

namespace {

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
    throw_damage(dir, kResults, "corrupt layer record at results key '" + key + "': " + e.what());
  }
}

}  // namespace

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
  if (!it->status().ok()) throw_read(dir, it->status(), cf_name, "keys '" + prefix + "*'");
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
  if (!it_->status().ok()) throw_read(store_.dir_, it_->status(), kResults, "key '" + key + "'");
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
      throw_damage(dir_, kResults, "malformed results key '" + key + "' (layer index is not " +
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
      throw_damage(dir_, kResults, "malformed results key '" + key + "' (no run id)");
    runs.push_back(key.substr(0, slash));
    it->Seek(runs.back() + "0");  // past "<run>/...": '/' + 1 == '0'
  }
  if (!it->status().ok()) throw_read(dir_, it->status(), kResults, "keys");
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
    throw_damage(dir_, kCache, "corrupt result at cache key '" + key + "': " + e.what());
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
    if (v.empty()) throw_damage(dir_, kJobs, "empty value at jobs key '" + key + "'");
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
        throw_damage(dir_, kJobs, "truncated lease holder at jobs key '" + key + "'");
      j.state = 'L';
      j.holder.assign(v.data() + 3, n);
      at = 3 + n;
    }
    j.encoded.assign(v.data() + at, v.size() - at);
    try {
      check_job_value(dir_, j.state, j.encoded, key);
    } catch (const PipelineError& e) {  // "store '<dir>': ..." as read
      throw_damage(dir_, kJobs, std::string(e.what()).substr(fail_prefix(dir_).size()));
    }
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
    if (!j.is_object()) throw_damage(dir_, kRuns, "corrupt health entry at runs key '" + key + "'");
    out.push_back(HealthEntry{j.value("worker", ""), j.value("health", ""), j.value("reason", ""),
                              j.value("since", "")});
  });
  return out;
}

std::optional<std::string> Store::get_run_meta(const std::string& run) const {
  check_component(dir_, "run id", run);
  auto v = get(dir_, db_, runs_, kRuns, run);
  if (v && !nlohmann::json::accept(*v)) throw_damage(dir_, kRuns, "corrupt metadata at runs key '" + run + "' (not JSON)");
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
