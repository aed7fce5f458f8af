// Model blobs served in chunks, read off the broker's loop range by range (blob_server.h).
#include "coordinator/fleet/blob_server.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "pipeline/base/error.h"

namespace torq::coordinator {

using pipeline::FleetMessage;
using pipeline::PipelineError;

namespace {

template <class T>
bool ready(const std::future<T>& f) {
  return f.valid() && f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace

template <class T>
bool BlobServer::Load<T>::ready() const {
  if (!result.valid()) return false;
  // Woken by this read's signal: its thread is returning the result now.
  if (read->load(std::memory_order_acquire)) result.wait();
  return torq::coordinator::ready(result);
}

template <class T, class F>
BlobServer::Load<T> BlobServer::start(F read) {
  ++reads_;
  Load<T> l;
  l.read = std::make_shared<std::atomic<bool>>(false);
  l.result = std::async(std::launch::async, [read = std::move(read), done = l.read, fd = wake_fd_]() -> T {
    struct Signal {  // also when the read throws
      std::atomic<bool>& done;
      int fd;
      ~Signal() {
        done.store(true, std::memory_order_release);
        if (fd >= 0) eventfd_write(fd, 1);
      }
    } signal{*done, fd};
    return read();
  });
  return l;
}

void BlobServer::open_wake_fd() {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw PipelineError(std::string("blob server: eventfd: ") + std::strerror(errno));
}

BlobServer::~BlobServer() {
  for (auto& [hash, b] : blobs_) {
    if (b.size_load.valid()) b.size_load.wait();
    if (b.load.valid()) b.load.wait();
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);  // after every loader thread has signalled it
}

void BlobServer::request(const std::string& identity, const std::string& who, const FleetMessage& m) {
  Blob& b = blobs_[m.hash];
  b.used = Clock::now();
  b.waiting.push_back(Pending{identity, who, m.blob_offset, m.blob_max});
  if (b.sized || b.size_load.valid()) return;
  const pipeline::Store* store = &store_;
  b.size_load = start<std::optional<uint64_t>>([store, hash = m.hash] { return store->model_size(hash); });
}

bool BlobServer::loading() const {
  for (const auto& [hash, b] : blobs_)
    if (b.size_load.valid() || b.load.valid()) return true;
  return false;
}

// Finished reads: the blob's size, or a range kept for its requests.
void BlobServer::collect(const std::string& hash, Blob& b) {
  if (b.size_load.ready()) {
    try {
      b.size = b.size_load.result.get();
    } catch (const PipelineError& e) {
      log_("blob " + hash + ": " + e.what());
    }
    b.sized = true;
  }
  if (b.load.ready()) {
    Kept k;
    k.used = Clock::now();
    try {
      if (auto bytes = b.load.result.get()) k.bytes = std::make_shared<const std::string>(std::move(*bytes));
    } catch (const PipelineError& e) {
      log_("blob " + hash + ": " + e.what());
    }
    if (auto old = b.kept.find(b.loading); old != b.kept.end()) drop(b, old);
    kept_bytes_ += k.bytes ? k.bytes->size() : 0;
    b.kept[b.loading] = std::move(k);
  }
}

void BlobServer::drop(Blob& b, std::map<Range, Kept>::iterator k) {
  kept_bytes_ -= k->second.bytes ? k->second.bytes->size() : 0;
  b.kept.erase(k);
}

void BlobServer::trim() {
  while (kept_bytes_ > budget_) {
    Blob* lru_blob = nullptr;
    std::map<Range, Kept>::iterator lru;
    for (auto& [hash, b] : blobs_)
      for (auto k = b.kept.begin(); k != b.kept.end(); ++k)
        if (k->second.bytes && (!lru_blob || k->second.used < lru->second.used)) {
          lru_blob = &b;
          lru = k;
        }
    if (!lru_blob) return;
    drop(*lru_blob, lru);
  }
}

size_t BlobServer::answer(const std::string& hash, Blob& b, const Send& send, const Bad& bad, Clock::time_point now) {
  size_t served = 0;
  for (; b.sized && !b.waiting.empty(); b.waiting.pop_front()) {
    const Pending& p = b.waiting.front();
    b.used = now;
    if (!b.size) {
      log_(p.who + " asked for unknown model " + hash);
      send(p.identity, pipeline::encode_blob_reply(hash, nullptr));
      continue;
    }
    const uint64_t size = *b.size;
    if (p.max_bytes != 0 && p.offset > size) {
      bad(p.identity, "BLOB_REQUEST for offset " + std::to_string(p.offset) + " of model " + hash + " (" +
                          std::to_string(size) + " bytes)");
      continue;
    }
    // A chunk request is cut from the store chunk that holds its offset
    // (read whole, once for the requests that fall in it), up to that
    // chunk's end.
    constexpr uint64_t kStoreChunk = pipeline::Store::kModelChunkBytes;
    const uint64_t start_at = p.offset / kStoreChunk * kStoreChunk;
    const Range r = p.max_bytes == 0 ? Range{0, 0} : Range{start_at, std::min<uint64_t>(kStoreChunk, size - start_at)};
    const uint64_t len =
        p.max_bytes == 0 ? 0 : std::min<uint64_t>({p.max_bytes, pipeline::kMaxBlobChunkBytes, start_at + r.second - p.offset});
    auto k = b.kept.find(r);
    if (k == b.kept.end()) {  // not read yet: read it (after the range being read, if any)
      if (!b.load.valid()) {
        const pipeline::Store* store = &store_;
        b.loading = r;
        b.load = start<std::optional<std::string>>([store, hash, r] {
          return r.second == 0 && r.first == 0 ? store->get_model(hash) : store->read_model(hash, r.first, r.second);
        });
      }
      break;
    }
    k->second.used = now;
    const std::shared_ptr<const std::string> bytes = k->second.bytes;
    if (p.max_bytes == 0) {  // the whole blob in one message (protocol-1 workers)
      if (!bytes) log_(p.who + " asked for model " + hash + ", which the store cannot read");
      served += send(p.identity, pipeline::encode_blob_reply(hash, bytes.get())) && bytes;
      drop(b, k);  // a whole blob is not kept for later
      continue;
    }
    if (!bytes || bytes->size() != r.second) {
      log_(p.who + " asked for model " + hash + ", which the store cannot read");
      send(p.identity, pipeline::encode_blob_reply(hash, nullptr));
      continue;
    }
    const bool sent =
        send(p.identity, pipeline::encode_blob_chunk(hash, size, p.offset, bytes->data() + (p.offset - r.first), len));
    served += sent && p.offset + len == size;
  }
  return served;
}

size_t BlobServer::serve(const Send& send, const Bad& bad) {
  eventfd_t signals = 0;
  eventfd_read(wake_fd_, &signals);  // reads that ended: collected below
  size_t served = 0;
  const auto now = Clock::now();
  for (auto it = blobs_.begin(); it != blobs_.end();) {
    Blob& b = it->second;
    collect(it->first, b);
    served += answer(it->first, b, send, bad, now);
    for (auto k = b.kept.begin(); k != b.kept.end();) {
      auto next = std::next(k);
      if (now - k->second.used > kIdle) drop(b, k);
      k = next;
    }
    const bool idle = b.waiting.empty() && !b.load.valid() && !b.size_load.valid() && now - b.used > kIdle;
    if (idle)
      while (!b.kept.empty()) drop(b, b.kept.begin());
    it = idle ? blobs_.erase(it) : std::next(it);
  }
  trim();  // after answering: the ranges just read have served their waiting requests
  return served;
}

}  // namespace torq::coordinator
