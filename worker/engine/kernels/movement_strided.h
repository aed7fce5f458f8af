// Reshape, Transpose and Slice of tensors in a strided oneDNN layout (the
// axes in some order, without inner blocks or padding: nhwc, the layout
// oneDNN's 1x1 convolutions pick on AVX-512): a view of the same bytes, or
// one oneDNN reorder, instead of a reorder to plain followed by a copy. This
// keeps shufflenet's channel shuffle (Reshape-Transpose-Reshape) and channel
// split (Slice) in the convolutions' nhwc. Each returns nullopt when the
// input is not in such a layout or the case is not covered; the kernel then
// takes its plain path. Only bytes move, so the values are those of the
// plain path.
#pragma once

#include <optional>
#include <vector>

#include "worker/engine/dnnl_util.h"

namespace torq::engine {

// x reshaped to `shape`: a view when the layout allows one (split axes, or
// merged axes that are dense in order), else, when every output axis merges
// whole input axes, one reorder into the dense layout that orders the output
// axes as the input's strides order them (the channel shuffle's second
// Reshape lands in nhwc).
std::optional<Tensor> strided_reshape(const Tensor& x, const Shape& shape, DnnlEnv& env);

// x transposed by `perm` (output axis k is input axis perm[k]): a view.
std::optional<Tensor> strided_transpose(const Tensor& x, const std::vector<int64_t>& perm);

// The step-1 slice of x starting at `first` with `out_shape`, copied into a
// dense tensor whose axes keep the input's order (an nhwc channel slice
// stays nhwc).
std::optional<Tensor> strided_slice(const Tensor& x, const std::vector<int64_t>& first,
                                    const std::vector<int64_t>& step, const Shape& out_shape,
                                    DnnlEnv& env);

}  // namespace torq::engine
