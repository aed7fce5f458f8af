#include "pipeline/base/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

MappedFile::MappedFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p != MAP_FAILED) {
      data_ = static_cast<const char*>(p);
      size_ = static_cast<size_t>(st.st_size);
    }
  }
  close(fd);
}

MappedFile::~MappedFile() {
  if (data_) munmap(const_cast<char*>(data_), size_);
}

}  // namespace torq::base
