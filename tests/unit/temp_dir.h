// A scratch directory for a test: created under the system's temp directory
// (mkdtemp, so parallel tests never share one), removed with everything in
// it when the TempDir goes out of scope.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace torq::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "torq-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    root_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The directory's absolute path, or that of `rel` inside it.
  std::string path() const { return root_.string(); }
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

}  // namespace torq::test
