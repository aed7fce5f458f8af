// Model blobs served to fleet workers (BLOB_REQUEST -> BLOB_REPLY) without
// stalling the broker's poll loop: a blob of hundreds of MB (the zoo's
// vit_b_16: 347 MB) is read from the store by a loader thread, kept in
// memory while workers fetch it, and sent as the chunks the workers ask
// for (pipeline/wire/fleet_codec.h: offset, max_bytes <= kMaxBlobChunkBytes), so
// heartbeats, jobs and results interleave with it. Reading, encoding and
// sending it whole at once held the loop (and the worker's) for seconds:
// workers and coordinator each took the other for dead.
//
// Contracts:
//  - request() never blocks on the store; serve() answers every request
//    whose blob has been read, in the order they came, and never blocks
//    either (a blob still loading waits for a later serve()).
//  - A request for the whole blob (max_bytes 0, as protocol-1 workers ask)
//    gets it in one BLOB_REPLY, as before. A chunk request at an offset
//    past the blob's end is a protocol error, reported through `bad`.
//  - A blob nobody asked for in kIdle is dropped from memory.
//  - The loader thread only reads the store (RocksDB reads are thread-safe);
//    everything else runs on the broker's thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "pipeline/wire/fleet_codec.h"
#include "pipeline/store/store.h"

namespace torq::coordinator {

class BlobServer {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kIdle{10};
  // Sends one message to a worker (false: it is gone).
  using Send = std::function<bool(const std::string& identity, const std::string& payload)>;
  // A request that breaks the protocol: the broker drops its sender.
  using Bad = std::function<void(const std::string& identity, const std::string& why)>;

  BlobServer(const pipeline::Store& store, std::function<void(const std::string&)> log)
      : store_(store), log_(std::move(log)) {}
  ~BlobServer();  // waits for a blob being read

  // A BLOB_REQUEST of `identity` (`who` names it in logs).
  void request(const std::string& identity, const std::string& who, const pipeline::FleetMessage& m);
  // Answers what can be answered now. Returns how many blobs were served to
  // their end (the whole blob, or its last chunk).
  size_t serve(const Send& send, const Bad& bad);
  // True while a blob is being read (the broker then polls briefly).
  bool loading() const;

 private:
  struct Pending {
    std::string identity, who;
    uint64_t offset = 0;
    uint32_t max_bytes = 0;
  };
  struct Blob {
    std::future<std::optional<std::string>> load;  // valid while reading
    std::shared_ptr<const std::string> bytes;      // once read; null: unknown
    bool ready = false;
    Clock::time_point used;
    std::deque<Pending> waiting;
  };
  void collect(const std::string& hash, Blob& b);

  const pipeline::Store& store_;
  std::function<void(const std::string&)> log_;
  std::map<std::string, Blob> blobs_;  // by hash
};

}  // namespace torq::coordinator
