// LaneLock: the lanes of one board worker (its job processes, --capacity
// of them, issue 32) take the board one at a time. Each lane compiles on
// its own; before the board lock (the real tool's remote mkdir, polled
// every 250 ms over ssh) a lane takes an flock on a file beside the board's
// control socket, tried every few ms locally and released by the kernel when
// a lane dies. Other hosts and people still meet the remote lock.
#pragma once

#include <chrono>
#include <string>

namespace torq::board {

class LaneLock {
 public:
  // Waits up to `timeout` for <control_dir>/board.lock; throws InfraError
  // lock_timeout naming the file when it does not come.
  LaneLock(const std::string& control_dir, std::chrono::milliseconds timeout);
  ~LaneLock();
  LaneLock(const LaneLock&) = delete;
  LaneLock& operator=(const LaneLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace torq::board
