// Test helpers for the matrix tests: a temporary directory (removed at the
// end of the test) to write spec and config files into, and the message of
// the PipelineError a call throws.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "pipeline/types.h"

namespace torq::matrix_test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "torq-matrix-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The absolute path of `rel` inside the directory.
  std::string path(const std::string& rel) const { return (root_ / rel).string(); }
  // Writes `text` to `rel` (creating directories); returns its absolute path.
  std::string write(const std::string& rel, const std::string& text) const {
    const std::filesystem::path p = root_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

 private:
  std::filesystem::path root_;
};

// The message of the PipelineError `f` throws; "no error" when it returns.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const pipeline::PipelineError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace torq::matrix_test
