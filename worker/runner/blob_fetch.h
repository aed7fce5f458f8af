// One model blob a fleet worker fetches from the coordinator in chunks
// (BLOB_REQUEST with offset and max_bytes, BLOB_REPLY with one chunk): a
// few chunks are asked for at a time, each written to a temporary file in
// the cache and hashed as it arrives, so the worker's poll loop handles
// heartbeats, jobs and results between chunks instead of stalling for
// seconds on a blob of hundreds of MB (receiving, copying, hashing and
// writing it at once). When the last chunk is in, the SHA-256 is checked
// and the file renamed to <cache>/<hash>.onnx.
//
// Contracts:
//  - Chunks must arrive in order (one DEALER-ROUTER connection keeps the
//    order); a chunk before the next expected offset (a duplicate) is
//    ignored, one after it makes the fetch ask again from where it is.
//  - restart() after a reconnect: the requests in flight died with the old
//    socket; asks again from the bytes already written.
//  - Errors (unknown blob, SHA-256 mismatch, a size that changes, a cache
//    write failure) end the fetch: on_chunk returns kFailed and error()
//    says why. The temporary file is removed unless the fetch completed.
//  - A blob the cache has no room for (its size, from the first reply,
//    above the filesystem's free bytes; or a write failing with ENOSPC or
//    EDQUOT) fails with no_room() set and error() saying
//    cache_room.h's no_room_reason(), before any byte of it is written
//    when the size says so.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>

#include "pipeline/wire/fleet_codec.h"
#include "pipeline/core/sha256.h"

namespace torq::runner {

class BlobFetch {
 public:
  enum class State { kRunning, kDone, kFailed };
  using Send = std::function<void(const std::string&)>;  // one message to the coordinator

  // Starts fetching `hash` into `cache_dir`, sending the first request.
  BlobFetch(std::string hash, std::string cache_dir, uint32_t chunk_bytes, int window, Send send);
  ~BlobFetch();
  BlobFetch(const BlobFetch&) = delete;
  BlobFetch& operator=(const BlobFetch&) = delete;

  // A BLOB_REPLY for this hash. kDone: the verified blob is in the cache.
  State on_chunk(const pipeline::FleetMessage& m);
  // A new connection: ask again from the bytes written so far.
  void restart();

  const std::string& error() const { return error_; }
  bool no_room() const { return no_room_; }  // failed for lack of room in the cache
  uint64_t total() const { return total_; }

 private:
  void request_more();
  State fail(const std::string& why);
  State write_failed();

  std::string hash_, cache_dir_, path_, tmp_;
  uint32_t chunk_;
  int window_;
  Send send_;
  std::ofstream file_;
  pipeline::Sha256 digest_;     // over the chunks as they arrive
  bool sized_ = false;          // total_ known (the first reply came)
  bool resync_ = false;         // asked again from received_: skip chunks until that one
  bool no_room_ = false;
  uint64_t total_ = 0, received_ = 0, requested_ = 0;
  std::string error_;
};

}  // namespace torq::runner
