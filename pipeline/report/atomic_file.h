// A file written in pieces and published whole, and the output directory it
// goes to.
//
// AtomicFile: a temporary file <target>.tmp.<pid> beside the target (the one
// form of pipeline/base/temp_files.h, flock held while it is written),
// fsync, rename over the target, fsync of the directory. Readers see the old
// file or the new one, never a partial one; a writer destroyed before
// commit() leaves no temporary file behind, and one killed mid-write leaves
// one that the next prepare_output_dir() of that directory removes. Every
// error names the target and says why in the system's words ("out/ops.csv:
// cannot write: No space left on device").
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

// `text` as the whole of the file at `path`, published as AtomicFile does.
void write_file_atomic(const std::string& path, std::string_view text);

// Makes `dir` (and its parents) a directory a writer may start in, and
// removes the temporary files that killed writers left in it
// (base::sweep_dead_temp_files; each said on stderr). PipelineError with the
// real reason otherwise: "output directory out: out is a symbolic link to
// /gone, which does not exist", "output directory out: cannot create:
// Permission denied". An empty `dir` is the current directory.
void prepare_output_dir(const std::string& dir);

}  // namespace torq::pipeline
