// Internal helpers of the element-wise kernels (binary*.cc, unary*.cc):
// numpy broadcasting as a plan of contiguous runs, a parallel run loop, dtype
// dispatch and the ONNX legacy (opset < 7) broadcast attribute. Not part of
// the engine's API.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernel.h"

namespace torq::engine::elt {

// Multidirectional (numpy) broadcast of K input shapes. Dimensions are
// collapsed so the last one is the longest run where every input is either
// contiguous (inner stride 1) or constant (inner stride 0).
struct BcastPlan {
  Shape out;                                  // result shape (uncollapsed)
  std::vector<int64_t> dims;                  // collapsed dims, at least one
  std::vector<std::vector<int64_t>> strides;  // per input, per collapsed dim
  int64_t total = 0;                          // elements of the result
  int64_t inner() const { return dims.back(); }
};

// Builds the plan; throws InvalidModel when the shapes do not broadcast.
BcastPlan make_bcast_plan(const std::vector<Shape>& shapes);

// Calls f(out_offset, in_offsets, n) for every run of n consecutive output
// elements; input k's elements are in_offsets[k] + i * inner_stride(k) with
// inner_stride(k) = plan.strides[k].back() (0 or 1). Runs are processed in
// parallel (OpenMP) when the result is large; f must be thread-safe.
template <size_t K, class F>
void for_each_run(const BcastPlan& p, F&& f) {
  if (p.total == 0) return;
  constexpr int64_t kGrain = 16384;
  const int64_t inner = p.inner();
  const int64_t nd = static_cast<int64_t>(p.dims.size());
  const int64_t chunks = std::min<int64_t>((p.total + kGrain - 1) / kGrain, 1024);
#pragma omp parallel for if (chunks > 1) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t pos = p.total / chunks * c + std::min(c, p.total % chunks);
    const int64_t end = pos + p.total / chunks + (c < p.total % chunks ? 1 : 0);
    while (pos < end) {
      int64_t row = pos / inner;
      const int64_t i0 = pos % inner;
      std::array<int64_t, K> off{};
      for (int64_t d = nd - 2; d >= 0; --d) {
        const int64_t idx = row % p.dims[static_cast<size_t>(d)];
        row /= p.dims[static_cast<size_t>(d)];
        for (size_t k = 0; k < K; ++k) off[k] += idx * p.strides[k][static_cast<size_t>(d)];
      }
      for (size_t k = 0; k < K; ++k) off[k] += i0 * p.strides[k].back();
      const int64_t n = std::min(inner - i0, end - pos);
      f(pos, off, n);
      pos += n;
    }
  }
}

// out[i] = op(a[i], b[i]) under broadcasting.
template <class TA, class TB, class TO, class Op>
void bcast_binary(const TA* a, const TB* b, TO* out, const BcastPlan& p, Op op) {
  const bool sa = p.strides[0].back() != 0, sb = p.strides[1].back() != 0;
  for_each_run<2>(p, [&](int64_t o, const std::array<int64_t, 2>& off, int64_t n) {
    const TA* pa = a + off[0];
    const TB* pb = b + off[1];
    TO* po = out + o;
    if (sa && sb) {
      for (int64_t i = 0; i < n; ++i) po[i] = op(pa[i], pb[i]);
    } else if (sa) {
      const TB vb = *pb;
      for (int64_t i = 0; i < n; ++i) po[i] = op(pa[i], vb);
    } else if (sb) {
      const TA va = *pa;
      for (int64_t i = 0; i < n; ++i) po[i] = op(va, pb[i]);
    } else {
      const TO v = op(*pa, *pb);
      for (int64_t i = 0; i < n; ++i) po[i] = v;
    }
  });
}

// Element-wise map over n elements (parallel when large).
template <class TI, class TO, class Op>
void map_elements(const TI* in, TO* out, int64_t n, Op op) {
#pragma omp parallel for if (n > 32768) schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = op(in[i]);
}

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with the C++ type of a numeric dtype among f32, f64 and
// the signed and unsigned integers; throws Unsupported for anything else
// (bf16 and f16 are computed in f32 by the callers).
template <class F>
decltype(auto) visit_numeric(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::kF32: return f(Tag<float>{});
    case DType::kF64: return f(Tag<double>{});
    case DType::kI8: return f(Tag<int8_t>{});
    case DType::kI16: return f(Tag<int16_t>{});
    case DType::kI32: return f(Tag<int32_t>{});
    case DType::kI64: return f(Tag<int64_t>{});
    case DType::kU8: return f(Tag<uint8_t>{});
    case DType::kU16: return f(Tag<uint16_t>{});
    case DType::kU32: return f(Tag<uint32_t>{});
    case DType::kU64: return f(Tag<uint64_t>{});
    default:
      throw_unsupported(std::string(what) + " does not support dtype " + dtype_name(t));
  }
}

// True for f16/bf16: element types this code computes in f32.
inline bool is_half(DType t) { return t == DType::kF16 || t == DType::kBF16; }

// A plain tensor computable by visit_numeric: to plain (when blocked), and
// half types to f32.
Tensor plain_compute_input(const Tensor& t, DnnlEnv& env);

// Converts an f32 result back to `want` when the op's inputs were f16 (the
// session rounds f32 results for bf16 itself); returns `t` otherwise.
Tensor finish_half(const Tensor& t, DType want, Rounding r);

// Legacy broadcasting of opset < 7 arithmetic/logic ops (attributes
// `broadcast` and `axis`): B is unidirectionally broadcast to A's shape.
struct LegacyBroadcast {
  bool legacy = false;     // opset < 7
  bool broadcast = false;  // attribute broadcast=1
  bool has_axis = false;
  int64_t axis = 0;
  // Parses the attributes of `n` (call only when n.opset() < 7).
  static LegacyBroadcast parse(const NodeInfo& n);
  // The shape B is read with (rank of A, B's dims aligned at `axis` or at
  // the end); throws InvalidModel when B does not fit A.
  Shape b_shape(const Shape& a, const Shape& b) const;
};

// Attribute names the legacy broadcast uses (for expect_attrs lists).
inline constexpr const char* kLegacyBroadcastAttr = "broadcast";
inline constexpr const char* kLegacyAxisAttr = "axis";

// A factory for kernel K constructed as K(node, op), op naming the variant
// (an enum) the kernel class computes.
template <class K, class Op>
KernelFactory kernel_factory(Op op) {
  return [op](const NodeInfo& n) -> std::unique_ptr<Kernel> { return std::make_unique<K>(n, op); };
}

// Registration helpers of the split binary family (binary_logic.cc,
// binary_misc.cc), called by register_binary_kernels.
void register_binary_logic_kernels(KernelRegistry& r);
void register_binary_misc_kernels(KernelRegistry& r);
// Registration helper of the split unary family (unary_misc.cc), called by
// register_unary_kernels.
void register_unary_misc_kernels(KernelRegistry& r);

}  // namespace torq::engine::elt
