// A queue of prepared units with an eventfd to wake the serving loop (see unit_feed.h).
#include "coordinator/fleet/unit_feed.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "pipeline/core/types.h"

namespace torq::coordinator {

UnitFeed::UnitFeed() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw pipeline::PipelineError(std::string("eventfd: ") + std::strerror(errno));
}

UnitFeed::~UnitFeed() { ::close(fd_); }

// Under mu_: the fd is readable exactly while signalled_ is set (the write
// and the read happen under the lock with the flag), so a take() with
// nothing pushed since the last makes no system call, and a readable fd
// always has a take() that drains it.
void UnitFeed::wake_locked() {
  if (signalled_) return;
  const uint64_t one = 1;
  // EAGAIN (the counter is at its maximum) still leaves the fd readable.
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
  signalled_ = true;
}

void UnitFeed::push(RunUnit unit) {
  std::lock_guard<std::mutex> lock(mu_);
  ready_.push_back(std::move(unit));
  wake_locked();
}

void UnitFeed::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  wake_locked();
}

size_t UnitFeed::take(std::deque<RunUnit>* into) {
  std::lock_guard<std::mutex> lock(mu_);
  if (signalled_) {
    uint64_t count = 0;
    [[maybe_unused]] const ssize_t n = ::read(fd_, &count, sizeof count);
    signalled_ = false;
  }
  const size_t taken = ready_.size();
  for (auto& u : ready_) into->push_back(std::move(u));
  ready_.clear();
  return taken;
}

bool UnitFeed::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !closed_ || !ready_.empty();
}

}  // namespace torq::coordinator
