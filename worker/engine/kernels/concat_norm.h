// Concat (axis 1) -> BatchNormalization -> Relu in one pass (the chain
// act_fusion.h plans; DenseNet's layer inputs): each input is read once and
// written normalised and rectified into its channels of the output, instead
// of a concat copy, a normalisation pass and a Relu pass over the result.
//
// fp32 only. When some input is in nhwc (oneDNN's acdb, what oneDNN
// convolutions write on AVX-512) the output is nhwc, and inputs in other
// layouts (the pooling before a dense block) are reordered to nhwc first;
// otherwise the inputs are made plain and the output is plain. Per channel c the numbers are those of the oneDNN
// BatchNormalization the unfused node runs: m = scale / sqrt(var + eps)
// in fp32, y = (x - mean) * m + shift with one rounding (fused
// multiply-add), then Relu (x < 0 ? 0 : x, NaN stays NaN).
#pragma once

#include <vector>

#include "worker/engine/kernel.h"

namespace torq::engine {

class ConcatNormRelu {
 public:
  // relu(BN(concat of `ins` on axis 1)) of shape `out_shape`.
  Tensor run(const std::vector<const Tensor*>& ins, const Shape& out_shape, const FusedNorm& norm, DnnlEnv& env);

 private:
  void load(const FusedNorm& norm, int64_t c, DnnlEnv& env);

  std::vector<const void*> key_;  // the parameter buffers the cache holds
  std::vector<float> mean_, mul_, shift_;
};

}  // namespace torq::engine
