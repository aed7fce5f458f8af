// Comparing an executor's output tensors with the reference (DESIGN §4):
// the per-output figures pipeline::judge() turns into a status. The worker's
// side of the comparison: the pipeline knows results, not tensors.
#pragma once

#include <string>

#include "pipeline/core/types.h"
#include "worker/engine/tensor.h"

namespace torq::runner {

// Metrics of `actual` against `expected`, computed in double: a shape
// mismatch is every element over tolerance; integer/bool outputs count
// elements with |e-o| > 1 over tolerance.
pipeline::OutputDiff diff_output(const std::string& name, const engine::Tensor& actual,
                                 const engine::Tensor& expected, const pipeline::Tolerance& tol);

}  // namespace torq::runner
