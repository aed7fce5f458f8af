#include "worker/engine/compare.h"

#include <algorithm>
#include <cmath>

#include "pipeline/base/error.h"

namespace torq::engine {

namespace {

constexpr double kScreen = 1.0 - 1e-12;

// The comparison over element readers `act(i)` and `exp(i)` (doubles), so
// the common float tensors are read straight from memory rather than
// through get_as_double's per-element dtype dispatch. Same arithmetic, in
// the same order, whatever the readers.
template <class A, class E>
TensorDiff compare_with(A act, E exp, int64_t n, double tol) {
  TensorDiff d;
  d.size = n;
  double sa = 0, se = 0, sum_abs = 0, sum_sq = 0;
  int64_t finite = 0;
  bool allclose = true;
  for (int64_t i = 0; i < d.size; ++i) {
    const double o = act(i), e = exp(i);
    if (!std::isfinite(o) || !std::isfinite(e)) {
      if (!(std::isnan(o) && std::isnan(e)) && o != e) {
        ++d.nan_mismatch;
        allclose = false;
      }
      continue;
    }
    const double diff = std::fabs(e - o);
    const double den = std::fabs(e) + std::fabs(o) + 1e-6;
    d.max_abs = std::max(d.max_abs, diff);
    d.max_ref = std::max(d.max_ref, std::fabs(e));
    // rel = diff / den, divided only where it can raise max_rel or pass
    // tol: the products screen with a 1e-12 margin, far above their
    // rounding, so every element whose quotient counts is divided.
    if (diff > std::min(d.max_rel, tol) * den * kScreen) {
      const double rel = diff / den;
      d.max_rel = std::max(d.max_rel, rel);
      if (rel > tol) ++d.over_tol;
    }
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
    const double o = act(i), e = exp(i);
    if (!std::isfinite(o) || !std::isfinite(e)) continue;
    cov += (o - ma) * (e - me);
    va += (o - ma) * (o - ma);
    ve += (e - me) * (e - me);
  }
  d.pcc = (va > 0 && ve > 0) ? cov / std::sqrt(va * ve) : NAN;
  return d;
}

}  // namespace

TensorDiff compare_tensors(const Tensor& actual, const Tensor& expected, double tol) {
  if (actual.shape() != expected.shape())
    throw EngineError(ErrorKind::kInvalidInput, "shape " + shape_str(actual.shape()) + " differs from expected " +
                                                    shape_str(expected.shape()));
  const int64_t n = actual.numel();
  auto generic = [](const Tensor& t) { return [&t](int64_t i) { return t.get_as_double(i); }; };
  auto f32 = [](const Tensor& t) {
    const float* p = t.data<float>();
    return [p](int64_t i) { return static_cast<double>(p[i]); };
  };
  const bool fa = actual.dtype() == DType::kF32 && actual.is_plain();
  const bool fe = expected.dtype() == DType::kF32 && expected.is_plain();
  if (fa && fe) return compare_with(f32(actual), f32(expected), n, tol);
  if (fa) return compare_with(f32(actual), generic(expected), n, tol);
  if (fe) return compare_with(generic(actual), f32(expected), n, tol);
  return compare_with(generic(actual), generic(expected), n, tol);
}

}  // namespace torq::engine
