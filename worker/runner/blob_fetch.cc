// A model blob fetched in chunks (blob_fetch.h).
#include "worker/runner/blob_fetch.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pipeline/base/error.h"
#include "pipeline/core/sha256.h"
#include "worker/runner/cache_room.h"

namespace torq::runner {

namespace fs = std::filesystem;
using pipeline::FleetMessage;
using pipeline::PipelineError;

BlobFetch::BlobFetch(std::string hash, std::string cache_dir, uint32_t chunk_bytes, int window, Send send)
    : hash_(std::move(hash)),
      cache_dir_(cache_dir),
      path_(cache_dir + "/" + hash_ + ".onnx"),
      tmp_(path_ + ".tmp." + std::to_string(getpid())),
      chunk_(std::max<uint32_t>(1, chunk_bytes)),
      window_(std::max(1, window)),
      send_(std::move(send)),
      file_(tmp_, std::ios::binary | std::ios::trunc) {
  if (!file_) error_ = tmp_ + ": cannot write the model cache";
  request_more();
}

BlobFetch::~BlobFetch() {
  if (file_.is_open()) file_.close();
  std::error_code ec;
  if (fs::exists(tmp_, ec)) fs::remove(tmp_, ec);
}

// Keeps up to `window_` chunks asked for; one until the blob's size is known.
void BlobFetch::request_more() {
  if (!sized_) {
    if (requested_ == received_) {
      send_(pipeline::encode_blob_request(hash_, received_, chunk_));
      requested_ = received_ + chunk_;
    }
    return;
  }
  while (requested_ < total_ && requested_ - received_ < uint64_t{chunk_} * static_cast<uint64_t>(window_)) {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(chunk_, total_ - requested_));
    send_(pipeline::encode_blob_request(hash_, requested_, n));
    requested_ += n;
  }
}

void BlobFetch::restart() {
  requested_ = received_;
  resync_ = true;
  request_more();
}

BlobFetch::State BlobFetch::fail(const std::string& why) {
  error_ = why;
  file_.close();
  std::error_code ec;
  fs::remove(tmp_, ec);
  return State::kFailed;
}

// A write or close that failed: a full filesystem (or quota) is the
// cache's lack of room, said with the room left once the partial file is
// gone; anything else is the cache's write failure.
BlobFetch::State BlobFetch::write_failed() {
  const int err = errno;
  if (err != ENOSPC && err != EDQUOT)
    return fail(tmp_ + ": cannot write the model cache" + (err ? std::string(" (") + std::strerror(err) + ")" : ""));
  no_room_ = true;
  fail("");
  error_ = no_room_reason(cache_dir_, hash_, total_, cache_free_bytes(cache_dir_));
  return State::kFailed;
}

BlobFetch::State BlobFetch::on_chunk(const FleetMessage& m) {
  if (!error_.empty()) return fail(error_);
  if (!m.blob_known) return fail("model " + hash_ + " is unknown to the coordinator");
  if (!sized_) {
    sized_ = true;
    total_ = m.blob_total;
    requested_ = std::min(requested_, total_);
    // Nothing of a blob that cannot fit is written (issue 60).
    if (const uint64_t free = cache_free_bytes(cache_dir_); total_ > free) {
      no_room_ = true;
      return fail(no_room_reason(cache_dir_, hash_, total_, free));
    }
  } else if (m.blob_total != total_) {
    return fail("model blob " + hash_ + " changed size during its fetch (" + std::to_string(total_) + " -> " +
                std::to_string(m.blob_total) + " bytes)");
  }
  if (m.blob_offset != received_) {
    // Before the next byte: a duplicate. After it: a chunk was lost; ask
    // again from here and skip the chunks already on their way.
    if (m.blob_offset > received_ && !resync_) restart();
    return State::kRunning;
  }
  resync_ = false;
  errno = 0;
  file_.write(m.blob.data(), static_cast<std::streamsize>(m.blob.size()));
  if (!file_) return write_failed();
  digest_.update(m.blob);
  received_ += m.blob.size();
  if (received_ < total_) {
    if (m.blob.empty()) return fail("empty chunk of model blob " + hash_ + " at offset " + std::to_string(received_));
    request_more();
    return State::kRunning;
  }
  errno = 0;
  file_.close();
  if (!file_) return write_failed();
  if (digest_.hex() != hash_) return fail("model blob " + hash_ + " failed SHA-256 verification");
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) return fail(path_ + ": cannot write the model cache (" + ec.message() + ")");
  return State::kDone;
}

}  // namespace torq::runner
