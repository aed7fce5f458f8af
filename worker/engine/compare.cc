#include "worker/engine/compare.h"

#include <cmath>

#include "pipeline/base/error.h"

namespace torq::engine {

TensorDiff compare_tensors(const Tensor& actual, const Tensor& expected, double tol) {
  if (actual.shape() != expected.shape())
    throw EngineError(ErrorKind::kInvalidInput, "shape " + shape_str(actual.shape()) + " differs from expected " +
                                                    shape_str(expected.shape()));
  TensorDiff d;
  d.size = actual.numel();
  double sa = 0, se = 0, sum_abs = 0, sum_sq = 0;
  int64_t finite = 0;
  bool allclose = true;
  for (int64_t i = 0; i < d.size; ++i) {
    const double o = actual.get_as_double(i), e = expected.get_as_double(i);
    if (!std::isfinite(o) || !std::isfinite(e)) {
      if (!(std::isnan(o) && std::isnan(e)) && o != e) {
        ++d.nan_mismatch;
        allclose = false;
      }
      continue;
    }
    const double diff = std::fabs(e - o);
    const double rel = diff / (std::fabs(e) + std::fabs(o) + 1e-6);
    d.max_abs = std::max(d.max_abs, diff);
    d.max_rel = std::max(d.max_rel, rel);
    d.max_ref = std::max(d.max_ref, std::fabs(e));
    if (rel > tol) ++d.over_tol;
    if (diff > 1e-2 + 1e-2 * std::fabs(e)) allclose = false;
    sum_abs += diff;
    sum_sq += diff * diff;
    sa += o;
    se += e;
    ++finite;
  }
  if (finite > 0) {
    d.mean_abs = sum_abs / static_cast<double>(finite);
    d.rmse = std::sqrt(sum_sq / static_cast<double>(finite));
  }
  if (allclose && finite > 0) {
    d.pcc = 1.0;
    return d;
  }
  const double ma = sa / static_cast<double>(finite), me = se / static_cast<double>(finite);
  double cov = 0, va = 0, ve = 0;
  for (int64_t i = 0; i < d.size; ++i) {
    const double o = actual.get_as_double(i), e = expected.get_as_double(i);
    if (!std::isfinite(o) || !std::isfinite(e)) continue;
    cov += (o - ma) * (e - me);
    va += (o - ma) * (o - ma);
    ve += (e - me) * (e - me);
  }
  d.pcc = (va > 0 && ve > 0) ? cov / std::sqrt(va * ve) : NAN;
  return d;
}

}  // namespace torq::engine
