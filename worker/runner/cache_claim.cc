#include "worker/runner/cache_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

namespace torq::runner {

std::optional<CacheClaim> CacheClaim::try_take(const std::string& cache_dir, const std::string& hash) {
  const std::string dir = cache_dir + "/.fetching";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // Close-on-exec: a job process started while this one fetches must not
  // keep the claim alive after this process dies.
  const int fd = ::open((dir + "/" + hash).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return CacheClaim(-1);
  int rc;
  do rc = ::flock(fd, LOCK_EX | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  if (rc == 0) return CacheClaim(fd);
  const bool held = errno == EWOULDBLOCK;
  ::close(fd);
  if (held) return std::nullopt;
  return CacheClaim(-1);  // no locks here (ENOLCK): fetch alone
}

CacheClaim& CacheClaim::operator=(CacheClaim&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

CacheClaim::~CacheClaim() { release(); }

void CacheClaim::release() {
  if (fd_ < 0) return;
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
  fd_ = -1;
}

}  // namespace torq::runner
