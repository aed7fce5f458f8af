#include "worker/runner/frame_io.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <stdexcept>

namespace torq::runner {

// Returns bytes read (< n only at EOF).
static size_t read_all(int fd, char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

// Header and payload in one writev: a reader blocked on the pipe wakes once
// per frame with the whole of it there, not on the 4-byte header first and
// then again for the payload (two wake-ups, each an IPI in a VM). A short
// write (a signal after part of a frame larger than the pipe's free space
// went in) advances through the two pieces and writes the rest.
bool write_frame(int fd, const std::string& payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  char hdr[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                 static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
  iovec iov[2] = {{hdr, 4}, {const_cast<char*>(payload.data()), payload.size()}};
  iovec* next = iov;
  int left = payload.empty() ? 1 : 2;
  while (left > 0) {
    const ssize_t w = ::writev(fd, next, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    for (size_t done = static_cast<size_t>(w); done > 0;) {
      const size_t take = std::min(done, next->iov_len);
      next->iov_base = static_cast<char*>(next->iov_base) + take;
      next->iov_len -= take;
      done -= take;
      if (next->iov_len == 0) {
        ++next;
        --left;
      }
    }
  }
  return true;
}

std::optional<std::string> read_frame(int fd, size_t max_bytes) {
  unsigned char hdr[4];
  const size_t h = read_all(fd, reinterpret_cast<char*>(hdr), 4);
  if (h == 0) return std::nullopt;
  if (h < 4) throw std::runtime_error("truncated frame header");
  const uint32_t n = hdr[0] | (hdr[1] << 8) | (hdr[2] << 16) | (static_cast<uint32_t>(hdr[3]) << 24);
  if (n > max_bytes) throw std::runtime_error("frame of " + std::to_string(n) + " bytes exceeds the cap");
  std::string payload(n, '\0');
  if (read_all(fd, payload.data(), n) < n) throw std::runtime_error("truncated frame");
  return payload;
}

}  // namespace torq::runner
