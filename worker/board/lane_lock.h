// LaneLock: the lanes of one board worker (its job processes, issue 32)
// take the board one at a time. Each lane compiles on its own; before the
// board lock (the real tool's remote mkdir, polled every 250 ms over ssh) a
// lane takes an flock on a file beside the board's control socket,
// released by the kernel when a lane dies. A waiting lane sleeps until a
// lock file is closed (inotify; a holder unlocks, then closes), so the
// board goes to the next lane at once and waiting costs no polling; it
// looks again every 200 ms regardless, and polls every few ms where
// inotify is not to be had. Other hosts and people still meet the remote
// lock.
//
// CompileSlot: at most N of those job processes import and compile at once
// (--capacity N). A board worker holds a few more jobs than it has compile
// lanes, so that while jobs wait for the board or run on it the N lanes go
// on compiling; each compiling lane holds one of the files
// <control_dir>/compile.<i>.lock (i < N), an flock as above.
#pragma once

#include <chrono>
#include <string>

namespace torq::board {

// The lanes' lock file of a board's control directory.
std::string lanes_lock_path(const std::string& control_dir);

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

class CompileSlot {
 public:
  // Waits up to `timeout` for one of `slots` (>= 1) slot files; throws
  // InfraError lock_timeout when none comes free.
  CompileSlot(const std::string& control_dir, int slots, std::chrono::milliseconds timeout);
  ~CompileSlot();
  CompileSlot(const CompileSlot&) = delete;
  CompileSlot& operator=(const CompileSlot&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace torq::board
