// Internal: the per-channel broadcast of the float arithmetic kernels on a
// channels-last operand (a squeeze-excite block's x * scale[C]): a plain
// loop, ~2.5x faster than oneDNN 2.6's binary primitive on that broadcast
// (jit:uni, nhwc with a [1,C,1,1] operand). Not part of the engine's API.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "worker/engine/tensor.h"

namespace torq::engine::elt {

// Computes out = x (alg) c[channel] when: alg is binary add, sub, mul or
// div; x is f32 in a channels-last layout (nwc, nhwc, ndhwc; `x_md` is its
// descriptor); c is a plain f32 tensor of C = x.dim(1) elements whose shape
// broadcasts along the channel axis only ([C], [1,C,1,1], ...). Each element
// is one IEEE operation, as in the oneDNN primitive, so the result is the
// same bit for bit. `out` gets x's layout. Returns false without touching
// `out` when the case is not one of these.
bool channel_broadcast(dnnl::algorithm alg, const Tensor& x, const dnnl::memory::desc& x_md, const Tensor& c,
                       Tensor& out);

}  // namespace torq::engine::elt
