// Whole files as bytes, read with one read() into a string of the file's
// size (a 30 MB model through a stringstream costs several copies and
// their page faults: 60 ms against 10).
#pragma once

#include <optional>
#include <string>

namespace torq::base {

// The file's bytes; nullopt when it cannot be opened or read, or is not a
// regular file. Never blocks on what is not a regular file (a FIFO, a
// device): it is opened non-blocking and refused by its kind. `why`, when
// given, gets the reason in words ("is a FIFO (named pipe), not a regular
// file", "does not exist", "Permission denied").
std::optional<std::string> read_file_bytes(const std::string& path, std::string* why = nullptr);

// Why `path` cannot be read as a regular file, in words, or "" when it can
// be opened as one: "does not exist", "is a directory, not a regular file",
// "is a FIFO (named pipe), not a regular file", "is a character device,
// not a regular file", or the open's strerror. Follows symbolic links;
// never blocks (the file is opened O_NONBLOCK and only fstat'ed).
std::string not_a_regular_file(const std::string& path);

// Why a file cannot be written at `path`, in words, or "" when a regular
// file may be created or replaced there: a FIFO, a device, a directory or
// a socket at `path` is refused by its kind ("is a FIFO (named pipe), not
// a regular file"), since opening it for writing could block for ever or
// write into a device. Follows symbolic links; never blocks.
std::string not_a_writable_file(const std::string& path);

// The kind of file `mode` (a stat st_mode) is: "a regular file", "a
// directory", "a FIFO (named pipe)", "a character device", "a block
// device", "a socket", "a symbolic link".
const char* file_kind_name(unsigned mode);

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
