// Whole files as bytes, read with one read() into a string of the file's
// size (a 30 MB model through a stringstream costs several copies and
// their page faults: 60 ms against 10).
#pragma once

#include <optional>
#include <string>

namespace torq::base {

// The file's bytes; nullopt when it cannot be opened or read.
std::optional<std::string> read_file_bytes(const std::string& path);

// A regular, non-empty file mapped read-only for as long as this lives;
// data() is null when it cannot be opened or mapped (read it instead).
// kPopulate faults every page in at once (a file read whole); kStream
// lets them fault in as read, for a reader that gives back what it has
// consumed (release()).
class MappedFile {
 public:
  enum class Mode { kPopulate, kStream };
  explicit MappedFile(const std::string& path, Mode mode = Mode::kPopulate);
  // Gives the pages wholly inside [offset, offset + size) back to the
  // system (they count in the process's RSS while mapped); reading them
  // again faults them in from the file.
  void release(size_t offset, size_t size) const;
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace torq::base
