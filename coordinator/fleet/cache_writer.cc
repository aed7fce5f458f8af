#include "coordinator/fleet/cache_writer.h"

#include "pipeline/base/error.h"
#include "pipeline/base/thread_name.h"

namespace torq::coordinator {

CacheWriter::CacheWriter(pipeline::Store& store) : store_(store), thread_([this] {
      base::name_this_thread("torq-cache");
      loop();
    }) {}

CacheWriter::~CacheWriter() {
  try {
    finish();
  } catch (const std::exception&) {  // reported by finish() to whoever called it
  }
}

void CacheWriter::put(Entries& entries) {
  if (entries.empty()) return;
  auto batch = std::make_shared<const Entries>(std::move(entries));
  entries.clear();
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (closing_) throw pipeline::PipelineError("cache writer: put after finish");
    for (size_t i = 0; i < batch->size(); ++i) pending_.insert_or_assign((*batch)[i].first, std::make_pair(batch, i));
    queue_.push_back(std::move(batch));
  }
  cv_.notify_one();
}

std::optional<pipeline::ExecResult> CacheWriter::get(const std::string& key) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = pending_.find(key);
    if (it != pending_.end()) return (*it->second.first)[it->second.second].second;
  }
  return store_.get_cache(key);
}

void CacheWriter::finish() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    closing_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  if (!error_.empty()) {
    std::string e;
    e.swap(error_);
    throw pipeline::PipelineError(e);
  }
}

void CacheWriter::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, all written
    const Batch batch = queue_.front();
    lk.unlock();
    try {
      if (error_.empty()) store_.put_caches(*batch);  // after an error, the rest is dropped
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    lk.lock();
    queue_.pop_front();
    // Written (or failed for good): the store answers for these keys now,
    // unless a later batch has the same key.
    for (const auto& [key, r] : *batch) {
      auto it = pending_.find(key);
      if (it != pending_.end() && it->second.first == batch) pending_.erase(it);
    }
  }
}

}  // namespace torq::coordinator
