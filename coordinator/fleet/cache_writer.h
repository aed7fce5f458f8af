// Writes content-addressed cache entries (Store::put_caches) on a thread of
// its own, so the broker's thread goes on dispatching while they are
// encoded and inserted. The entries are not synced either way: a result's
// durability is its commit (Store::commit_results, commit_writer.h), which
// the broker waits for before its acknowledgement; a cache entry lost to a crash
// only means that job runs again in another run. get() sees every entry
// put, written yet or not (a run that issues the same job twice, as a
// bisection can, is served the first one's result).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pipeline/store/store.h"

namespace torq::coordinator {

class CacheWriter {
 public:
  using Entries = std::vector<std::pair<std::string, pipeline::ExecResult>>;
  explicit CacheWriter(pipeline::Store& store);
  // Waits for what is queued; a write error is lost unless finish() was
  // called first (as a run's end does).
  ~CacheWriter();
  CacheWriter(const CacheWriter&) = delete;
  CacheWriter& operator=(const CacheWriter&) = delete;

  // Queues the entries (taken: `entries` is left empty).
  void put(Entries& entries);
  // The cached result for `key`: a queued entry, or the store's.
  std::optional<pipeline::ExecResult> get(const std::string& key);
  // Waits until everything queued is written; throws the first write
  // error (a PipelineError naming the store). Further puts are refused.
  void finish();

 private:
  using Batch = std::shared_ptr<const Entries>;
  void loop();
  pipeline::Store& store_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  std::unordered_map<std::string, std::pair<Batch, size_t>> pending_;  // key -> its queued entry
  bool closing_ = false;
  std::string error_;
  std::thread thread_;
};

}  // namespace torq::coordinator
