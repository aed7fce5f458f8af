// Whether a worker's model cache can take what it is sent: a write at all
// (the health check's probe) and room for a model of a given size. A cache
// on a full or nearly full disk, or a read-only one, fails every fetch
// (issues 30 and 60); the worker then turns Bad with these reasons instead
// of failing jobs.
//
// Contracts:
//  - cache_unwritable() writes a probe file of 64 KiB into `dir` and
//    removes it; "" when that worked, else why not (errno's text).
//  - cache_free_bytes() is what an unprivileged process may still write on
//    the filesystem of `dir` (statvfs f_bavail * f_frsize); 0 when it
//    cannot be read.
//  - no_room_reason() is the one wording of "the model does not fit":
//    "cache DIR: no room for model HASH16 (N bytes, M free)".
#pragma once

#include <cstdint>
#include <string>

namespace torq::runner {

std::string cache_unwritable(const std::string& dir);
uint64_t cache_free_bytes(const std::string& dir);
std::string no_room_reason(const std::string& dir, const std::string& hash, uint64_t bytes, uint64_t free);

}  // namespace torq::runner
