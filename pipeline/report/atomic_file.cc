// AtomicFile: temporary file, fsync, rename, fsync of the directory; the
// output directory made and swept.
#include "pipeline/report/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pipeline/base/temp_files.h"
#include "pipeline/core/types.h"

namespace torq::pipeline {

namespace fs = std::filesystem;

namespace {
constexpr size_t kBufferBytes = size_t{1} << 20;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const fs::path target(path_);
  dir_ = target.has_parent_path() ? target.parent_path().string() : std::string(".");
  tmp_ = base::temp_path_for(path_);
  fd_ = base::create_temp_file(tmp_);  // close-on-exec: a tool started meanwhile does not inherit it
  if (fd_ < 0) {
    const int err = errno;
    tmp_.clear();
    throw PipelineError(path_ + ": cannot create a temporary file in " + dir_ + ": " + std::strerror(err));
  }
  buffer_.reserve(kBufferBytes);
}

// Unlinked before its descriptor closes: the lock is never free on a file
// that is still there.
AtomicFile::~AtomicFile() {
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  if (fd_ >= 0) ::close(fd_);
}

void AtomicFile::fail(const std::string& what, int err) {
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
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
  // Renamed while the lock is held (no sweep sees the file unlocked), then
  // closed: after a good fsync, close(2) has nothing left to report.
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("cannot rename the temporary file into place", errno);
  tmp_.clear();
  ::close(fd_);
  fd_ = -1;
  // Make the rename itself durable.
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, std::string_view text) {
  AtomicFile f(path);
  f.write(text);
  f.commit();
}

void prepare_output_dir(const std::string& dir) {
  const std::string d = dir.empty() ? std::string(".") : dir;
  if (const std::string why = base::directory_obstacle(d); !why.empty())  // "out is a symbolic link to ..."
    throw PipelineError("output directory " + (why.rfind(d + " ", 0) == 0 ? why : d + ": " + why));
  std::error_code ec;
  fs::create_directories(d, ec);
  if (ec) throw PipelineError("output directory " + d + ": cannot create: " + ec.message());
  base::sweep_dead_temp_files(d);
}

}  // namespace torq::pipeline
