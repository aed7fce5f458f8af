#include "worker/board/lane_lock.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "worker/board/infra_error.h"

namespace torq::board {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

void close_all(const std::vector<int>& fds) {
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
}

// Wakes a waiter when one of the lock files is closed (inotify): a holder
// releases its flock and then closes the file (release() below), and a
// holder that dies has its files closed by the kernel. Without inotify
// (its per-user instance limit reached, say) the waiter polls instead.
class CloseWatch {
 public:
  explicit CloseWatch(const std::vector<std::string>& paths) {
    fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    for (size_t i = 0; fd_ >= 0 && i < paths.size(); ++i)
      if (::inotify_add_watch(fd_, paths[i].c_str(), IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0) {
        ::close(fd_);
        fd_ = -1;
      }
  }
  ~CloseWatch() {
    if (fd_ >= 0) ::close(fd_);
  }
  CloseWatch(const CloseWatch&) = delete;
  CloseWatch& operator=(const CloseWatch&) = delete;

  // Waits up to `most` for a close (at most kRecheck with inotify: a holder
  // killed between the kernel's close notice and its lock's release leaves
  // no second notice), or sleeps `poll_pause` without it.
  void wait(milliseconds most, milliseconds poll_pause) {
    if (fd_ < 0) {
      std::this_thread::sleep_for(std::min(most, poll_pause));
      return;
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min(most, kRecheck).count())) > 0) {
      char buf[4096];
      while (::read(fd_, buf, sizeof buf) > 0) {
      }
    }
  }

 private:
  static constexpr milliseconds kRecheck{200};
  int fd_ = -1;
};

// Takes an flock on one of `paths` (the first that is free), waiting up to
// `timeout`: flock has no timeout, so try each, then wait for one of them
// to be closed (CloseWatch) and try again. Returns the held file's
// descriptor; the others are closed. `busy` says who kept them, for the
// lock_timeout error.
int take_one(const std::vector<std::string>& paths, milliseconds timeout, const std::string& busy) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(paths.front()).parent_path(), ec);
  std::vector<int> fds;
  for (const auto& path : paths) {
    fds.push_back(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (fds.back() < 0) {
      const int err = errno;
      close_all(fds);
      throw InfraError(InfraKind::staging, path + ": cannot open the lanes' lock: " + std::strerror(err));
    }
  }
  // Watching before the first try: a release after it is never missed.
  std::optional<CloseWatch> watch;
  const auto until = Clock::now() + timeout;
  for (auto pause = milliseconds(1);; pause = std::min(pause * 2, milliseconds(20))) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (::flock(fds[i], LOCK_EX | LOCK_NB) == 0) {
        const int fd = fds[i];
        fds[i] = -1;
        close_all(fds);
        return fd;
      }
      if (errno != EWOULDBLOCK && errno != EINTR) {
        const int err = errno;
        close_all(fds);
        throw InfraError(InfraKind::staging, paths[i] + ": flock: " + std::strerror(err));
      }
    }
    const auto now = Clock::now();
    if (now >= until) {
      close_all(fds);
      throw InfraError(InfraKind::lock_timeout, paths.front() + (paths.size() > 1 ? " and the other slots: " : ": ") +
                                                    busy + " for " + std::to_string(timeout.count()) + " ms");
    }
    if (!watch) {
      watch.emplace(paths);
      continue;  // tried again once watched: a release in between was not seen
    }
    watch->wait(std::chrono::ceil<milliseconds>(until - now), pause);
  }
}

// Unlocks before closing: a waiter woken by the close then finds the lock
// free (the kernel reports a close before it drops the file's locks).
void release(int fd) {
  if (fd < 0) return;
  ::flock(fd, LOCK_UN);
  ::close(fd);
}

}  // namespace

std::string lanes_lock_path(const std::string& control_dir) { return control_dir + "/board.lock"; }

LaneLock::LaneLock(const std::string& control_dir, milliseconds timeout) {
  fd_ = take_one({lanes_lock_path(control_dir)}, timeout, "another lane of this worker kept the board");
}

LaneLock::~LaneLock() { release(fd_); }

CompileSlot::CompileSlot(const std::string& control_dir, int slots, milliseconds timeout) {
  if (slots < 1) throw std::invalid_argument("CompileSlot: slots must be at least 1");
  std::vector<std::string> paths;
  for (int i = 0; i < slots; ++i) paths.push_back(control_dir + "/compile." + std::to_string(i) + ".lock");
  fd_ = take_one(paths, timeout, "the worker's other lanes kept every compile slot");
}

CompileSlot::~CompileSlot() { release(fd_); }

}  // namespace torq::board
