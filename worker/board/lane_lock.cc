#include "worker/board/lane_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "worker/board/infra_error.h"

namespace torq::board {

LaneLock::LaneLock(const std::string& control_dir, std::chrono::milliseconds timeout) {
  std::error_code ec;
  std::filesystem::create_directories(control_dir, ec);
  const std::string path = control_dir + "/board.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InfraError(InfraKind::staging, path + ": cannot open the lanes' lock: " + std::strerror(errno));
  const auto until = std::chrono::steady_clock::now() + timeout;
  // flock has no timeout: try, then sleep briefly (the holder's run is the wait).
  for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(20))) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int err = errno;
      ::close(fd_);
      throw InfraError(InfraKind::staging, path + ": flock: " + std::strerror(err));
    }
    if (std::chrono::steady_clock::now() >= until) {
      ::close(fd_);
      throw InfraError(InfraKind::lock_timeout, path + ": another lane of this worker kept the board for " +
                                                    std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(pause);
  }
}

LaneLock::~LaneLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace torq::board
