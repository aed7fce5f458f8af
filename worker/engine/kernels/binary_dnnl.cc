// oneDNN binary fast path for blocked float operands (see binary_dnnl.h).
#include "worker/engine/kernels/binary_dnnl.h"

#include "worker/engine/kernels/binary_chan.h"

#include <cstring>
#include <string>

namespace torq::engine::elt {

using dnnl::memory;

memory::desc md_as(const memory::desc& md, memory::data_type dt) {
  memory::desc out = md;
  out.data.data_type = static_cast<dnnl_data_type_t>(dt);
  return out;
}

DType dnnl_compute_dtype(DType t, Rounding r) {
  if (t == DType::kF32) return DType::kF32;
  if (t == DType::kBF16) return r == Rounding::kNearestEven ? DType::kBF16 : DType::kF32;
  throw_unsupported(std::string("dtype ") + dtype_name(t) + " is not supported by oneDNN here");
}

Tensor convert_keep_layout(const Tensor& t, DType dt, DnnlEnv& env) {
  if (t.dtype() == dt) return t;
  if (t.is_plain()) return cast_tensor(t, dt, Rounding::kNearestEven);
  return reorder_to(t, md_as(md_of(t), dnnl_dtype(dt)), dt, env);
}

namespace {

// The format tag `md` is in, among the activation layouts oneDNN produces;
// undef when none matches.
memory::format_tag tag_of(const memory::desc& md) {
  using ft = memory::format_tag;
  static const ft k3[] = {ft::nCw16c, ft::nCw8c, ft::nCw4c, ft::nwc, ft::ncw};
  static const ft k4[] = {ft::nChw16c, ft::nChw8c, ft::nChw4c, ft::nhwc, ft::nchw};
  static const ft k5[] = {ft::nCdhw16c, ft::nCdhw8c, ft::nCdhw4c, ft::ndhwc, ft::ncdhw};
  const auto dims = md.dims();
  const ft* cands = nullptr;
  if (dims.size() == 3) cands = k3;
  if (dims.size() == 4) cands = k4;
  if (dims.size() == 5) cands = k5;
  if (!cands) return ft::undef;
  for (int i = 0; i < 5; ++i)
    if (memory::desc(dims, md.data_type(), cands[i]) == md) return cands[i];
  return ft::undef;
}

}  // namespace

bool DnnlBinary::run(dnnl::algorithm alg, bool commutative, const Tensor& a, const Tensor& b,
                     KernelContext& ctx, Tensor& out) {
  auto float_ok = [](DType t) { return t == DType::kF32 || t == DType::kBF16; };
  if (!float_ok(a.dtype()) || !float_ok(b.dtype())) return false;
  if (a.is_plain() && b.is_plain()) return false;
  Shape out_shape = broadcast_shapes(a.shape(), b.shape());
  if (shape_numel(out_shape) == 0) return false;
  const Tensor* s0 = nullptr;
  const Tensor* s1 = nullptr;
  if (a.shape() == out_shape && !a.is_plain()) {
    s0 = &a;
    s1 = &b;
  } else if (commutative && b.shape() == out_shape && !b.is_plain()) {
    s0 = &b;
    s1 = &a;
  } else {
    return false;
  }
  if (s1->rank() > s0->rank()) return false;

  DnnlEnv& env = ctx.dnnl();
  // x * scale[C] on channels-last f32 (squeeze-excite): a plain loop beats
  // the primitive (binary_chan.h).
  if (s0->rank() >= 3 && s1->shape() != s0->shape() && s1->numel() == s0->dim(1) &&
      channel_broadcast(alg, *s0, md_of(*s0), s1->is_plain() ? *s1 : to_plain(*s1, env), out))
    return true;
  const bool both_bf16 = a.dtype() == DType::kBF16 && b.dtype() == DType::kBF16;
  const DType cdt = both_bf16 ? dnnl_compute_dtype(DType::kBF16, ctx.rounding()) : DType::kF32;
  const auto ddt = dnnl_dtype(cdt);
  const memory::desc md0 = md_as(md_of(*s0), ddt);

  memory::desc md1;
  Tensor src1 = *s1;
  if (s1->shape() == s0->shape()) {
    md1 = md0;
  } else {
    const memory::format_tag tag = tag_of(md0);
    if (tag == memory::format_tag::undef) return false;
    Shape padded(static_cast<size_t>(s0->rank() - s1->rank()), 1);
    padded.insert(padded.end(), s1->shape().begin(), s1->shape().end());
    if (!src1.is_plain()) src1 = to_plain(src1, env);
    src1 = src1.reshaped(padded);
    md1 = memory::desc(to_dims(padded), ddt, tag);
  }

  if (!prim_ || alg_ != alg || !(md0_ == md0) || !(md1_ == md1)) {
    const auto pd = one_at_a_time([&] {
      return dnnl::binary::primitive_desc(dnnl::binary::desc(alg, md0, md1, md0), user_scratchpad(), env.engine);
    });
    alg_ = alg;
    md0_ = md0;
    md1_ = md1;
    jit_ = std::strncmp(pd.impl_info_str(), "jit", 3) == 0;
    prim_.emplace(pd);
  }
  if (!jit_) return false;

  const Tensor src0 = convert_keep_layout(*s0, cdt, env);
  src1 = reorder_to(src1, md1, cdt, env);
  out = alloc_for_md(md0, cdt, out_shape);
  execute(env, *prim_, {{DNNL_ARG_SRC_0, as_memory(src0, md0, env)},
                        {DNNL_ARG_SRC_1, as_memory(src1, md1, env)},
                        {DNNL_ARG_DST, as_memory(out, md0, env)}});
  return true;
}

}  // namespace torq::engine::elt
