// Whole files as bytes, read with one read() into a string of the file's
// size (a 30 MB model through a stringstream costs several copies and
// their page faults: 60 ms against 10).
#pragma once

#include <optional>
#include <string>

namespace torq::base {

// The file's bytes; nullopt when it cannot be opened or read.
std::optional<std::string> read_file_bytes(const std::string& path);

}  // namespace torq::base
