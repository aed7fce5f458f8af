// The store's small I/O helpers, shared by its source files (store.cc,
// store_models.cc, store_seal.cc, run_history.cc): synced writes, and reads
// and writes whose failures are StoreReadErrors and StoreWriteErrors naming
// the store, column family and key (a read's with the repair hint).
#pragma once

#include <rocksdb/db.h>

#include <optional>
#include <string>

#include "pipeline/base/error.h"
#include "pipeline/store/store.h"

namespace torq::pipeline::store_detail {

// The column families (store.h).
inline constexpr const char* kModels = "models";
inline constexpr const char* kJobs = "jobs";
inline constexpr const char* kResults = "results";
inline constexpr const char* kCache = "cache";
inline constexpr const char* kRuns = "runs";

inline rocksdb::WriteOptions synced() {
  rocksdb::WriteOptions w;
  w.sync = true;
  return w;
}

inline std::string fail_prefix(const std::string& dir) { return "store '" + dir + "': "; }

inline void check_nonempty(const std::string& dir, const char* what, const std::string& v) {
  if (v.empty()) throw PipelineError(fail_prefix(dir) + "empty " + what);
}

inline void check_write(const std::string& dir, const rocksdb::Status& st, const char* cf, const std::string& key) {
  if (!st.ok())
    throw StoreWriteError(fail_prefix(dir) + "cannot write " + cf + " key '" + key + "': " + st.ToString());
}

// Damage found in column family `cf` ("" for a file): a StoreReadError
// "store '<dir>': <what>. <repair hint>".
inline StoreReadError damage_error(const std::string& dir, const std::string& cf, const std::string& what) {
  return StoreReadError(fail_prefix(dir) + what + ". " + Store::repair_hint(dir, cf));
}
[[noreturn]] inline void throw_damage(const std::string& dir, const std::string& cf, const std::string& what) {
  throw damage_error(dir, cf, what);
}

// A read of `cf` key `key` that failed with `st`: damage (a checksum that
// does not match) or an I/O error of the disk; a StoreReadError either way.
[[noreturn]] inline void throw_read(const std::string& dir, const rocksdb::Status& st, const char* cf,
                                    const std::string& what) {
  if (st.IsCorruption()) throw_damage(dir, cf, "cannot read " + std::string(cf) + " " + what + ": " + st.ToString());
  throw StoreReadError(fail_prefix(dir) + "cannot read " + cf + " " + what + ": " + st.ToString() +
                       " (the disk under the store failed the read; nothing was recorded from it)");
}

// Reads one key into `v`; false when absent, StoreReadError on any other failure.
template <class Value>
bool get_into(const std::string& dir, rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const char* cf_name,
              const std::string& key, Value* v) {
  const rocksdb::Status st = db->Get(rocksdb::ReadOptions(), cf, key, v);
  if (st.IsNotFound()) return false;
  if (!st.ok()) throw_read(dir, st, cf_name, "key '" + key + "'");
  return true;
}

// Reads one key; nullopt when absent, StoreReadError on any other failure.
inline std::optional<std::string> get(const std::string& dir, rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                                      const char* cf_name, const std::string& key) {
  std::string v;
  if (!get_into(dir, db, cf, cf_name, key, &v)) return std::nullopt;
  return v;
}

}  // namespace torq::pipeline::store_detail
