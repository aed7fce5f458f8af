// Units that arrive while a run is serving (unit_run.h): a matrix run
// prepares its models (import, bf16 conversion, int8 quantization) on a
// thread of its own and pushes each unit here as soon as it is ready, so the
// workers run the first model's jobs while the next ones are prepared.
//
// Contracts:
//  - push() and close() are called by the preparing thread, take() and
//    open() by the serving one; each side may call while the other does.
//  - fd() (an eventfd) is readable from a push or close until the next
//    take(): a broker polls it instead of waking on a timer. A take()
//    with nothing pushed since the last makes no system call.
//  - Units come out in the order they were pushed.
#pragma once

#include <deque>
#include <mutex>

#include "coordinator/fleet/unit_run.h"

namespace torq::coordinator {

class UnitFeed {
 public:
  UnitFeed();  // throws PipelineError when no eventfd can be made
  ~UnitFeed();
  UnitFeed(const UnitFeed&) = delete;
  UnitFeed& operator=(const UnitFeed&) = delete;

  // Preparing side: one more unit; no more units.
  void push(RunUnit unit);
  void close();

  // Serving side: appends the units pushed since the last take to `into`;
  // returns how many.
  size_t take(std::deque<RunUnit>* into);
  // True until close() was called and every unit was taken.
  bool open() const;
  int fd() const { return fd_; }

 private:
  void wake_locked();
  int fd_ = -1;
  mutable std::mutex mu_;
  std::deque<RunUnit> ready_;
  bool closed_ = false;
  bool signalled_ = false;  // under mu_: the fd is readable (a push or close not yet taken)
};

}  // namespace torq::coordinator
