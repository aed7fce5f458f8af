// SHA-256 (OpenSSL's EVP): in one call, incrementally, or over a protobuf
// message's serialisation without holding its bytes (a 30 MB model's
// identity costs no 30 MB buffer and its page faults).
#pragma once

#include <cstddef>
#include <string>

#include "pipeline/base/byte_sink.h"

namespace google::protobuf {
class MessageLite;
}
struct evp_md_ctx_st;

namespace torq::pipeline {

class Sha256 {
 public:
  Sha256();  // throws PipelineError when OpenSSL cannot start a digest
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t size);
  void update(const std::string& s) { update(s.data(), s.size()); }
  // Adds a file's bytes, read 1 MB at a time (a 346 MB model is never held);
  // false when it cannot be opened or read.
  bool update_file(const std::string& path);
  // The digest as 64 lowercase hex digits; the object is spent after it.
  std::string hex();

 private:
  evp_md_ctx_st* ctx_;
};

std::string sha256_hex(const std::string& data);
std::string sha256_hex(const void* data, size_t size);
// SHA-256 of m.SerializeAsString(), serialised through a small buffer;
// with `copy_to` set, the serialisation is also written to that file in
// the same pass. Throws PipelineError "<copy_to>: cannot write ...".
std::string sha256_hex_of(const google::protobuf::MessageLite& m, const std::string& copy_to = "");
// m's serialisation handed to `sink` one 256 KB buffer at a time (the bytes
// of m.SerializeAsString(), never all at once). Throws PipelineError when
// protobuf cannot serialise it; whatever `sink` throws passes through.
void serialize_to_sink(const google::protobuf::MessageLite& m, const base::ByteSink& sink);
// The first 16 hex digits of the SHA-256 of a file's bytes (of nothing when
// it cannot be read): a profile's or a targets file's identity in run ids
// and cache keys.
std::string file_digest(const std::string& path);

}  // namespace torq::pipeline
