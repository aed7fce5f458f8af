#include "worker/board/lane_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "worker/board/infra_error.h"

namespace torq::board {
namespace {

void close_all(const std::vector<int>& fds) {
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
}

// Takes an flock on one of `paths` (the first that is free), waiting up to
// `timeout`: flock has no timeout, so try each, then sleep briefly (a
// holder's step is the wait). Returns the held file's descriptor; the
// others are closed. `busy` says who kept them, for the lock_timeout error.
int take_one(const std::vector<std::string>& paths, std::chrono::milliseconds timeout,
                             const std::string& busy) {
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
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(20))) {
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
    if (std::chrono::steady_clock::now() >= until) {
      close_all(fds);
      throw InfraError(InfraKind::lock_timeout, paths.front() + (paths.size() > 1 ? " and the other slots: " : ": ") +
                                                    busy + " for " + std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(pause);
  }
}

}  // namespace

std::string lanes_lock_path(const std::string& control_dir) { return control_dir + "/board.lock"; }

LaneLock::LaneLock(const std::string& control_dir, std::chrono::milliseconds timeout) {
  fd_ = take_one({lanes_lock_path(control_dir)}, timeout, "another lane of this worker kept the board");
}

LaneLock::~LaneLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

CompileSlot::CompileSlot(const std::string& control_dir, int slots, std::chrono::milliseconds timeout) {
  if (slots < 1) throw std::invalid_argument("CompileSlot: slots must be at least 1");
  std::vector<std::string> paths;
  for (int i = 0; i < slots; ++i) paths.push_back(control_dir + "/compile." + std::to_string(i) + ".lock");
  fd_ = take_one(paths, timeout, "the worker's other lanes kept every compile slot");
}

CompileSlot::~CompileSlot() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace torq::board
