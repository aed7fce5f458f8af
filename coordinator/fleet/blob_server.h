// Model blobs served to fleet workers (BLOB_REQUEST -> BLOB_REPLY) without
// stalling the broker's poll loop: a loader thread reads from the store
// only the range a worker asked for (Store::read_model: the chunks that
// hold it), and sends it as that chunk (pipeline/wire/fleet_codec.h: offset,
// max_bytes <= kMaxBlobChunkBytes), so heartbeats, jobs and results
// interleave with a blob of hundreds of MB (the zoo's vit_b_16: 347 MB).
// Reading, encoding and sending it whole at once held the loop (and the
// worker's) for seconds: workers and coordinator each took the other for
// dead. Holding it whole while workers fetched it cost the coordinator its
// size in memory (issue 32): now it holds a few chunks per blob.
//
// Contracts:
//  - request() never blocks on the store; serve() answers every request
//    whose range has been read, in the order they came per blob, and never
//    blocks either (a range still loading waits for a later serve()).
//  - A request for the whole blob (max_bytes 0, as protocol-1 workers ask)
//    gets it in one BLOB_REPLY, as before (read whole for it). A chunk
//    request at an offset past the blob's end is a protocol error, reported
//    through `bad`.
//  - Ranges read are kept for the other workers fetching the same blob,
//    each until unused for kIdle, within a budget of bytes for every blob
//    together (the least recently used range goes first); a blob nobody
//    asked for in kIdle is forgotten. Eight 4 MB ranges per blob, kept 10 s
//    after their last use, held 60-100 MB of the models just served (issue
//    32: the coordinator's memory grew with the rate of units, not their
//    number); a range evicted and asked for again is read again.
//  - A blob the store cannot read (a damaged chunk) is logged and answered
//    as unknown: the worker's fetch fails, the broker goes on.
//  - The loader threads only read the store (RocksDB reads are
//    thread-safe); everything else runs on the broker's thread.
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
#include <utility>

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

  // What kept ranges may hold in all: a worker's fetch window is 8 chunks,
  // the server reads one range of a blob at a time, so four ranges serve
  // the workers fetching one blob together.
  static constexpr uint64_t kKeptBytes = uint64_t{4} * pipeline::kMaxBlobChunkBytes;
  BlobServer(const pipeline::Store& store, std::function<void(const std::string&)> log,
             uint64_t kept_budget = kKeptBytes)
      : store_(store), log_(std::move(log)), budget_(kept_budget) {}
  ~BlobServer();  // waits for a blob being read

  // A BLOB_REQUEST of `identity` (`who` names it in logs).
  void request(const std::string& identity, const std::string& who, const pipeline::FleetMessage& m);
  // Answers what can be answered now. Returns how many blobs were served to
  // their end (the whole blob, or its last chunk).
  size_t serve(const Send& send, const Bad& bad);
  // True while a blob is being read (the broker then polls briefly).
  bool loading() const;
  // The bytes the kept ranges hold (at most the budget after each serve()).
  uint64_t kept_bytes() const { return kept_bytes_; }

 private:
  using Range = std::pair<uint64_t, uint64_t>;  // offset, bytes (0, 0: the whole blob)
  struct Pending {
    std::string identity, who;
    uint64_t offset = 0;
    uint32_t max_bytes = 0;
  };
  struct Kept {
    std::shared_ptr<const std::string> bytes;  // null: the store could not read it
    Clock::time_point used;
  };
  struct Blob {
    std::future<std::optional<uint64_t>> size_load;  // valid while its size is being read
    std::optional<uint64_t> size;                    // once read (known)
    bool sized = false;                              // the size read has finished
    std::future<std::optional<std::string>> load;    // the range being read
    Range loading;
    std::map<Range, Kept> kept;
    Clock::time_point used;
    std::deque<Pending> waiting;
  };
  void collect(const std::string& hash, Blob& b);
  void drop(Blob& b, std::map<Range, Kept>::iterator k);
  // Drops the least recently used ranges (of any blob) while the kept ones hold more than the budget.
  void trim();
  // Answers b's waiting requests in order while their ranges are there;
  // starts the read of the first one's that is not. Returns the blobs served to their end.
  size_t answer(const std::string& hash, Blob& b, const Send& send, const Bad& bad, Clock::time_point now);

  const pipeline::Store& store_;
  std::function<void(const std::string&)> log_;
  const uint64_t budget_;
  uint64_t kept_bytes_ = 0;
  std::map<std::string, Blob> blobs_;  // by hash
};

}  // namespace torq::coordinator
