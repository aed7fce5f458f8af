#include "worker/runner/compare_outputs.h"

#include <cmath>
#include <limits>

#include "worker/engine/compare.h"

namespace torq::runner {

using pipeline::OutputDiff;
using pipeline::Tolerance;

OutputDiff diff_output(const std::string& name, const engine::Tensor& actual, const engine::Tensor& expected,
                       const Tolerance& tol) {
  OutputDiff d;
  d.name = name;
  d.size = expected.numel();
  if (actual.shape() != expected.shape()) {
    d.over_tol = std::max<int64_t>(1, d.size);
    d.max_abs = d.max_rel = std::numeric_limits<double>::infinity();
    d.pcc = std::nan("");
    return d;
  }
  engine::TensorDiff t = engine::compare_tensors(actual, expected, tol.fp_max_tol);
  d.max_abs = t.max_abs;
  d.mean_abs = t.mean_abs;
  d.rmse = t.rmse;
  d.max_rel = t.max_rel;
  d.pcc = t.pcc;
  d.nan_mismatch = t.nan_mismatch;
  d.over_tol = t.over_tol;
  if (!engine::is_float(expected.dtype()) || !engine::is_float(actual.dtype())) {
    d.over_tol = 0;
    for (int64_t i = 0; i < d.size; ++i)
      if (std::fabs(actual.get_as_double(i) - expected.get_as_double(i)) > 1.0) ++d.over_tol;
  }
  return d;
}

}  // namespace torq::runner
