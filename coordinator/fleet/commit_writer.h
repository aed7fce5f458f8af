// Commits the broker's result batches (Store::commit_results, synced) on a
// thread of its own, one batch at a time, so the broker's thread goes on
// receiving and dispatching while a batch is encoded, inserted and synced.
// Durability is unchanged: the broker acknowledges and reports a batch's
// results only after done() has returned true for it (the commit is on
// disk), and a write error is rethrown there, before anything of the batch
// is acknowledged. fd() becomes readable when the batch in flight is
// written (an eventfd, for the broker's poll).
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/store/store.h"

namespace torq::coordinator {

class CommitWriter {
 public:
  CommitWriter(pipeline::Store& store, std::string run);
  ~CommitWriter();  // waits for the batch in flight; its error, if any, is lost
  CommitWriter(const CommitWriter&) = delete;
  CommitWriter& operator=(const CommitWriter&) = delete;

  int fd() const { return event_fd_; }
  bool busy() const { return busy_; }
  // Starts committing `commits` (taken). Requires !busy().
  void start(std::vector<pipeline::Store::KeyedCommit> commits);
  // True when the batch in flight is committed (then not busy); `wait`
  // blocks until it is. Rethrows the commit's error.
  bool done(bool wait);

 private:
  void loop();
  pipeline::Store& store_;
  const std::string run_;
  int event_fd_ = -1;
  bool busy_ = false;  // the broker's view: a batch started and not yet collected
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<pipeline::Store::KeyedCommit> batch_;
  bool has_batch_ = false, written_ = false, closing_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace torq::coordinator
