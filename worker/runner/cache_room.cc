// A model cache's room (cache_room.h).
#include "worker/runner/cache_room.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace torq::runner {

std::string cache_unwritable(const std::string& dir) {
  const std::string probe = dir + "/.health-probe." + std::to_string(getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "model cache " + dir + " takes no file: " + std::strerror(errno);
  static const std::string block(64 * 1024, '\0');
  size_t written = 0;
  int err = 0;
  while (written < block.size()) {  // a short write is followed by the error that ended it
    const ssize_t n = ::write(fd, block.data() + written, block.size() - written);
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC;
      break;
    }
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  ::unlink(probe.c_str());
  if (written < block.size()) return "model cache " + dir + " takes no write: " + std::strerror(err);
  return "";
}

uint64_t cache_free_bytes(const std::string& dir) {
  struct statvfs st{};
  if (::statvfs(dir.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

std::string no_room_reason(const std::string& dir, const std::string& hash, uint64_t bytes, uint64_t free) {
  return "cache " + dir + ": no room for model " + hash.substr(0, 16) + " (" + std::to_string(bytes) + " bytes, " +
         std::to_string(free) + " free)";
}

}  // namespace torq::runner
