#include "pipeline/probe/envelope_predict.h"

#include <algorithm>

namespace torq::pipeline::probe {

namespace {

bool predict_conv_like(const std::string& op) { return op == "Conv" || op == "ConvTranspose"; }

// The spatial checks of a conv/pool rule (profile_check.cc check_spatial).
std::string predict_spatial_refusal(const targets::OpRule& r, const PointFeatures& f) {
  if (!r.spatial_ranks.empty() && !r.spatial_ranks.count(f.spatial_rank())) return "spatial_ranks";
  for (int64_t k : f.kernel) {
    if (r.max_kernel && k > *r.max_kernel) return "max_kernel";
    if (r.min_kernel && k < *r.min_kernel) return "min_kernel";
  }
  for (size_t i = 2; i < f.input_shape.size(); ++i)
    if (r.min_spatial && f.input_shape[i] < *r.min_spatial) return "min_spatial";
  for (int64_t s : f.strides)
    if (r.max_stride && s > *r.max_stride) return "max_stride";
  for (int64_t d : f.dilations)
    if (r.max_dilation && d > *r.max_dilation) return "max_dilation";
  const bool strided = std::any_of(f.strides.begin(), f.strides.end(), [](int64_t s) { return s > 1; });
  if (strided && r.max_strided_input_elements && f.numel() > *r.max_strided_input_elements)
    return "max_strided_input_elements";
  return "";
}

}  // namespace

std::string refusing_limit(const targets::OpRule& r, const PointFeatures& f) {
  if (!r.conv_groups.empty() && predict_conv_like(f.op) && !r.conv_groups.count(f.group_kind)) return "conv_groups";
  if (f.spatial())
    if (std::string k = predict_spatial_refusal(r, f); !k.empty()) return k;
  if (r.max_input_elements && f.numel() > *r.max_input_elements) return "max_input_elements";
  if (r.max_rank && f.max_rank > *r.max_rank) return "max_rank";
  return "";
}

std::string refusing_key(const targets::TargetProfile& p, const PointFeatures& f) {
  if (p.all_ops()) return "";
  const targets::OpRule* r = p.rule(f.op);
  if (!r) return "op";
  // An op of any dtype has no fp32 datapath on a bf16 executor unless its
  // rule lists f32.
  if (f.dtype == base::DType::kF32 && p.float_type() == base::DType::kBF16 &&
      (r->dtypes.empty() || !r->dtypes.count(f.dtype)))
    return "fp32";
  if (!r->dtypes.empty() && !r->dtypes.count(f.dtype)) return "dtypes";
  return refusing_limit(f.integer() && r->int_rule ? *r->int_rule : *r, f);
}

}  // namespace torq::pipeline::probe
