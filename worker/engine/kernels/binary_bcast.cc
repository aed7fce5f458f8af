// Broadcast plans, half-precision helpers and legacy (opset < 7) broadcast
// attributes shared by the element-wise kernels (see binary_bcast.h).
#include "worker/engine/kernels/binary_bcast.h"

namespace torq::engine::elt {

BcastPlan make_bcast_plan(const std::vector<Shape>& shapes) {
  BcastPlan p;
  p.out = shapes.empty() ? Shape{} : shapes[0];
  for (size_t k = 1; k < shapes.size(); ++k) p.out = broadcast_shapes(p.out, shapes[k]);
  p.total = shape_numel(p.out);
  const size_t rank = p.out.size();
  const size_t nin = shapes.size();

  // Per input strides over the output dims (0 where broadcast).
  std::vector<std::vector<int64_t>> full(nin, std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < nin; ++k) {
    const Shape& s = shapes[k];
    int64_t acc = 1;
    for (size_t i = s.size(); i-- > 0;) {
      const size_t o = i + (rank - s.size());
      full[k][o] = s[i] == 1 ? 0 : acc;
      acc *= s[i];
    }
  }

  p.strides.assign(nin, {});
  for (size_t d = 0; d < rank; ++d) {
    const int64_t dim = p.out[d];
    if (dim == 1) continue;
    bool merge = !p.dims.empty();
    for (size_t k = 0; k < nin && merge; ++k)
      merge = p.strides[k].back() == full[k][d] * dim;
    if (merge) {
      p.dims.back() *= dim;
      for (size_t k = 0; k < nin; ++k) p.strides[k].back() = full[k][d];
    } else {
      p.dims.push_back(dim);
      for (size_t k = 0; k < nin; ++k) p.strides[k].push_back(full[k][d]);
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    for (size_t k = 0; k < nin; ++k) p.strides[k].push_back(0);
  }
  return p;
}

Tensor plain_compute_input(const Tensor& t, DnnlEnv& env) {
  Tensor plain = t.is_plain() ? t : to_plain(t, env);
  if (is_half(plain.dtype())) return to_f32(plain);
  return plain;
}

Tensor finish_half(const Tensor& t, DType want, Rounding r) {
  if (want == DType::kF16 && t.dtype() == DType::kF32) return cast_tensor(t, DType::kF16, r);
  return t;
}

LegacyBroadcast LegacyBroadcast::parse(const NodeInfo& n) {
  LegacyBroadcast lb;
  lb.legacy = true;
  lb.broadcast = n.attr_int(kLegacyBroadcastAttr, 0) != 0;
  lb.has_axis = n.has_attr(kLegacyAxisAttr);
  lb.axis = n.attr_int(kLegacyAxisAttr, 0);
  return lb;
}

Shape LegacyBroadcast::b_shape(const Shape& a, const Shape& b) const {
  if (!broadcast) {
    TORQ_CHECK(a == b, "shapes " + shape_str(a) + " and " + shape_str(b) +
                           " differ and the node does not set broadcast=1");
    return b;
  }
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  TORQ_CHECK(rb <= ra, "legacy broadcast: B " + shape_str(b) + " has a higher rank than A " +
                           shape_str(a));
  int64_t start = ra - rb;
  if (has_axis) {
    start = axis < 0 ? axis + ra : axis;
    TORQ_CHECK(start >= 0 && start + rb <= ra,
               "legacy broadcast: axis " + std::to_string(axis) + " does not fit B " +
                   shape_str(b) + " into A " + shape_str(a));
  }
  Shape out(static_cast<size_t>(ra), 1);
  for (int64_t i = 0; i < rb; ++i) {
    const int64_t d = b[static_cast<size_t>(i)];
    const int64_t ad = a[static_cast<size_t>(start + i)];
    TORQ_CHECK(d == ad || d == 1, "legacy broadcast: B " + shape_str(b) +
                                      " does not match A " + shape_str(a));
    out[static_cast<size_t>(start + i)] = d;
  }
  return out;
}

}  // namespace torq::engine::elt
