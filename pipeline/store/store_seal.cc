// The store's seal (store.h: "The seal"): a small file beside RocksDB's,
// holding the sequence number the store had reached and the record counts
// its callers keep, written on close and after each counted append; open()
// compares the recovered store with it. And the repair hint every
// StoreReadError ends with.
#include <fcntl.h>
#include <unistd.h>

#include <rocksdb/db.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "pipeline/base/utc.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_io.h"

namespace torq::pipeline {

using namespace store_detail;  // NOLINT(google-build-using-namespace)

namespace {

// Writes `text` to `path` through `path`.tmp, synced, then renamed and the
// directory synced: the file is whole, the new one or the old. Throws
// StoreWriteError.
void write_synced(const std::string& dir, const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    throw StoreWriteError(fail_prefix(dir) + "cannot write the seal " + what + ": " + why);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(tmp);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      fail(tmp);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail(tmp);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace

std::string Store::repair_hint(const std::string& dir, const std::string& cf) {
  std::string cost;
  if (cf == "models")
    cost = "Nothing is lost: a model blob is a copy of its model file, stored again from it.";
  else if (cf == "cache")
    cost = "Nothing is lost: cached results are recomputed.";
  else if (cf == "results" || cf == "jobs")
    cost = "Results and job states are recomputed by running their tests again.";
  else if (cf == kRuns)
    cost = "Lost: the run history (or run metadata, device health) held there; nothing recomputes it.";
  else
    cost = "Which records it held cannot be told: model blobs, cached results, results and job states are "
           "recomputed by running again; run history held there is lost.";
  return cost + " To repair: move the store aside (mv '" + dir + "' '" + dir +
         ".damaged') and run again: a new store is filled from the model files (its run history starts "
         "afresh; the old one stays in '" + dir + ".damaged'); or restore '" + dir + "' from a backup.";
}

void Store::seal_count(const std::string& prefix, const std::string& what, size_t count) {
  if (prefix.empty() || prefix.back() != '/')
    throw PipelineError(fail_prefix(dir_) + "seal prefix '" + prefix + "' must end in '/'");
  std::lock_guard<std::mutex> lock(seal_mu_);
  sealed_counts_[prefix] = SealCount{what, count};
  write_seal();
}

void Store::write_seal() {
  // The sequence number only when no blob is being written: its chunks
  // bypass the log and have numbers before they are durable.
  std::unique_lock<std::shared_mutex> models(models_mu_, std::try_to_lock);
  if (models.owns_lock()) {
    const uint64_t sequence = db_->GetLatestSequenceNumber();
    // Everything up to `sequence` durable before the seal names it: the
    // log synced (leases and cache entries are written unsynced).
    const rocksdb::Status st = db_->SyncWAL();
    if (!st.ok())
      throw StoreWriteError(fail_prefix(dir_) + "cannot flush the write-ahead log for the seal: " + st.ToString());
    sealed_sequence_ = std::max(sealed_sequence_, sequence);
  }
  nlohmann::json counts = nlohmann::json::array();
  for (const auto& [prefix, c] : sealed_counts_)
    counts.push_back({{"prefix", prefix}, {"what", c.what}, {"count", c.count}});
  const nlohmann::json seal = {{"sequence", sealed_sequence_}, {"sealed_utc", base::utc_now()}, {"counts", counts}};
  write_synced(dir_, dir_ + "/" + kSealFile, seal.dump(1) + "\n");
}

void Store::check_seal(const std::string& manifest) {
  const std::string path = dir_ + "/" + kSealFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // a new store, or one of an older build
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json seal = nlohmann::json::parse(text.str(), nullptr, false);
  const auto unreadable = [&] {
    return StoreReadError(fail_prefix(dir_) + "its seal " + path +
                          " is damaged (not the JSON this store writes): the store cannot be checked for lost "
                          "writes. Remove it to go on (the next close writes it again), or restore '" + dir_ +
                          "' from a backup.");
  };
  if (!seal.is_object() || !seal.contains("sequence") || !seal["sequence"].is_number_unsigned() ||
      !seal.contains("counts") || !seal["counts"].is_array())
    throw unreadable();
  std::lock_guard<std::mutex> lock(seal_mu_);
  sealed_sequence_ = seal["sequence"].get<uint64_t>();
  for (const auto& c : seal["counts"]) {
    if (!c.is_object() || !c.contains("prefix") || !c["prefix"].is_string() || !c.contains("count") ||
        !c["count"].is_number_unsigned() || !c.contains("what") || !c["what"].is_string())
      throw unreadable();
    sealed_counts_[c["prefix"].get<std::string>()] = SealCount{c["what"].get<std::string>(), c["count"].get<size_t>()};
  }
  const uint64_t recovered = db_->GetLatestSequenceNumber();
  std::string lost;
  for (const auto& [prefix, c] : sealed_counts_) {
    const size_t left = run_records(prefix).size();
    if (left < c.count)
      lost += "; lost: " + std::to_string(c.count - left) + " of the " + std::to_string(c.count) + " " + c.what +
              " (" + std::to_string(left) + " left)";
  }
  if (recovered >= sealed_sequence_ && lost.empty()) return;
  const std::string sealed_utc = seal.value("sealed_utc", std::string("?"));
  throw StoreReadError(
      fail_prefix(dir_) + "the store lost writes: RocksDB recovered it up to write " + std::to_string(recovered) +
      ", but it had reached write " + std::to_string(sealed_sequence_) + " when it was sealed at " + sealed_utc +
      " (" + path + ")" + lost + ". Its MANIFEST (" + (manifest.empty() ? "?" : dir_ + "/" + manifest) +
      ", replaced at this open) or a write-ahead log (" + dir_ +
      "/*.log) was cut short or removed, and RocksDB dropped the tables and records they no longer named. What "
      "else was lost cannot be told: results, job states, model blobs and cached results are recomputed by "
      "running again; lost run history is not. To go on with what is left, remove " + path +
      " (the loss is accepted: a spec's next run takes the next free number); to get it back, restore '" + dir_ +
      "' from a backup.");
}

}  // namespace torq::pipeline
