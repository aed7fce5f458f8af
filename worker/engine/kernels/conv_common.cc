#include "worker/engine/kernels/conv_common.h"

namespace torq::engine {

ConvAttrs ConvAttrs::parse(const NodeInfo& n, bool transpose) {
  if (transpose)
    n.expect_attrs({"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape",
                    "pads", "strides"});
  else
    n.expect_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  ConvAttrs a;
  a.auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (a.auto_pad != "NOTSET" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER" &&
      a.auto_pad != "VALID")
    throw_invalid("bad auto_pad '" + a.auto_pad + "'");
  a.kernel = n.attr_ints("kernel_shape");
  a.strides = n.attr_ints("strides");
  a.dilations = n.attr_ints("dilations");
  a.pads = n.attr_ints("pads");
  a.group = n.attr_int("group", 1);
  a.output_padding = n.attr_ints("output_padding");
  a.output_shape = n.attr_ints("output_shape");
  TORQ_CHECK(a.group >= 1, "group must be >= 1");
  return a;
}

void ConvAttrs::complete(size_t spatial, const std::vector<int64_t>& weight_kernel) {
  if (kernel.empty()) kernel = weight_kernel;
  TORQ_CHECK(kernel.size() == spatial, "kernel_shape rank does not match the input");
  TORQ_CHECK(kernel == weight_kernel, "kernel_shape does not match the weight shape");
  if (strides.empty()) strides.assign(spatial, 1);
  if (dilations.empty()) dilations.assign(spatial, 1);
  if (pads.empty()) pads.assign(2 * spatial, 0);
  if (output_padding.empty()) output_padding.assign(spatial, 0);
  TORQ_CHECK(strides.size() == spatial && dilations.size() == spatial && pads.size() == 2 * spatial &&
                 output_padding.size() == spatial,
             "strides/dilations/pads rank does not match the input");
  for (size_t i = 0; i < spatial; ++i) {
    TORQ_CHECK(strides[i] >= 1 && dilations[i] >= 1, "strides and dilations must be >= 1");
    TORQ_SUPPORTED(pads[i] >= 0 && pads[i + spatial] >= 0, "negative pads are not supported");
  }
}

void conv_forward_geometry(const ConvAttrs& a, const std::vector<int64_t>& in,
                           std::vector<int64_t>* out, std::vector<int64_t>* pl,
                           std::vector<int64_t>* pr) {
  const size_t s = in.size();
  out->resize(s);
  pl->resize(s);
  pr->resize(s);
  for (size_t i = 0; i < s; ++i) {
    const int64_t ek = (a.kernel[i] - 1) * a.dilations[i] + 1;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      const int64_t o = (in[i] + a.strides[i] - 1) / a.strides[i];
      const int64_t total = std::max<int64_t>(0, (o - 1) * a.strides[i] + ek - in[i]);
      const int64_t small = total / 2, big = total - small;
      (*pl)[i] = a.auto_pad == "SAME_UPPER" ? small : big;
      (*pr)[i] = a.auto_pad == "SAME_UPPER" ? big : small;
      (*out)[i] = o;
    } else {
      (*pl)[i] = a.auto_pad == "VALID" ? 0 : a.pads[i];
      (*pr)[i] = a.auto_pad == "VALID" ? 0 : a.pads[i + s];
      const int64_t span = in[i] + (*pl)[i] + (*pr)[i] - ek;
      TORQ_CHECK(span >= 0, "convolution kernel larger than the padded input");
      (*out)[i] = span / a.strides[i] + 1;
    }
  }
}

}  // namespace torq::engine
