// Byte-level gather used by the data-movement kernels (see movement_util.h).
#include "worker/engine/kernels/movement_util.h"

#include <algorithm>
#include <cstring>

namespace torq::engine {

namespace {

// Copies one output row of n elements of type U.
template <class U>
void copy_row(const uint8_t* src, int64_t base, const int64_t* off, int64_t n, uint8_t* dst,
              const void* fill) {
  const U* s = reinterpret_cast<const U*>(src);
  U* d = reinterpret_cast<U*>(dst);
  U f{};
  if (fill) std::memcpy(&f, fill, sizeof(U));
  for (int64_t j = 0; j < n; ++j) d[j] = off[j] == kFillOffset ? f : s[base + off[j]];
}

void copy_row_bytes(const uint8_t* src, int64_t base, const int64_t* off, int64_t n,
                    uint8_t* dst, size_t esize, const void* fill) {
  switch (esize) {
    case 1: copy_row<uint8_t>(src, base, off, n, dst, fill); return;
    case 2: copy_row<uint16_t>(src, base, off, n, dst, fill); return;
    case 4: copy_row<uint32_t>(src, base, off, n, dst, fill); return;
    case 8: copy_row<uint64_t>(src, base, off, n, dst, fill); return;
    default:
      for (int64_t j = 0; j < n; ++j) {
        const void* from = off[j] == kFillOffset
                               ? fill
                               : static_cast<const void*>(src + (base + off[j]) * static_cast<int64_t>(esize));
        std::memcpy(dst + j * static_cast<int64_t>(esize), from, esize);
      }
  }
}

void fill_row(uint8_t* dst, int64_t n, size_t esize, const void* fill) {
  for (int64_t j = 0; j < n; ++j) std::memcpy(dst + j * static_cast<int64_t>(esize), fill, esize);
}

}  // namespace

void gather_axis_offsets(const void* src_v, void* dst_v, size_t esize,
                         const std::vector<std::vector<int64_t>>& offsets, const void* fill) {
  const uint8_t* src = static_cast<const uint8_t*>(src_v);
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  const size_t rank = offsets.size();
  if (rank == 0) {
    std::memcpy(dst, src, esize);
    return;
  }
  int64_t numel = 1;
  for (const auto& o : offsets) numel *= static_cast<int64_t>(o.size());
  if (numel == 0) return;
  const std::vector<int64_t>& inner = offsets[rank - 1];
  const int64_t n_inner = static_cast<int64_t>(inner.size());
  const int64_t rows = numel / n_inner;
  bool contiguous = true;
  for (int64_t j = 0; j < n_inner && contiguous; ++j)
    contiguous = inner[static_cast<size_t>(j)] != kFillOffset &&
                 inner[static_cast<size_t>(j)] == inner[0] + j;
  const int64_t es = static_cast<int64_t>(esize);
  const int64_t row_bytes = n_inner * es;

#pragma omp parallel for schedule(static) if (numel > 65536)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t base = 0;
    bool filled = false;
    int64_t r = row;
    for (size_t k = rank - 1; k-- > 0;) {
      const int64_t size = static_cast<int64_t>(offsets[k].size());
      const int64_t o = offsets[k][static_cast<size_t>(r % size)];
      r /= size;
      if (o == kFillOffset) filled = true;
      else base += o;
    }
    uint8_t* d = dst + row * row_bytes;
    if (filled) fill_row(d, n_inner, esize, fill);
    else if (contiguous) std::memcpy(d, src + (base + inner[0]) * es, static_cast<size_t>(row_bytes));
    else copy_row_bytes(src, base, inner.data(), n_inner, d, esize, fill);
  }
}

void copy_offset_runs(const void* src_v, void* dst_v, size_t esize,
                      const std::vector<std::vector<int64_t>>& outer, int64_t run) {
  const uint8_t* src = static_cast<const uint8_t*>(src_v);
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  int64_t rows = 1;
  for (const auto& o : outer) rows *= static_cast<int64_t>(o.size());
  const int64_t es = static_cast<int64_t>(esize), run_bytes = run * es;
  if (rows == 0 || run_bytes == 0) return;
  // Pieces of at most 64 KiB, so that one long run (a channel slice of one
  // image) is still shared by the threads; small copies stay serial.
  constexpr int64_t kPiece = 1 << 16;
  const int64_t pieces = (run_bytes + kPiece - 1) / kPiece;
#pragma omp parallel for schedule(static) if (rows * run_bytes > (1 << 17))
  for (int64_t t = 0; t < rows * pieces; ++t) {
    const int64_t row = t / pieces, piece = t % pieces;
    int64_t base = 0;
    for (size_t k = outer.size(), r = static_cast<size_t>(row); k-- > 0;) {
      const size_t size = outer[k].size();
      base += outer[k][r % size];
      r /= size;
    }
    const int64_t from = piece * kPiece, len = std::min(kPiece, run_bytes - from);
    std::memcpy(dst + row * run_bytes + from, src + base * es + from, static_cast<size_t>(len));
  }
}

std::vector<std::vector<int64_t>> permuted_offsets(const Shape& in_shape,
                                                   const std::vector<int64_t>& perm) {
  const auto strides = strides_of(in_shape);
  std::vector<std::vector<int64_t>> off(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    const size_t a = static_cast<size_t>(perm[k]);
    off[k].resize(static_cast<size_t>(in_shape[a]));
    for (int64_t i = 0; i < in_shape[a]; ++i) off[k][static_cast<size_t>(i)] = i * strides[a];
  }
  return off;
}

std::vector<int64_t> optional_ints(const KernelContext& ctx, size_t i) {
  const Tensor* t = ctx.input(i);
  if (!t || !t->defined()) return {};
  TORQ_CHECK(t->rank() <= 1, "expected a 1-D integer input at position " + std::to_string(i));
  TORQ_SUPPORTED(is_integer(t->dtype()), std::string("integer input of dtype ") +
                                             dtype_name(t->dtype()) + " is not supported");
  return t->to_int_vector();
}

}  // namespace torq::engine
