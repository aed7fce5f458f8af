// Internal: the oneDNN fast path of the float arithmetic kernels (Add, Sub,
// Mul, Div, and two-input Sum) for inputs in oneDNN-blocked layouts. Not part
// of the engine's API.
#pragma once

#include <optional>

#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernel.h"

namespace torq::engine::elt {

// `md` with the same dims and memory layout but data type `dt`.
dnnl::memory::desc md_as(const dnnl::memory::desc& md, dnnl::memory::data_type dt);

// The dtype a oneDNN element-wise primitive computes in for float inputs of
// dtype `t`: bf16 (fp32 inside, rounded to nearest even on the way out) when
// the session rounds to nearest even, otherwise f32 (the session then
// truncates the f32 result to bf16 itself).
DType dnnl_compute_dtype(DType t, Rounding r);

// A float tensor in dtype `dt` (f32/bf16) keeping its memory layout.
Tensor convert_keep_layout(const Tensor& t, DType dt, DnnlEnv& env);

// Runs out = a (op) b on a oneDNN binary primitive when that is exact and
// fast: both inputs f32/bf16, the full-shape operand (src0) in a blocked
// layout, the other of the same shape or broadcast (e.g. [N,C,1,1]), and
// oneDNN has a jit kernel for it. The result keeps src0's layout. Caches the
// primitive keyed on the descriptors.
class DnnlBinary {
 public:
  // Returns false without touching `out` when the case is not handled;
  // `commutative` allows swapping the operands so the blocked one is src0.
  bool run(dnnl::algorithm alg, bool commutative, const Tensor& a, const Tensor& b,
           KernelContext& ctx, Tensor& out);

 private:
  dnnl::algorithm alg_ = dnnl::algorithm::undef;
  dnnl::memory::desc md0_, md1_;
  bool jit_ = false;
  std::optional<dnnl::binary> prim_;
};

}  // namespace torq::engine::elt
