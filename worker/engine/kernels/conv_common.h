// Shared geometry for Conv and ConvTranspose: attribute parsing and the
// padding rules of ONNX (explicit pads, auto_pad SAME_UPPER/SAME_LOWER/VALID).
#pragma once

#include <string>
#include <vector>

#include "worker/engine/kernel.h"

namespace torq::engine {

struct ConvAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  int64_t group = 1;
  std::vector<int64_t> output_padding, output_shape;     // ConvTranspose only

  // Reads the attributes; throws Unsupported for unknown ones.
  static ConvAttrs parse(const NodeInfo& n, bool transpose);
  // Fills defaults for `spatial` axes given the weight's kernel extents.
  void complete(size_t spatial, const std::vector<int64_t>& weight_kernel);
};

// Output extents and (begin, end) padding of a forward convolution.
void conv_forward_geometry(const ConvAttrs& a, const std::vector<int64_t>& in,
                           std::vector<int64_t>* out, std::vector<int64_t>* pad_l,
                           std::vector<int64_t>* pad_r);

}  // namespace torq::engine
