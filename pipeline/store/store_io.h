// The store's small I/O helpers, shared by its source files (store.cc,
// store_models.cc): synced writes, and reads and writes whose failures are
// PipelineErrors naming the store, column family and key.
#pragma once

#include <rocksdb/db.h>

#include <optional>
#include <string>

#include "pipeline/base/error.h"
#include "pipeline/store/store.h"

namespace torq::pipeline::store_detail {

// The column family of model blobs.
inline constexpr const char* kModels = "models";

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

// Reads one key into `v`; false when absent, PipelineError on any other failure.
template <class Value>
bool get_into(const std::string& dir, rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const char* cf_name,
              const std::string& key, Value* v) {
  const rocksdb::Status st = db->Get(rocksdb::ReadOptions(), cf, key, v);
  if (st.IsNotFound()) return false;
  if (!st.ok())
    throw PipelineError(fail_prefix(dir) + "cannot read " + cf_name + " key '" + key + "': " + st.ToString());
  return true;
}

// Reads one key; nullopt when absent, PipelineError on any other failure.
inline std::optional<std::string> get(const std::string& dir, rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                                      const char* cf_name, const std::string& key) {
  std::string v;
  if (!get_into(dir, db, cf, cf_name, key, &v)) return std::nullopt;
  return v;
}

}  // namespace torq::pipeline::store_detail
