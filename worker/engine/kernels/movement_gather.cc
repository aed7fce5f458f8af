// Index-driven data movement: Gather, GatherElements, Expand and Tile. Data
// elements are moved as raw bytes, so every dtype passes through unchanged.
#include <cstring>

#include "worker/engine/kernels/movement_util.h"

namespace torq::engine {

namespace {

// Reads an indices tensor (int32 / int64) and normalises negative entries
// against `dim`; out-of-range indices are an input error.
std::vector<int64_t> read_indices(const Tensor& t, int64_t dim, const char* op) {
  TORQ_SUPPORTED(t.dtype() == DType::kI64 || t.dtype() == DType::kI32,
                 std::string(op) + ": indices of dtype " + dtype_name(t.dtype()) +
                     " are not supported");
  std::vector<int64_t> idx = t.to_int_vector();
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim)
      throw EngineError(ErrorKind::kInvalidInput, std::string(op) + ": index " +
                                                      std::to_string(i) +
                                                      " out of range for axis of size " +
                                                      std::to_string(dim));
    if (i < 0) i += dim;
  }
  return idx;
}

// ---------------------------------------------------------------- Gather

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const NodeInfo& n) {
    n.expect_attrs({"axis"});
    axis_ = n.attr_int("axis", 0);
  }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const Tensor& ind = ctx.in(1);
    TORQ_CHECK(x.rank() >= 1, "Gather: data must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, x.rank());
    const int64_t dim = x.dim(axis);
    const std::vector<int64_t> idx = read_indices(ind, dim, "Gather");
    Shape out_shape(x.shape().begin(), x.shape().begin() + axis);
    out_shape.insert(out_shape.end(), ind.shape().begin(), ind.shape().end());
    out_shape.insert(out_shape.end(), x.shape().begin() + axis + 1, x.shape().end());
    Tensor out(x.dtype(), out_shape);
    int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(x.dtype()));
    for (int64_t k = 0; k < axis; ++k) outer *= x.dim(k);
    for (int64_t k = axis + 1; k < x.rank(); ++k) inner *= x.dim(k);
    const int64_t n = static_cast<int64_t>(idx.size());
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    uint8_t* dst = static_cast<uint8_t*>(out.raw());
    if (inner > 0 && n > 0) {
#pragma omp parallel for schedule(static) if (outer * n * inner > (1 << 20))
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < n; ++j)
          std::memcpy(dst + (o * n + j) * inner, src + (o * dim + idx[static_cast<size_t>(j)]) * inner,
                      static_cast<size_t>(inner));
    }
    ctx.output(0) = out;
  }

 private:
  int64_t axis_;
};

// ---------------------------------------------------------------- GatherElements

class GatherElementsKernel : public Kernel {
 public:
  explicit GatherElementsKernel(const NodeInfo& n) {
    n.expect_attrs({"axis"});
    axis_ = n.attr_int("axis", 0);
  }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const Tensor& ind = ctx.in(1);
    const int64_t rank = x.rank();
    TORQ_CHECK(rank >= 1 && ind.rank() == rank,
               "GatherElements: data and indices must have the same rank >= 1");
    const int64_t axis = normalize_axis(axis_, rank);
    for (int64_t k = 0; k < rank; ++k)
      TORQ_CHECK(k == axis || ind.dim(k) <= x.dim(k),
                 "GatherElements: indices shape exceeds data shape");
    const std::vector<int64_t> idx = read_indices(ind, x.dim(axis), "GatherElements");
    const auto xs = strides_of(x.shape());
    const auto is = strides_of(ind.shape());
    Tensor out(x.dtype(), ind.shape());
    const int64_t es = static_cast<int64_t>(dtype_size(x.dtype()));
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    uint8_t* dst = static_cast<uint8_t*>(out.raw());
    const int64_t n = out.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0, r = i;
      for (int64_t k = 0; k < rank; ++k) {
        const int64_t c = r / is[static_cast<size_t>(k)];
        r %= is[static_cast<size_t>(k)];
        off += (k == axis ? idx[static_cast<size_t>(i)] : c) * xs[static_cast<size_t>(k)];
      }
      std::memcpy(dst + i * es, src + off * es, static_cast<size_t>(es));
    }
    ctx.output(0) = out;
  }

 private:
  int64_t axis_;
};

// ---------------------------------------------------------------- Expand

// Offsets that broadcast `in_shape` (right-aligned) to `out_shape`.
std::vector<std::vector<int64_t>> broadcast_offsets(const Shape& in_shape, const Shape& out_shape) {
  const auto strides = strides_of(in_shape);
  const size_t lead = out_shape.size() - in_shape.size();
  std::vector<std::vector<int64_t>> off(out_shape.size());
  for (size_t k = 0; k < out_shape.size(); ++k) {
    off[k].assign(static_cast<size_t>(out_shape[k]), 0);
    if (k < lead || in_shape[k - lead] == 1) continue;
    for (int64_t i = 0; i < out_shape[k]; ++i)
      off[k][static_cast<size_t>(i)] = i * strides[k - lead];
  }
  return off;
}

class ExpandKernel : public Kernel {
 public:
  explicit ExpandKernel(const NodeInfo& n) { n.expect_attrs({}); }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const Tensor& s = ctx.in(1);
    TORQ_CHECK(s.rank() == 1, "Expand: shape must be 1-D");
    const Shape target = s.to_int_vector();
    for (int64_t d : target) TORQ_CHECK(d >= 0, "Expand: negative dimension in shape");
    const Shape out_shape = broadcast_shapes(x.shape(), target);
    Tensor out(x.dtype(), out_shape);
    if (out.numel() > 0)
      gather_axis_offsets(x.raw(), out.raw(), dtype_size(x.dtype()),
                          broadcast_offsets(x.shape(), out_shape));
    ctx.output(0) = out;
  }
};

// ---------------------------------------------------------------- Tile

class TileKernel : public Kernel {
 public:
  explicit TileKernel(const NodeInfo& n) { n.expect_attrs({}); }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const std::vector<int64_t> reps = ctx.in(1).to_int_vector();
    TORQ_CHECK(static_cast<int64_t>(reps.size()) == x.rank(),
               "Tile: repeats must have one entry per input dimension");
    const auto strides = strides_of(x.shape());
    Shape out_shape(reps.size());
    std::vector<std::vector<int64_t>> off(reps.size());
    for (size_t k = 0; k < reps.size(); ++k) {
      TORQ_CHECK(reps[k] >= 0, "Tile: negative repeat");
      const int64_t dim = x.shape()[k];
      out_shape[k] = dim * reps[k];
      off[k].resize(static_cast<size_t>(out_shape[k]));
      for (int64_t i = 0; i < out_shape[k]; ++i)
        off[k][static_cast<size_t>(i)] = (i % dim) * strides[k];
    }
    Tensor out(x.dtype(), out_shape);
    gather_axis_offsets(x.raw(), out.raw(), dtype_size(x.dtype()), off);
    ctx.output(0) = out;
  }
};

}  // namespace

void register_movement_gather_kernels(KernelRegistry& r) {
  r.add("Gather", 1, 17, make_kernel<GatherKernel>());
  r.add("GatherElements", 11, 17, make_kernel<GatherElementsKernel>());
  r.add("Expand", 8, 17, make_kernel<ExpandKernel>());
  r.add("Tile", 6, 17, make_kernel<TileKernel>());
}

}  // namespace torq::engine
