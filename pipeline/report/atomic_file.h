// A file written in pieces and published whole: a temporary file in the
// target's directory, fsync, rename over the target, fsync of the directory.
// Readers see the old file or the new one, never a partial one; a writer
// destroyed before commit() leaves no temporary file behind.
#pragma once

#include <string>
#include <string_view>

namespace torq::pipeline {

class AtomicFile {
 public:
  // Creates the temporary file; PipelineError naming `path` on failure.
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // without commit(): the temporary file is removed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends (buffered); PipelineError naming the path on failure.
  void write(std::string_view text);
  // Flushes, fsyncs and renames into place; PipelineError on failure (the
  // temporary file is removed).
  void commit();
  const std::string& path() const { return path_; }

 private:
  void flush();
  [[noreturn]] void fail(const std::string& what, int err);
  std::string path_, tmp_, dir_;
  std::string buffer_;
  int fd_ = -1;
};

}  // namespace torq::pipeline
