#include "pipeline/base/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace torq::base {

namespace {

// Opens `path` for reading without blocking on a FIFO or a device, and
// gives back a descriptor of a regular file (blocking again), or -1 with
// the reason in `why`.
int open_regular(const std::string& path, std::string* why) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (why) *why = err == ENOENT ? "does not exist" : std::strerror(err);
    return -1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (why) *why = std::string("is ") + file_kind_name(st.st_mode) + ", not a regular file";
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

const char* file_kind_name(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a file of a known kind";
}

std::string not_a_regular_file(const std::string& path) {
  std::string why;
  const int fd = open_regular(path, &why);
  if (fd >= 0) close(fd);
  return why;
}

std::string not_a_writable_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "";  // nothing there (or a dangling link): it is created
  if (S_ISREG(st.st_mode)) return "";
  return std::string("is ") + file_kind_name(st.st_mode) + ", not a regular file";
}

std::optional<std::string> read_file_bytes(const std::string& path, std::string* why) {
  const int fd = open_regular(path, why);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string bytes;
  bool ok = fstat(fd, &st) == 0;
  if (ok) bytes.resize(static_cast<size_t>(st.st_size));
  size_t at = 0;
  while (ok) {
    // Read past the size fstat gave: the file may have grown meanwhile.
    if (at == bytes.size()) bytes.resize(bytes.size() + 65536);
    const ssize_t n = read(fd, bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    else if (n == 0) break;
    else at += static_cast<size_t>(n);
  }
  const int err = errno;
  close(fd);
  if (!ok) {
    if (why) *why = std::strerror(err);
    return std::nullopt;
  }
  bytes.resize(at);
  return bytes;
}

MappedFile::MappedFile(const std::string& path, Mode mode) {
  const int fd = open_regular(path, nullptr);
  if (fd < 0) return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    const int flags = MAP_PRIVATE | (mode == Mode::kPopulate ? MAP_POPULATE : 0);
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, flags, fd, 0);
    if (p != MAP_FAILED && mode == Mode::kStream) madvise(p, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
    if (p != MAP_FAILED) {
      data_ = static_cast<const char*>(p);
      size_ = static_cast<size_t>(st.st_size);
    }
  }
  close(fd);
}

void MappedFile::release(size_t offset, size_t size) const {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t end = std::min(size_, offset + size) / page * page;
  const size_t first = (offset + page - 1) / page * page;
  if (data_ && first < end) madvise(const_cast<char*>(data_) + first, end - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_) munmap(const_cast<char*>(data_), size_);
}

}  // namespace torq::base
