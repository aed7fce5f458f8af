// FlatBuffers are read in place and must sit at an address aligned for
// their largest scalar (8 bytes). Buffers that arrive from ZeroMQ frames,
// RocksDB slices or merge operands carry no such promise; reading a
// misaligned one is undefined behaviour (UBSan reports it). AlignedBytes
// views `data` directly when it is aligned, else keeps an aligned copy.
// The view lives as long as the AlignedBytes and the original data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace torq::pipeline {

class AlignedBytes {
 public:
  AlignedBytes(const void* data, size_t size) : data_(static_cast<const uint8_t*>(data)) {
    // (Sizes past 1 TiB are left as they are: every caller caps them far lower.)
    if (data != nullptr && size > 0 && size <= (size_t{1} << 40) &&
        reinterpret_cast<uintptr_t>(data) % alignof(uint64_t) != 0) {
      copy_.resize((size + sizeof(uint64_t) - 1) / sizeof(uint64_t));
      std::memcpy(copy_.data(), data, size);
      data_ = reinterpret_cast<const uint8_t*>(copy_.data());
    }
  }
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  const uint8_t* data() const { return data_; }

 private:
  const uint8_t* data_;
  std::vector<uint64_t> copy_;
};

}  // namespace torq::pipeline
