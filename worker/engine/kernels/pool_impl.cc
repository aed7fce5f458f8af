// Pooling geometry (ONNX output sizes, auto_pad, ceil_mode) and the plain
// C++ reference pooling used where oneDNN cannot reproduce ONNX exactly
// (MaxPool Indices, int8/uint8 and f64 data, include-padding averages whose
// last window runs past the end padding, more than 3 spatial dims).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "worker/engine/kernels/nn_impl.h"

namespace torq::engine::nn {

namespace {

std::vector<int64_t> or_fill(const std::vector<int64_t>& v, size_t n, int64_t fill,
                             const char* what) {
  if (v.empty()) return std::vector<int64_t>(n, fill);
  TORQ_CHECK(v.size() == n, std::string(what) + " has " + std::to_string(v.size()) +
                                " values, expected " + std::to_string(n));
  return v;
}

int64_t prod(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

}  // namespace

PoolGeom pool_geometry(const PoolSpec& spec, const Shape& x) {
  TORQ_CHECK(x.size() >= 2, "pooling input must have rank >= 2 (N, C, spatial...), got " +
                                shape_str(x));
  const size_t n = x.size() - 2;
  PoolGeom g;
  g.in.assign(x.begin() + 2, x.end());
  if (spec.global) {
    g.k = g.in;
    g.s.assign(n, 1);
    g.d.assign(n, 1);
    g.pb.assign(n, 0);
    g.pe.assign(n, 0);
  } else {
    TORQ_CHECK(spec.kernel.size() == n,
               "kernel_shape has " + std::to_string(spec.kernel.size()) +
                   " values but the input " + shape_str(x) + " has " + std::to_string(n) +
                   " spatial dims");
    g.k = spec.kernel;
    g.s = or_fill(spec.strides, n, 1, "strides");
    g.d = or_fill(spec.dilations, n, 1, "dilations");
    const auto pads = or_fill(spec.pads, 2 * n, 0, "pads");
    g.pb.assign(pads.begin(), pads.begin() + static_cast<long>(n));
    g.pe.assign(pads.begin() + static_cast<long>(n), pads.end());
  }
  g.out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TORQ_CHECK(g.k[i] >= 1 && g.s[i] >= 1 && g.d[i] >= 1,
               "kernel_shape, strides and dilations must be positive");
    TORQ_CHECK(g.pb[i] >= 0 && g.pe[i] >= 0, "pads must be non-negative");
    const int64_t eff = (g.k[i] - 1) * g.d[i] + 1;
    switch (spec.auto_pad) {
      case AutoPad::kNotSet: {
        const int64_t num = g.in[i] + g.pb[i] + g.pe[i] - eff;
        TORQ_CHECK(num >= 0, "pooling window is larger than the padded input " + shape_str(x));
        g.out[i] = (spec.ceil_mode ? (num + g.s[i] - 1) / g.s[i] : num / g.s[i]) + 1;
        break;
      }
      case AutoPad::kValid: {
        g.pb[i] = g.pe[i] = 0;
        const int64_t num = g.in[i] - eff;
        TORQ_CHECK(num >= 0, "pooling window is larger than the input " + shape_str(x));
        // ONNX's VALID formula floors; onnxruntime applies ceil_mode here.
        TORQ_SUPPORTED(!spec.ceil_mode || num % g.s[i] == 0,
                       "auto_pad VALID with ceil_mode=1 and a partial last window is not "
                       "supported");
        g.out[i] = num / g.s[i] + 1;
        break;
      }
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        // ONNX and onnxruntime disagree on SAME padding with dilations.
        TORQ_SUPPORTED(g.d[i] == 1, "auto_pad SAME_* with dilations > 1 is not supported");
        g.out[i] = (g.in[i] + g.s[i] - 1) / g.s[i];
        const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.s[i] + eff - g.in[i]);
        const int64_t small = total / 2, big = total - small;
        g.pb[i] = spec.auto_pad == AutoPad::kSameUpper ? small : big;
        g.pe[i] = total - g.pb[i];
        break;
      }
    }
    // Every window must hold at least one input element: implementations
    // disagree on the value of an all-padding window.
    for (int64_t o = 0; o < g.out[i]; ++o) {
      const int64_t start = o * g.s[i] - g.pb[i];
      const int64_t j0 = start >= 0 ? 0 : (-start + g.d[i] - 1) / g.d[i];
      TORQ_SUPPORTED(j0 < g.k[i] && start + j0 * g.d[i] < g.in[i],
                     "a pooling window lies entirely in the padding (input " + shape_str(x) +
                         ")");
    }
    if ((g.out[i] - 1) * g.s[i] + eff > g.in[i] + g.pb[i] + g.pe[i]) g.window_past_pads = true;
  }
  g.out_shape = {x[0], x[1]};
  g.out_shape.insert(g.out_shape.end(), g.out.begin(), g.out.end());
  return g;
}

namespace {

// Valid input coordinates of window `o` along one dim.
std::vector<int64_t> window_taps(const PoolGeom& g, size_t i, int64_t o) {
  std::vector<int64_t> taps;
  const int64_t start = o * g.s[i] - g.pb[i];
  for (int64_t j = 0; j < g.k[i]; ++j) {
    const int64_t c = start + j * g.d[i];
    if (c >= 0 && c < g.in[i]) taps.push_back(c);
  }
  return taps;
}

template <class T>
void pool_typed(const PoolSpec& spec, const PoolGeom& g, const T* x, T* y, int64_t* idx,
                int64_t nc) {
  const size_t n = g.in.size();
  const int64_t in_sz = prod(g.in), out_sz = prod(g.out);
  // Per dim: tap offsets (row-major element offsets), tap coordinates
  // (for Indices) and the include-padding extent of every window.
  std::vector<std::vector<std::vector<int64_t>>> taps(n);
  std::vector<std::vector<int64_t>> incl(n);
  std::vector<int64_t> row_stride(n), col_stride(n);
  {
    int64_t acc = 1;
    for (size_t i = n; i-- > 0;) {
      row_stride[i] = acc;
      acc *= g.in[i];
    }
    acc = 1;
    for (size_t i = 0; i < n; ++i) {
      col_stride[i] = acc;
      acc *= g.in[i];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    taps[i].resize(static_cast<size_t>(g.out[i]));
    incl[i].resize(static_cast<size_t>(g.out[i]));
    for (int64_t o = 0; o < g.out[i]; ++o) {
      taps[i][static_cast<size_t>(o)] = window_taps(g, i, o);
      const int64_t start = o * g.s[i] - g.pb[i];
      incl[i][static_cast<size_t>(o)] =
          std::min(start + g.k[i] * g.d[i], g.in[i] + g.pe[i]) - start;
    }
  }
  const bool is_max = spec.kind == PoolKind::kMax;
  const int64_t total = nc * out_sz;
#pragma omp parallel for schedule(static) if (total > 4096)
  for (int64_t t = 0; t < total; ++t) {
    const int64_t plane = t / out_sz;
    int64_t rem = t % out_sz;
    std::vector<int64_t> o(n), pos(n, 0);
    for (size_t i = n; i-- > 0;) {
      o[i] = rem % g.out[i];
      rem /= g.out[i];
    }
    std::vector<const std::vector<int64_t>*> tl(n);
    int64_t count = 1, include = 1;
    for (size_t i = 0; i < n; ++i) {
      tl[i] = &taps[i][static_cast<size_t>(o[i])];
      count *= static_cast<int64_t>(tl[i]->size());
      include *= incl[i][static_cast<size_t>(o[i])];
    }
    const T* xp = x + plane * in_sz;
    T best{};
    int64_t best_off = -1;
    std::vector<int64_t> best_coord(n);
    double sum = 0;
    for (int64_t c = 0; c < count; ++c) {
      int64_t off = 0;
      for (size_t i = 0; i < n; ++i) off += (*tl[i])[static_cast<size_t>(pos[i])] * row_stride[i];
      const T v = xp[off];
      if (is_max) {
        if (best_off < 0 || v > best) {
          best = v;
          best_off = off;
          for (size_t i = 0; i < n; ++i) best_coord[i] = (*tl[i])[static_cast<size_t>(pos[i])];
        }
      } else {
        sum += static_cast<double>(v);
      }
      for (size_t i = n; i-- > 0;) {  // odometer over the window
        if (++pos[i] < static_cast<int64_t>(tl[i]->size())) break;
        pos[i] = 0;
      }
    }
    if (is_max) {
      y[t] = best;
      if (idx) {
        int64_t flat = 0;
        for (size_t i = 0; i < n; ++i)
          flat += best_coord[i] * (spec.storage_order == 0 ? row_stride[i] : col_stride[i]);
        idx[t] = plane * in_sz + flat;
      }
    } else {
      const int64_t div = spec.count_include_pad ? include : count;
      y[t] = static_cast<T>(sum / static_cast<double>(div));
    }
  }
}

}  // namespace

void pool_reference(const PoolSpec& spec, const PoolGeom& g, const Tensor& x, Tensor& y,
                    Tensor* indices) {
  const int64_t nc = x.dim(0) * x.dim(1);
  y = Tensor(x.dtype(), g.out_shape);
  int64_t* idx = nullptr;
  if (indices) {
    *indices = Tensor(DType::kI64, g.out_shape);
    idx = indices->data<int64_t>();
  }
  const bool is_avg = spec.kind == PoolKind::kAvg;
  switch (x.dtype()) {
    case DType::kF32: pool_typed(spec, g, x.data<float>(), y.data<float>(), idx, nc); break;
    case DType::kF64: pool_typed(spec, g, x.data<double>(), y.data<double>(), idx, nc); break;
    case DType::kI8:
      TORQ_SUPPORTED(!is_avg, "AveragePool of int8 is not supported");
      pool_typed(spec, g, x.data<int8_t>(), y.data<int8_t>(), idx, nc);
      break;
    case DType::kU8:
      TORQ_SUPPORTED(!is_avg, "AveragePool of uint8 is not supported");
      pool_typed(spec, g, x.data<uint8_t>(), y.data<uint8_t>(), idx, nc);
      break;
    default:
      throw_unsupported(std::string("pooling of ") + dtype_name(x.dtype()) + " is not supported");
  }
}

}  // namespace torq::engine::nn
