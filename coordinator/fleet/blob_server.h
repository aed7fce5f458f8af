// Model blobs served to fleet workers (BLOB_REQUEST -> BLOB_REPLY) without
// stalling the broker's poll loop: a loader thread reads from the store
// the store chunk (Store::kModelChunkBytes) that holds the range a worker
// asked for, and sends the range as that chunk (pipeline/wire/fleet_codec.h:
// offset, max_bytes <= kMaxBlobChunkBytes), so heartbeats, jobs and results
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
//    thread-safe); everything else runs on the broker's thread, which
//    polls wake_fd() while a read is under way: it becomes readable when
//    one ends.
//  - A worker's 1 MiB requests are cut from whole 4 MiB store chunks, one
//    read each. Reading each request's range on its own read its store
//    chunk four times, one range at a time, and the loop looked for a
//    finished read every 5 ms: a blob came at ~80 MB/s per worker, and
//    the zoo nightly's workers waited ~20 s each for their models (issue
//    32).
#pragma once

#include <atomic>
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
      : store_(store), log_(std::move(log)), budget_(kept_budget) {
    open_wake_fd();
  }
  ~BlobServer();  // waits for a blob being read
  BlobServer(const BlobServer&) = delete;
  BlobServer& operator=(const BlobServer&) = delete;

  // A BLOB_REQUEST of `identity` (`who` names it in logs).
  void request(const std::string& identity, const std::string& who, const pipeline::FleetMessage& m);
  // Answers what can be answered now. Returns how many blobs were served to
  // their end (the whole blob, or its last chunk).
  size_t serve(const Send& send, const Bad& bad);
  // True while a blob is being read (the broker then polls wake_fd()).
  bool loading() const;
  // Readable when a read has ended since the last serve().
  int wake_fd() const { return wake_fd_; }
  // Store reads started so far (sizes and ranges).
  size_t reads() const { return reads_; }
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
  // A read on a loader thread: its result, and whether the thread is done
  // reading (set just before it signals wake_fd and returns).
  template <class T>
  struct Load {
    std::future<T> result;
    std::shared_ptr<std::atomic<bool>> read;
    bool valid() const { return result.valid(); }
    void wait() const { result.wait(); }
    bool ready() const;  // has a result (waits for the thread's return once it has read)
  };
  template <class T, class F>
  Load<T> start(F read);
  struct Blob {
    Load<std::optional<uint64_t>> size_load;         // valid while its size is being read
    std::optional<uint64_t> size;                    // once read (known)
    bool sized = false;                              // the size read has finished
    Load<std::optional<std::string>> load;           // the range being read
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

  void open_wake_fd();

  const pipeline::Store& store_;
  int wake_fd_ = -1;
  std::function<void(const std::string&)> log_;
  const uint64_t budget_;
  uint64_t kept_bytes_ = 0;
  size_t reads_ = 0;
  std::map<std::string, Blob> blobs_;  // by hash
};

}  // namespace torq::coordinator
