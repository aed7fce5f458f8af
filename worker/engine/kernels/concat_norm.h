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
//
// bf16 (run_bf16, concat_norm_bf16.cc): where the unfused nodes would run
// oneDNN's ncsp BatchNormalization on the plain bf16 concat (the caller
// says whether its Concat would write it plain), with round-to-nearest-even
// on a CPU with AVX512_BF16, their numbers exactly: per channel m = scale /
// sqrt(var + eps) in fp32, y = m * (x - mean) rounded, + shift rounded,
// converted by VCVTNEPS2BF16 (as oneDNN converts there), then Relu. The
// output is plain, as the unfused Relu's, or nhwc when only Convs read it
// (FusedNorm::any_layout). Elsewhere (and on an empty tensor) it declines
// and the nodes run one by one.
#pragma once

#include <vector>

#include "worker/engine/kernel.h"

namespace torq::engine {

class ConcatNormRelu {
 public:
  // relu(BN(concat of `ins` on axis 1)) of shape `out_shape`.
  Tensor run(const std::vector<const Tensor*>& ins, const Shape& out_shape, const FusedNorm& norm, DnnlEnv& env);
  // The same of bf16 inputs into *out, when it can match the unfused nodes
  // (see above; the caller has checked its Concat would write plain);
  // false, *out untouched, when not.
  bool run_bf16(const std::vector<const Tensor*>& ins, const Shape& out_shape, const FusedNorm& norm,
                Rounding rounding, DnnlEnv& env, Tensor* out);

 private:
  void load(const FusedNorm& norm, int64_t c, DnnlEnv& env);
  bool unfused_norm_is_ncsp(const Shape& shape, float epsilon, DnnlEnv& env);

  std::vector<const void*> key_;  // the parameter buffers the cache holds
  std::vector<float> mean_, mul_, shift_;
  std::vector<const void*> ncsp_key_;  // the parameters ncsp_mul_ is of
  std::vector<float> ncsp_mul_;        // scale / sqrt(var + eps)
  Shape ncsp_shape_;                   // the shape (and epsilon) ncsp_ was judged for
  float ncsp_eps_ = 0;
  bool ncsp_ = false;
};

}  // namespace torq::engine
