// Byte-level copy helpers shared by the data-movement kernels (movement*.cc,
// resize.cc). Every output element of these ops is a copy of one source
// element (or a fill value), so one routine serves every dtype: elements are
// moved as opaque `esize`-byte values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "worker/engine/kernel.h"

namespace torq::engine {

// Marks an output position that takes the fill value instead of a source element.
inline constexpr int64_t kFillOffset = std::numeric_limits<int64_t>::min();

// Writes a row-major output whose axis k has offsets[k].size() positions:
// element (i0, ..., i_{n-1}) = src[sum_k offsets[k][i_k]] (offsets counted in
// elements, any sign), or the `esize` bytes at `fill` when some
// offsets[k][i_k] == kFillOffset (`fill` may be null when no offset is
// kFillOffset). With no axes (rank 0) one element is copied. The caller
// guarantees every offset sum lies inside `src`. OpenMP-parallel over rows.
void gather_axis_offsets(const void* src, void* dst, size_t esize,
                         const std::vector<std::vector<int64_t>>& offsets,
                         const void* fill = nullptr);

// Copies rows of `run` contiguous elements: output row r (row-major over
// the index space of `outer`, whose axis k has outer[k].size() positions)
// is the run starting at src + sum_k outer[k][i_k] (offsets in elements).
// No per-element table: the data-movement kernels use it when the trailing
// axes are copied whole (Slice of leading axes, Transpose of leading axes).
// OpenMP-parallel over rows, and over chunks of a run when rows are few.
void copy_offset_runs(const void* src, void* dst, size_t esize,
                      const std::vector<std::vector<int64_t>>& outer, int64_t run);

// Offsets of a permuted view: output axis k walks input axis perm[k] of a
// row-major tensor of `in_shape`. Used by Transpose and DepthToSpace.
std::vector<std::vector<int64_t>> permuted_offsets(const Shape& in_shape,
                                                   const std::vector<int64_t>& perm);

// Reads an optional 1-D integer input (axes, pads, ...) as int64; empty when absent.
std::vector<int64_t> optional_ints(const KernelContext& ctx, size_t i);

// Registration of the kernels that live in movement_*.cc; called by
// register_movement_kernels().
void register_movement_gather_kernels(KernelRegistry& r);
void register_movement_pad_kernels(KernelRegistry& r);
void register_movement_transpose_kernels(KernelRegistry& r);

}  // namespace torq::engine
