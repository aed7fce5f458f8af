// Which of the processes sharing a model cache directory fetches a model
// missing from it: the one holding an flock on <cache>/.fetching/<hash>.
// Several workers on one host (one per board, or a nightly's local workers)
// share a cache; without a claim each fetched every new model at once, and
// a model of hundreds of MB was that many bytes sent by the coordinator,
// received, hashed and written once per worker. The others wait for the
// holder's file instead, and take the claim over when the holder lets go
// without it (a failed fetch, or a holder killed: the kernel drops the lock
// with its last descriptor).
//
// The lock files stay (empty, one per model ever fetched): removing one
// while another process waits to lock it would let two processes hold
// "the" claim on two different files.
#pragma once

#include <optional>
#include <string>

namespace torq::runner {

class CacheClaim {
 public:
  // The claim on `hash` in `cache_dir`, or nullopt while another process
  // (or another claim of this one) holds it. A claim that cannot be made at
  // all (a cache that takes no lock file) is granted as a claim without a
  // lock: that process then fetches alone, as it would without a shared
  // cache, and the cache write itself reports a cache that takes no file.
  static std::optional<CacheClaim> try_take(const std::string& cache_dir, const std::string& hash);

  CacheClaim(CacheClaim&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  CacheClaim& operator=(CacheClaim&& o) noexcept;
  CacheClaim(const CacheClaim&) = delete;
  CacheClaim& operator=(const CacheClaim&) = delete;
  ~CacheClaim();  // lets go

 private:
  explicit CacheClaim(int fd) : fd_(fd) {}
  void release();
  int fd_ = -1;  // the locked file; -1: a claim without a lock
};

}  // namespace torq::runner
