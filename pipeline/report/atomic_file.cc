// AtomicFile: temporary file, fsync, rename, fsync of the directory.
#include "pipeline/report/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pipeline/core/types.h"

namespace torq::pipeline {

namespace fs = std::filesystem;

namespace {
constexpr size_t kBufferBytes = size_t{1} << 20;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const fs::path target(path_);
  dir_ = target.has_parent_path() ? target.parent_path().string() : std::string(".");
  tmp_ = (fs::path(dir_) / ("." + target.filename().string() + ".tmpXXXXXX")).string();
  fd_ = ::mkostemp(tmp_.data(), O_CLOEXEC);  // a tool started meanwhile does not inherit it
  if (fd_ < 0) {
    const int err = errno;
    tmp_.clear();
    throw PipelineError(path_ + ": cannot create a temporary file in " + dir_ + ": " + std::strerror(err));
  }
  buffer_.reserve(kBufferBytes);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const std::string& what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
  throw PipelineError(path_ + ": " + what + ": " + std::strerror(err));
}

void AtomicFile::flush() {
  if (fd_ < 0) throw PipelineError(path_ + ": written after it was committed or failed");
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write", errno);
    }
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
}

void AtomicFile::write(std::string_view text) {
  buffer_.append(text);
  if (buffer_.size() >= kBufferBytes) flush();
}

void AtomicFile::commit() {
  flush();
  if (::fchmod(fd_, 0644) != 0) fail("cannot set permissions", errno);
  if (::fsync(fd_) != 0) fail("cannot fsync", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot close", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("cannot rename the temporary file into place", errno);
  tmp_.clear();
  // Make the rename itself durable.
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace torq::pipeline
