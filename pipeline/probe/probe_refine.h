// Refinement rounds of a probe (issue 34): a learned bound lies somewhere
// in the gap between the running point at the bound and the nearest
// failing point only that bound explains. When the gap holds parameter
// values no point had (a kernel of 8 between 7 and 9, inputs between
// 102400 and 200704 elements), a refinement probes a few of them, each a
// copy of the running point at the bound with one parameter moved into
// the gap (kernel, stride, dilation or spatial size; the spatial size or
// the channel count for an element count), so the next learning bounds
// the limit more tightly.
#pragma once

#include <cstddef>
#include <vector>

#include "pipeline/probe/envelope_learn.h"
#include "pipeline/probe/probe_point.h"

namespace torq::pipeline::probe {

// The points of the next round: up to `per_gap` per bound whose gap holds
// untested values, spread evenly (geometrically for sizes) over it; none
// already in `rows`. Deterministic.
std::vector<ProbePoint> refine_points(const std::vector<ProbeRow>& rows, const std::vector<DerivedProfile>& profiles,
                                      size_t per_gap = 6);

}  // namespace torq::pipeline::probe
