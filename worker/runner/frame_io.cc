#include "worker/runner/frame_io.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>

namespace torq::runner {

static bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

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
// then again for the payload (two wake-ups, each an IPI in a VM).
bool write_frame(int fd, const std::string& payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  const char hdr[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                       static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
  iovec iov[2] = {{const_cast<char*>(hdr), 4}, {const_cast<char*>(payload.data()), payload.size()}};
  ssize_t w;
  do w = ::writev(fd, iov, 2);
  while (w < 0 && errno == EINTR);
  if (w <= 0) return false;
  // A short write (a frame larger than the pipe's free space): the rest in order.
  size_t done = static_cast<size_t>(w);
  if (done < 4) return write_all(fd, hdr + done, 4 - done) && write_all(fd, payload.data(), payload.size());
  done -= 4;
  return write_all(fd, payload.data() + done, payload.size() - done);
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
