#include "pipeline/base/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace torq::base {

std::optional<std::string> read_file_bytes(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string bytes;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
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
  close(fd);
  if (!ok) return std::nullopt;
  bytes.resize(at);
  return bytes;
}

MappedFile::MappedFile(const std::string& path, Mode mode) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
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
