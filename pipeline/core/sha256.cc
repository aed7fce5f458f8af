#include "pipeline/core/sha256.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <google/protobuf/io/zero_copy_stream.h>
#include <google/protobuf/message_lite.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "pipeline/core/types.h"

namespace torq::pipeline {

namespace {

// OpenSSL 3 looks EVP_sha256() up in its provider tables at every
// EVP_DigestInit_ex (an "implicit fetch", about 0.17 us here of a 0.4 us
// digest of a cache key); fetched once, the digest is kept for the process.
const EVP_MD* sha256_md() {
  static const EVP_MD* md = [] {
    const EVP_MD* f = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (f) return f;
    ERR_clear_error();  // the failed fetch's error is not for the next caller of ERR_get_error
    return EVP_sha256();
  }();
  return md;
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || !EVP_DigestInit_ex(ctx_, sha256_md(), nullptr)) {
    EVP_MD_CTX_free(ctx_);
    throw PipelineError("SHA-256 init failed");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const void* data, size_t size) {
  if (size && !EVP_DigestUpdate(ctx_, data, size)) throw PipelineError("SHA-256 update failed");
}

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!EVP_DigestFinal_ex(ctx_, md, &len)) throw PipelineError("SHA-256 failed");
  static const char* d = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out += d[md[i] >> 4];
    out += d[md[i] & 15];
  }
  return out;
}

bool Sha256::update_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    update(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

std::string sha256_hex(const std::string& data) { return sha256_hex(data.data(), data.size()); }

std::string sha256_hex(const void* data, size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.hex();
}

namespace {

// Protobuf writes into one cache-resident buffer; each full buffer goes to
// the sink and is handed back.
class SinkStream : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  explicit SinkStream(const base::ByteSink& sink) : sink_(sink), buf_(256 << 10) {}
  bool Next(void** data, int* size) override {
    flush();
    *data = buf_.data();
    *size = static_cast<int>(buf_.size());
    used_ = buf_.size();
    return true;
  }
  void BackUp(int count) override { used_ -= static_cast<size_t>(count); }
  int64_t ByteCount() const override { return static_cast<int64_t>(total_ + used_); }
  void flush() {
    if (used_) sink_(buf_.data(), used_);
    total_ += used_;
    used_ = 0;
  }

 private:
  const base::ByteSink& sink_;
  std::vector<char> buf_;
  size_t used_ = 0, total_ = 0;
};

// Writes all of [data, data + size) to `fd`.
void write_all(int fd, const char* data, size_t size) {
  for (size_t at = 0; at < size;) {
    const ssize_t n = ::write(fd, data + at, size - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw PipelineError(std::string("cannot write (") + std::strerror(n < 0 ? errno : EIO) + ")");
    at += static_cast<size_t>(n);
  }
}

}  // namespace

void serialize_to_sink(const google::protobuf::MessageLite& m, const base::ByteSink& sink) {
  SinkStream s(sink);
  if (!m.SerializeToZeroCopyStream(&s)) throw PipelineError("cannot serialise the model");
  s.flush();
}

std::string sha256_hex_of(const google::protobuf::MessageLite& m, const std::string& copy_to) {
  Sha256 h;
  int fd = -1;
  if (!copy_to.empty()) {
    fd = ::open(copy_to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw PipelineError(copy_to + ": cannot write (" + std::strerror(errno) + ")");
  }
  try {
    serialize_to_sink(m, [&](const char* data, size_t size) {
      h.update(data, size);
      if (fd >= 0) write_all(fd, data, size);
    });
  } catch (const PipelineError& e) {
    if (fd >= 0) ::close(fd);
    throw PipelineError(copy_to.empty() ? e.what() : copy_to + ": " + e.what());
  }
  if (fd >= 0 && ::close(fd) != 0) throw PipelineError(copy_to + ": cannot write (" + std::strerror(errno) + ")");
  return h.hex();
}

std::string file_digest(const std::string& path) {
  Sha256 h;
  if (!h.update_file(path)) return sha256_hex("").substr(0, 16);  // of nothing, as before
  return h.hex().substr(0, 16);
}

}  // namespace torq::pipeline
