// Model blobs served in chunks, read off the broker's loop (blob_server.h).
#include "coordinator/fleet/blob_server.h"

#include <algorithm>

#include "pipeline/base/error.h"

namespace torq::coordinator {

using pipeline::FleetMessage;
using pipeline::PipelineError;

BlobServer::~BlobServer() {
  for (auto& [hash, b] : blobs_)
    if (b.load.valid()) b.load.wait();
}

void BlobServer::request(const std::string& identity, const std::string& who, const FleetMessage& m) {
  Blob& b = blobs_[m.hash];
  b.used = Clock::now();
  b.waiting.push_back(Pending{identity, who, m.blob_offset, m.blob_max});
  if (b.ready || b.load.valid()) return;
  const pipeline::Store* store = &store_;
  b.load = std::async(std::launch::async, [store, hash = m.hash] { return store->get_model(hash); });
}

bool BlobServer::loading() const {
  for (const auto& [hash, b] : blobs_)
    if (b.load.valid()) return true;
  return false;
}

// A finished read becomes the blob (or unknown).
void BlobServer::collect(const std::string& hash, Blob& b) {
  if (b.ready || !b.load.valid() || b.load.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  try {
    if (auto bytes = b.load.get()) b.bytes = std::make_shared<const std::string>(std::move(*bytes));
  } catch (const PipelineError& e) {
    log_("blob " + hash + ": " + e.what());
  }
  b.ready = true;
}

size_t BlobServer::serve(const Send& send, const Bad& bad) {
  size_t served = 0;
  const auto now = Clock::now();
  for (auto it = blobs_.begin(); it != blobs_.end();) {
    const std::string& hash = it->first;
    Blob& b = it->second;
    collect(hash, b);
    for (; b.ready && !b.waiting.empty(); b.waiting.pop_front()) {
      const Pending& p = b.waiting.front();
      b.used = now;
      if (!b.bytes) {
        log_(p.who + " asked for unknown model " + hash);
        send(p.identity, pipeline::encode_blob_reply(hash, nullptr));
        continue;
      }
      const std::string& all = *b.bytes;
      if (p.max_bytes == 0) {  // the whole blob in one message (protocol-1 workers)
        served += send(p.identity, pipeline::encode_blob_reply(hash, &all));
        continue;
      }
      if (p.offset > all.size()) {
        bad(p.identity, "BLOB_REQUEST for offset " + std::to_string(p.offset) + " of model " + hash + " (" +
                            std::to_string(all.size()) + " bytes)");
        continue;
      }
      const size_t n = std::min<uint64_t>({p.max_bytes, pipeline::kMaxBlobChunkBytes, all.size() - p.offset});
      const bool sent =
          send(p.identity, pipeline::encode_blob_chunk(hash, all.size(), p.offset, all.data() + p.offset, n));
      served += sent && p.offset + n == all.size();
    }
    if (b.ready && b.waiting.empty() && now - b.used > kIdle) it = blobs_.erase(it);
    else ++it;
  }
  return served;
}

}  // namespace torq::coordinator
