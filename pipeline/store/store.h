// Durable result store of the discovery pipeline (DESIGN.md §6): models,
// job states, per-layer result records, the content-addressed result cache
// and run metadata, in one RocksDB database with one column family each.
//
// Contracts shared by every method:
//  - Every write is in the write-ahead log before the call returns (model
//    chunks are flushed to synced files instead, see put_model), so a
//    kill -9 after a call returns loses nothing. Every write is also synced
//    (WriteOptions.sync = true), so a power loss loses nothing either,
//    except cache entries (advisory), leases (a lease lost with the machine
//    makes its job run again) and commit_results(..., sync=false), which
//    its caller flushes with sync_log(); see each.
//  - Every failure (I/O error, corrupt stored value, bad key component) is a
//    PipelineError whose message names the store directory and the key.
//    Nothing here aborts the process. A read that fails or whose bytes fail
//    verification is a StoreReadError (below), a write a StoreWriteError.
//  - Verification (issue 60). RocksDB checks the checksum of every block
//    (SST) and blob record it reads and of every log (WAL) and MANIFEST
//    record it replays; open() also reads every live SST file once
//    (DB::VerifyChecksum: 13 MB of tables in 0.04 s here; blob files are
//    not read there, each blob record is checked as it is read, and a
//    model blob is read whole whenever put_model stores it again). A log
//    record damaged before its end fails the open (kTolerateCorruptedTail-
//    Records: RocksDB's default replayed up to the damage and dropped the
//    rest without a word); only a torn last record, which a killed writer
//    leaves, is dropped.
//  - The seal (kSealFile, in the store directory, outside RocksDB's files):
//    on close, and whenever seal_count() is called, the store's sequence
//    number (every write has one, and they only grow) once the log is
//    synced, and the record counts callers asked to keep (the run
//    history's runs of each spec). A MANIFEST cut short or a log missing
//    records opens without an error in RocksDB, which then deletes the
//    tables the MANIFEST no longer names: a run's whole history was gone
//    and the next run took its number. open() compares the recovered store
//    with the seal, and a store behind it (a lower sequence number, fewer
//    records under a counted prefix) is a StoreReadError that says what
//    was lost. The seal is not rewritten then, so every open says it until
//    the seal file is removed (the loss accepted) or the store restored.
//    A store without a seal (a new one, or one of an older build) is not
//    compared; the next close writes it.
//  - A Store is thread-safe: any method may be called concurrently from any
//    thread (RocksDB is; the Store's own state, the seal, has a mutex).
//  - Key components `run` and `model_hash` must be non-empty and contain no
//    '/'; `layer` must be in [0, 99999999]. Job ids and cache keys must be
//    non-empty (a job id may contain '/'). Violations are PipelineErrors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/base/byte_sink.h"
#include "pipeline/core/types.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class Iterator;
}  // namespace rocksdb

namespace torq::pipeline {

// Durable store of discovery runs in RocksDB. Column families:
//   models  : model hash -> a manifest (size, chunks), and "<hash>#<index>" -> the model bytes (ONNX)
//             in chunks of kModelChunkBytes; written once (a store written before
//             issue 32 holds the whole bytes under the hash, still read as such)
//   jobs    : run id + "/" + job id -> job state byte ('Q' queued, 'L' leased, 'D' done) + encoded JobSpec
//   results : run id + "/" + model hash + "/" + zero-padded layer index -> LayerRecord (merged per executor by a MergeOperator)
//   cache   : cache key (hex) -> encoded Result (content-addressed: an unchanged layer is not recomputed)
//   runs    : run id -> small JSON metadata (model name, options, started/finished);
//             "health/..." device health; "history/..." the run history (run_history.h)
// Every write is in the write-ahead log before the call returns, so a kill
// -9 after a call returns loses nothing; all but cache entries, leases and
// unsynced commits (each says so) are synced too. Thread-safe (RocksDB is).
// A write the store could not make (a full or read-only disk): the run
// stops on it with what was committed kept; it is never a test's or an
// op's result (issue 30).
// Making one also marks this process's stores as failed writers: their
// close writes no seal, since RocksDB cannot sync a log after a failed
// write (a SyncWAL there asserts and aborts the process).
class StoreWriteError : public PipelineError {
 public:
  explicit StoreWriteError(const std::string& message);
};

// True once any StoreWriteError was made in this process.
bool store_write_failed();

// A read the store could not make, or stored bytes that failed
// verification: a block, blob, log or MANIFEST record whose checksum does
// not match, a store behind its seal (records lost), a model blob that is
// not the bytes its SHA-256 names, a record that does not decode. It is the
// store's, never a test's or an op's result (issue 60: a flipped byte in
// a model blob made every rerun of a spec fail its test as
// FAILED_FE_COMPILATION): the run stops on it with exit 2 and writes no
// outcome, JUnit line or history record from it. what() names the store
// directory and the file, or the column family and key, and ends with the
// repair hint (repair_hint()): what the damage costs and how to go on.
class StoreReadError : public PipelineError {
 public:
  using PipelineError::PipelineError;
};

class Store {
 public:
  // Name of the results column family's MergeOperator. It is recorded in the
  // database's OPTIONS file; changing it makes existing stores unreadable.
  static constexpr const char* kMergeOperatorName = "torq.LayerRecordMerge";
  // Width of the zero-padded layer index in results keys.
  static constexpr int kLayerDigits = 8;

  // Opens or creates the store at `dir`. Throws PipelineError with the path and
  // RocksDB's message on failure (e.g. an unwritable directory, or a directory
  // locked by another process: say so clearly).
  // A directory can be open by only one Store at a time, in this process or
  // any other (RocksDB's LOCK file); a second open fails and says so.
  // Column families other than the five above, if present, are opened and left
  // untouched.
  // A damaged store (a log, table or MANIFEST record that fails its
  // checksum, a live SST that fails VerifyChecksum, a store behind its
  // seal) is a StoreReadError naming the file and the repair hint.
  static std::unique_ptr<Store> open(const std::string& dir);
  // Closes the database and writes the seal (unless open found the store
  // behind it). Every write already returned is on disk.
  ~Store();  // non-copyable
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The directory given to open().
  const std::string& dir() const { return dir_; }

  // The seal's file name in the store directory (written through a
  // temporary file and renamed, synced, so it is whole or the previous one).
  static constexpr const char* kSealFile = "torq-seal.json";
  // Keeps `count` as the number of runs-column-family records under
  // `prefix` (which must end in '/'), `what` naming them in the message
  // of a loss ("the run history of spec '/x/spec.yaml'"), and writes the
  // seal now: after a store that lost some of them opens, open() says so.
  // Call it once the records are written (synced). A seal that cannot be
  // written is a StoreWriteError. Not while a put_model is under way
  // in another thread (its chunks are not in the log until flushed): the
  // seal then keeps the previous sequence number.
  void seal_count(const std::string& prefix, const std::string& what, size_t count);
  // What damage to column family `cf` ("models", "cache", "results",
  // "jobs", "runs"; "" for a file, whose records are unknown) costs, and
  // how to go on: the text StoreReadErrors end with.
  static std::string repair_hint(const std::string& dir, const std::string& cf);

  // A blob already stored whose bytes differ from the model's (their
  // SHA-256 is the hash: the stored ones are damaged) is a StoreReadError;
  // so is a chunk RocksDB cannot read. The run stops rather than store the
  // blob again from the file and go on: RocksDB's checksums passed on
  // bytes that are not the ones written, so something other than this
  // store changed its files or memory, and nothing else it holds can be
  // vouched for; a CI owner needs that to stop the nightly (exit 2, the
  // store's), not to learn it from a disk that fails later.
  // Stores a model blob under its content hash, in chunks: neither the
  // whole blob nor a memtable of it is ever held (a 346 MB model, issue
  // 32). The chunks do not go through the write-ahead log: they are
  // flushed to the store's synced files before the manifest is written,
  // last and synced, so a blob whose writer died midway is unknown, never
  // half there, and one put_model returned is durable. Written once:
  // storing a hash that is already present compares the bytes chunk by
  // chunk, a no-op when they are identical and a PipelineError when they
  // differ.
  static constexpr size_t kModelChunkBytes = size_t{4} << 20;
  void put_model(const std::string& hash, const std::string& bytes);
  // The same, streamed: `write` hands the blob's bytes, in order, to the
  // sink it is given (ImportedModel::serialize_to).
  void put_model(const std::string& hash, const std::function<void(const base::ByteSink&)>& write);
  // What RocksDB holds in memory now, in bytes: its memtables (every
  // column family's, flushed or not), its table readers' indexes and
  // filters, and its block cache (kBlockCacheBytes at most, shared by the
  // column families). For a coordinator's log lines.
  static constexpr size_t kBlockCacheBytes = size_t{8} << 20;
  uint64_t memory_bytes() const;
  // The model bytes, or nullopt if the hash is unknown.
  std::optional<std::string> get_model(const std::string& hash) const;
  // The blob's size in bytes, or nullopt if the hash is unknown.
  std::optional<uint64_t> model_size(const std::string& hash) const;
  // Bytes [offset, offset + max_bytes) of the blob, fewer at its end (none
  // at or past it); nullopt if the hash is unknown. Reads only the chunks
  // that hold them.
  std::optional<std::string> read_model(const std::string& hash, uint64_t offset, size_t max_bytes) const;

  // Merges one executor's result into the layer record (replacing a previous
  // result of the same executor). Uses rocksdb Merge with the store's MergeOperator.
  void merge_result(const std::string& run, const std::string& model_hash, int layer, const ExecResult& r);
  // The merged results of a layer (empty if none), in executor priority order (nss, css, host).
  // A stored record that cannot be decoded is a PipelineError naming its key.
  std::vector<ExecResult> layer_results(const std::string& run, const std::string& model_hash, int layer) const;
  // The layer records of one (run, model) read through one iterator, for a
  // caller that asks for many layers in increasing order: a resumed run's
  // walk over a third of a million layers then reads each block once, not a
  // point lookup (and a block read) per layer (issue 32).
  class LayerCursor {
   public:
    ~LayerCursor();
    LayerCursor(const LayerCursor&) = delete;
    LayerCursor& operator=(const LayerCursor&) = delete;
    // What layer_results(run, model_hash, layer) gives, as the store was
    // when the cursor last renewed itself: at most kRenewAfterMs ago, so a
    // cursor kept between reads pins no memtable or file for long. Any order
    // of layers is right; increasing order is the fast one.
    std::vector<ExecResult> at(int layer);
    static constexpr int kRenewAfterMs = 1000;

   private:
    friend class Store;
    LayerCursor(const Store& store, std::string run, std::string model_hash);
    void renew();
    const Store& store_;
    const std::string run_, hash_;
    std::unique_ptr<rocksdb::Iterator> it_;
    int64_t renewed_at_ms_ = 0;
    bool positioned_ = false;
  };
  std::unique_ptr<LayerCursor> layer_cursor(const std::string& run, const std::string& model_hash) const;
  // All layers with results for (run, model): layer index -> results.
  // Layers whose record holds no result (every executor erased) are omitted.
  // Any undecodable record is a PipelineError naming its key. The map is a
  // consistent snapshot of the store.
  std::map<int, std::vector<ExecResult>> model_results(const std::string& run, const std::string& model_hash) const;
  // The same, one layer at a time in layer order, from one snapshot, without
  // holding them all (the report of a model of 333,334 layers).
  void for_each_layer_results(const std::string& run, const std::string& model_hash,
                              const std::function<void(int layer, std::vector<ExecResult> results)>& fn) const;
  // The run ids that have results, in order.
  std::vector<std::string> result_runs() const;
  // Removes one executor's result of a layer (used when a layer must be re-tested).
  // Erasing a result that is not there is a no-op. Written as a merge operand
  // so it orders correctly against concurrent merge_result calls.
  void erase_result(const std::string& run, const std::string& model_hash, int layer, Executor e);
  // The same for every executor in `executors` of every layer in `layers`,
  // in one synced write (a --recompute-cache of a 341-layer model is one
  // disk flush, not a thousand).
  void erase_results(const std::string& run, const std::string& model_hash, const std::vector<int>& layers,
                     const std::vector<Executor>& executors);

  // Stores a result under a content-addressed cache key (overwrites). Not
  // fsynced: it survives a killed process (WAL in the OS page cache) but
  // may be lost with the machine; the cache is advisory.
  void put_cache(const std::string& key, const ExecResult& r);
  // Several cache entries (key, result) in one WriteBatch, not fsynced, as put_cache.
  void put_caches(const std::vector<std::pair<std::string, ExecResult>>& entries);
  // The cached result, or nullopt. An undecodable value is a PipelineError.
  std::optional<ExecResult> get_cache(const std::string& key) const;

  // Records a job's state: 'Q' queued, 'L' leased or 'D' done (any other
  // state, or an `encoded_job` that is not a valid encoded JobSpec, is a
  // PipelineError and nothing is written).
  void put_job_state(const std::string& run, const std::string& job_id, char state, const std::string& encoded_job);
  // Several job states in one synced WriteBatch (one disk flush): all or
  // none. Each element is (job id, encoded job); validation as above.
  void put_job_states(const std::string& run, char state,
                      const std::vector<std::pair<std::string, std::string>>& jobs);
  // The leases of one dispatch round, each with the registered id of the
  // worker it went to, in one WriteBatch (state 'L'): after a coordinator
  // restart only that worker may claim the job or return its result (issue
  // 30). A holder longer than 65,535 bytes is a PipelineError.
  // Not fsynced: the write-ahead log has it before the call returns, so a
  // killed coordinator keeps it. A lease lost with the machine (power)
  // leaves the job without a holder (or with the earlier lease's holder):
  // it runs again and the lost lease's holder's result is refused, so
  // nothing is lost or recorded twice. Synced, the
  // leases were the coordinator's largest cost on the nightly: one disk
  // flush per dispatch round, 13 s of its 110 s of CPU (issue 32). The next
  // synced write (a result commit) flushes them with it.
  struct Lease {
    std::string job_id, encoded_job, holder;
  };
  void put_leases(const std::string& run, const std::vector<Lease>& leases);
  // A job as stored: its state, the encoded job, and for a lease written by
  // put_leases its holder (else empty).
  struct StoredJob {
    char state = 'Q';
    std::string encoded;
    std::string holder;
  };
  // job id -> stored job.
  // A stored value with a bad state byte or an undecodable job is a
  // PipelineError naming its key.
  std::map<std::string, StoredJob> jobs(const std::string& run) const;
  // The same, one job at a time in key order, without holding them all (a
  // resumed run of a million jobs). Errors as jobs(). Without
  // done_jobs_encoded a done job comes with no encoded job, which is then
  // neither copied nor checked (a resume needs only their ids).
  void for_each_job(const std::string& run, const std::function<void(std::string id, StoredJob job)>& fn,
                    bool done_jobs_encoded = true) const;

  // Stores run metadata; `json` must parse as JSON (else PipelineError).
  void put_run_meta(const std::string& run, const std::string& json);
  // Device health transitions (LAVA's model), in the runs column family
  // under "health/<worker>/<seq>": one synced write each.
  struct HealthEntry {
    std::string worker, health, reason, since;
  };
  void append_health(const std::string& worker, const std::string& health, const std::string& reason,
                     const std::string& since);
  // Every transition recorded, per worker in order.
  std::vector<HealthEntry> health_log() const;
  std::optional<std::string> get_run_meta(const std::string& run) const;

  // Free-form records of the runs column family (the run history of matrix
  // specs, run_history.h), under keys that hold a '/' (so they never meet a
  // run id). Writes every (key, JSON value) pair in one synced WriteBatch:
  // all or none. An empty key, a key without '/' or a value that is not
  // JSON is a PipelineError and nothing is written.
  void put_run_records(const std::vector<std::pair<std::string, std::string>>& records);
  // The record at `key`, or nullopt.
  std::optional<std::string> get_run_record(const std::string& key) const;
  // Every (key, value) whose key starts with `prefix` (which must end in
  // '/'), in key order, from one consistent snapshot.
  std::vector<std::pair<std::string, std::string>> run_records(const std::string& prefix) const;

  // Writes a result and marks its job done atomically (one WriteBatch): the
  // acknowledgement point of the scheduler.
  // After a crash either both the result and the 'D' state are in the store
  // or neither is. Validation is as for merge_result and put_job_state.
  void commit_result(const std::string& run, const std::string& model_hash, int layer, const ExecResult& r,
                     const std::string& job_id, const std::string& encoded_job);
  // Several commits in one synced WriteBatch (one disk flush): all or none.
  struct Commit {
    int layer;
    ExecResult result;
    std::string job_id;
    std::string encoded_job;
  };
  // With `sync` false the batch reaches the write-ahead log (the OS's
  // page cache: it survives a killed process, not a lost machine) without a
  // disk flush; sync_log() flushes every such commit at once.
  void commit_results(const std::string& run, const std::string& model_hash, const std::vector<Commit>& commits,
                      bool sync = true);
  // Commits of several models (result keys) in one WriteBatch: a group
  // commit of whatever finished together costs one disk flush, all or none.
  struct KeyedCommit {
    std::string model_hash;
    Commit commit;
  };
  void commit_results(const std::string& run, const std::vector<KeyedCommit>& commits, bool sync = true);
  void sync_log();

 private:
  Store() = default;

  std::string dir_;
  rocksdb::DB* db_ = nullptr;
  // Handles of every opened column family; the named ones below point into it.
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::ColumnFamilyHandle* models_ = nullptr;
  rocksdb::ColumnFamilyHandle* jobs_ = nullptr;
  rocksdb::ColumnFamilyHandle* results_ = nullptr;
  rocksdb::ColumnFamilyHandle* cache_ = nullptr;
  rocksdb::ColumnFamilyHandle* runs_ = nullptr;

  // The seal (store_seal.cc): what open() compares and close writes.
  struct SealCount {
    std::string what;
    size_t count = 0;
  };
  std::mutex seal_mu_;
  std::map<std::string, SealCount> sealed_counts_;  // prefix -> count (under seal_mu_)
  bool seal_on_close_ = true;  // false when open found the store behind its seal
  // Shared by each put_model under way; the seal takes the sequence
  // number only when it can hold it alone (a blob's chunks are durable
  // once flushed, not when written).
  std::shared_mutex models_mu_;
  uint64_t sealed_sequence_ = 0;  // under seal_mu_
  void check_seal(const std::string& manifest);  // open(): throws StoreReadError
  void write_seal();  // under seal_mu_; throws StoreWriteError

  struct ModelLayout;  // store_models.cc
  std::optional<ModelLayout> model_layout(const std::string& hash) const;
  void verify_model(const std::string& hash, const ModelLayout& stored,
                    const std::function<void(const base::ByteSink&)>& write) const;
};

}  // namespace torq::pipeline
