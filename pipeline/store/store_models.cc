// Model blobs in the store (store.h): chunks under "<hash>#<index>" and a
// manifest under the hash, written last; whole blobs of older stores still
// read.
#include <rocksdb/db.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <shared_mutex>

#include "pipeline/store/store.h"
#include "pipeline/store/store_io.h"

namespace torq::pipeline {

using namespace store_detail;  // NOLINT(google-build-using-namespace)

namespace {

// A manifest starts with a NUL byte, which no ONNX blob does (a protobuf
// field tag is never 0), so a whole blob of an older store is told apart.
constexpr char kManifestMagic[] = "\0torq-model-chunks v1 ";
constexpr size_t kManifestMagicSize = sizeof kManifestMagic - 1;

std::string chunk_key(const std::string& hash, uint64_t index) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "#%08" PRIu64, index);
  return hash + digits;
}

std::string manifest(uint64_t size, uint64_t chunks) {
  return std::string(kManifestMagic, kManifestMagicSize) + std::to_string(size) + " " + std::to_string(chunks) +
         " " + std::to_string(Store::kModelChunkBytes);
}

}  // namespace

// How a blob is stored: chunked (size, chunks, chunk size), or whole.
struct Store::ModelLayout {
  uint64_t size = 0, chunks = 0, chunk_bytes = 0;
  std::optional<std::string> whole;  // an older store's blob
};

std::optional<Store::ModelLayout> Store::model_layout(const std::string& hash) const {
  check_nonempty(dir_, "model hash", hash);
  std::optional<std::string> v = get(dir_, db_, models_, kModels, hash);
  if (!v) return std::nullopt;
  ModelLayout l;
  if (v->compare(0, kManifestMagicSize, kManifestMagic, kManifestMagicSize) != 0) {
    l.size = v->size();
    l.whole = std::move(v);
    return l;
  }
  const std::string fields = v->substr(kManifestMagicSize);
  if (std::sscanf(fields.c_str(), "%" SCNu64 " %" SCNu64 " %" SCNu64, &l.size, &l.chunks, &l.chunk_bytes) != 3 ||
      l.chunk_bytes == 0 || l.chunks != (l.size + l.chunk_bytes - 1) / l.chunk_bytes)
    throw_damage(dir_, kModels, "model hash '" + hash + "': damaged manifest '" + fields + "'");
  return l;
}

std::optional<uint64_t> Store::model_size(const std::string& hash) const {
  const std::optional<ModelLayout> l = model_layout(hash);
  if (!l) return std::nullopt;
  return l->size;
}

std::optional<std::string> Store::read_model(const std::string& hash, uint64_t offset, size_t max_bytes) const {
  const std::optional<ModelLayout> l = model_layout(hash);
  if (!l) return std::nullopt;
  const uint64_t end = std::min<uint64_t>(l->size, offset + std::min<uint64_t>(max_bytes, l->size));
  if (offset >= end) return std::string();
  if (l->whole) return l->whole->substr(offset, end - offset);
  std::string out;
  out.reserve(end - offset);
  rocksdb::PinnableSlice chunk;
  for (uint64_t i = offset / l->chunk_bytes; i * l->chunk_bytes < end; ++i) {
    const std::string key = chunk_key(hash, i);
    chunk.Reset();
    const uint64_t first = i * l->chunk_bytes;
    const uint64_t want = std::min(l->chunk_bytes, l->size - first);
    if (!get_into(dir_, db_, models_, kModels, key, &chunk) || chunk.size() != want)
      throw_damage(dir_, kModels, "model hash '" + hash + "': chunk " + std::to_string(i) + " of " +
                                      std::to_string(l->chunks) + " is " + (chunk.size() ? "damaged" : "missing"));
    const uint64_t from = std::max(offset, first), to = std::min(end, first + want);
    out.append(chunk.data() + (from - first), to - from);
  }
  return out;
}

std::optional<std::string> Store::get_model(const std::string& hash) const {
  return read_model(hash, 0, SIZE_MAX);
}

void Store::put_model(const std::string& hash, const std::string& bytes) {
  put_model(hash, [&](const base::ByteSink& sink) { sink(bytes.data(), bytes.size()); });
}

void Store::put_model(const std::string& hash, const std::function<void(const base::ByteSink&)>& write) {
  if (const std::optional<ModelLayout> old = model_layout(hash)) return verify_model(hash, *old, write);
  const std::shared_lock<std::shared_mutex> writing(models_mu_);  // the seal waits for the flush below
  std::string chunk;
  chunk.reserve(kModelChunkBytes);
  uint64_t size = 0, chunks = 0;
  // The chunks bypass the write-ahead log: a nightly's models (GBs) were
  // written twice through it (the log, then the blob files), and filled it
  // so often that every other column family's memtable was flushed early: 7
  // of the coordinator's 95 CPU-s on the nightly (issue 32). Durable once the
  // models memtable is flushed below, before the manifest names them; a
  // kill before that leaves no manifest, so no model, and the next put
  // writes it again.
  rocksdb::WriteOptions unlogged;
  unlogged.disableWAL = true;
  auto flush = [&] {
    const std::string key = chunk_key(hash, chunks++);
    check_write(dir_, db_->Put(unlogged, models_, key, chunk), kModels, key);
    chunk.clear();
  };
  write([&](const char* data, size_t n) {
    size += n;
    while (n) {
      const size_t take = std::min(n, kModelChunkBytes - chunk.size());
      chunk.append(data, take);
      data += take;
      n -= take;
      if (chunk.size() == kModelChunkBytes) flush();
    }
  });
  if (!chunk.empty()) flush();
  // The chunks into synced blob and table files (RocksDB syncs a flush's
  // files before it records them), then the manifest, synced, in the log.
  rocksdb::FlushOptions now;
  now.wait = true;
  now.allow_write_stall = true;
  check_write(dir_, db_->Flush(now, models_), kModels, hash);
  check_write(dir_, db_->Put(synced(), models_, hash, manifest(size, chunks)), kModels, hash);
}

// A blob stored again: its bytes must be the stored ones (one chunk read at
// a time). The hash is their SHA-256, so stored bytes that differ are
// damaged ones: a StoreReadError (store.h says why the run stops).
void Store::verify_model(const std::string& hash, const ModelLayout& stored,
                         const std::function<void(const base::ByteSink&)>& write) const {
  const auto differ = [&] {
    return damage_error(dir_, kModels,
                        "model hash '" + hash + "' is already stored with different bytes (the stored blob fails "
                        "its SHA-256: it is damaged, the model file is not)");
  };
  const uint64_t span = stored.whole ? std::max<uint64_t>(stored.size, 1) : stored.chunk_bytes;
  std::string piece;  // stored bytes [piece_at, piece_at + piece.size())
  uint64_t piece_at = 0, pos = 0;
  write([&](const char* data, size_t n) {
    if (pos + n > stored.size) throw differ();
    while (n) {
      if (pos < piece_at || pos >= piece_at + piece.size()) {
        piece_at = pos / span * span;
        piece = stored.whole ? *stored.whole : *read_model(hash, piece_at, span);
      }
      const size_t k = std::min<uint64_t>(n, piece_at + piece.size() - pos);
      if (std::memcmp(piece.data() + (pos - piece_at), data, k) != 0) throw differ();
      data += k;
      n -= k;
      pos += k;
    }
  });
  if (pos != stored.size) throw differ();
}

}  // namespace torq::pipeline
