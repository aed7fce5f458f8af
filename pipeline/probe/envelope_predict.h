// Which key of an executor profile refuses a probe point (issue 34): the
// profile's judgement of the point's node, restated over the point's
// features (probe_point.h) so the learner and the reports can predict a
// status without the engine. Must agree with ExecutorProfile::check
// (worker/engine/profile_check.cc): same checks, same order.
#pragma once

#include <string>

#include "pipeline/probe/probe_point.h"
#include "pipeline/targets/target_profile.h"

namespace torq::pipeline::probe {

// "" when `p` accepts the point, else the profile key that refuses it:
// op, fp32, dtypes, conv_groups, spatial_ranks, max_kernel, min_kernel,
// min_spatial, max_stride, max_dilation, max_strided_input_elements,
// max_input_elements or max_rank (the first the engine would throw on).
std::string refusing_key(const targets::TargetProfile& p, const PointFeatures& f);

// Whether `rule` (a rule's constraints, without its dtypes) admits the
// point: the limits part of refusing_key, "" or the refusing key.
std::string refusing_limit(const targets::OpRule& rule, const PointFeatures& f);

}  // namespace torq::pipeline::probe
