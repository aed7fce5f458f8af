// Length-prefixed frames over file descriptors (pipes): a 4-byte
// little-endian length, then the payload. Used between a local worker
// process and its parent.
#pragma once

#include <optional>
#include <string>

namespace torq::runner {

// Writes one frame; false if the peer is gone.
bool write_frame(int fd, const std::string& payload);
// Reads one frame. nullopt on clean EOF before a frame; throws
// std::runtime_error on a truncated frame or one over `max_bytes`.
std::optional<std::string> read_frame(int fd, size_t max_bytes);

}  // namespace torq::runner
