// compare_tensors against the metric definitions written out plainly
// (compare.h): the fast paths (f32 read from memory, quotients divided only
// where they can count, sums kept in 8 lanes) must give exactly the plain
// formulas' maxima and counts, and their sums to the last few bits.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "worker/engine/compare.h"

namespace {

using torq::engine::DType;
using torq::engine::Rounding;
using torq::engine::Tensor;
using torq::engine::TensorDiff;

TensorDiff plain(const Tensor& a, const Tensor& x, double tol) {
  TensorDiff d;
  d.size = a.numel();
  double sa = 0, se = 0, s1 = 0, s2 = 0;
  int64_t n = 0;
  bool close = true;
  for (int64_t i = 0; i < d.size; ++i) {
    const double o = a.get_as_double(i), e = x.get_as_double(i);
    if (!std::isfinite(o) || !std::isfinite(e)) {
      if (!(std::isnan(o) && std::isnan(e)) && o != e) ++d.nan_mismatch, close = false;
      continue;
    }
    const double diff = std::fabs(e - o), rel = diff / (std::fabs(e) + std::fabs(o) + 1e-6);
    d.max_abs = std::max(d.max_abs, diff);
    d.max_rel = std::max(d.max_rel, rel);
    d.max_ref = std::max(d.max_ref, std::fabs(e));
    d.over_tol += rel > tol;
    close = close && !(diff > 1e-2 + 1e-2 * std::fabs(e));
    s1 += diff, s2 += diff * diff, sa += o, se += e, ++n;
  }
  d.mean_abs = s1 / n;
  d.rmse = std::sqrt(s2 / n);
  if (close) {
    d.pcc = 1;
    return d;
  }
  double c = 0, va = 0, ve = 0;
  for (int64_t i = 0; i < d.size; ++i) {
    const double o = a.get_as_double(i) - sa / n, e = x.get_as_double(i) - se / n;
    if (!std::isfinite(o) || !std::isfinite(e)) continue;
    c += o * e, va += o * o, ve += e * e;
  }
  d.pcc = c / std::sqrt(va * ve);
  return d;
}

void expect_same(const TensorDiff& got, const TensorDiff& want) {
  EXPECT_EQ(got.max_abs, want.max_abs);
  EXPECT_EQ(got.max_rel, want.max_rel);
  EXPECT_EQ(got.max_ref, want.max_ref);
  // Sums in another order: equal within a few ulp.
  EXPECT_NEAR(got.mean_abs, want.mean_abs, 1e-13 * std::fabs(want.mean_abs));
  EXPECT_NEAR(got.rmse, want.rmse, 1e-13 * std::fabs(want.rmse));
  EXPECT_EQ(got.over_tol, want.over_tol);
  EXPECT_EQ(got.nan_mismatch, want.nan_mismatch);
  EXPECT_EQ(got.size, want.size);
  if (std::isnan(want.pcc)) EXPECT_TRUE(std::isnan(got.pcc));
  else EXPECT_NEAR(got.pcc, want.pcc, 1e-12);
}

Tensor noisy(const Tensor& x, double scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  Tensor y(DType::kF32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i)
    y.data<float>()[i] = x.data<float>()[i] * (1.f + static_cast<float>(scale) * n(rng)) + (i % 97 == 0 ? 0.f : 1e-7f);
  return y;
}

TEST(CompareTensors, FastPathsEqualThePlainFormulas) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  Tensor x(DType::kF32, {4, 1000});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  // Close (pcc 1), far (centred cosine), and with NaN/Inf on either side.
  for (double scale : {1e-5, 3e-2, 0.5}) {
    Tensor y = noisy(x, scale, 11);
    for (double tol : {1e-4, 1e-2, 0.2}) {
      SCOPED_TRACE("scale " + std::to_string(scale) + " tol " + std::to_string(tol));
      expect_same(compare_tensors(y, x, tol), plain(y, x, tol));
      // bf16 actual (the generic reader on one side).
      Tensor yb = cast_tensor(y, DType::kBF16, Rounding::kNearestEven);
      expect_same(compare_tensors(yb, x, tol), plain(yb, x, tol));
      expect_same(compare_tensors(x, yb, tol), plain(x, yb, tol));
    }
  }
  Tensor y = noisy(x, 3e-2, 5);
  y.data<float>()[3] = NAN;
  y.data<float>()[8] = INFINITY;
  x.data<float>()[8] = INFINITY;
  x.data<float>()[20] = -INFINITY;
  const TensorDiff d = compare_tensors(y, x, 0.01);
  expect_same(d, plain(y, x, 0.01));
  EXPECT_EQ(d.nan_mismatch, 2);  // [3] NaN vs a number, [20] a number vs -Inf; [8] Inf == Inf
  EXPECT_GT(d.over_tol, 0);
  EXPECT_LT(d.pcc, 1.0);
}

TEST(CompareTensors, LengthsThatAreNotAMultipleOfTheLanes) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (int64_t n : {1, 7, 9, 4003}) {
    SCOPED_TRACE("n " + std::to_string(n));
    Tensor x(DType::kF32, {n});
    for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = u(rng);
    Tensor y = noisy(x, 0.1, 13);
    if (n > 1) y.data<float>()[n - 1] = NAN;  // in the tail
    expect_same(compare_tensors(y, x, 0.01), plain(y, x, 0.01));
  }
}

// The f32 path (AVX-512 registers where the CPU has them) and the generic
// reader's path (an f64 copy of the same values) run the same arithmetic
// lane for lane: every figure is the same bits, sums and PCC included.
TEST(CompareTensors, TheF32PathIsTheGenericPathBitForBit) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<float> u(-5.f, 5.f);
  for (double scale : {1e-5, 3e-2, 0.5}) {
    for (int64_t n : {8, 64, 4003, 100000}) {
      SCOPED_TRACE("scale " + std::to_string(scale) + " n " + std::to_string(n));
      Tensor x(DType::kF32, {n});
      for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = u(rng) + 2.f;  // a mean away from 0
      Tensor y = noisy(x, scale, 19);
      if (n > 64) {
        y.data<float>()[40] = NAN;
        x.data<float>()[41] = INFINITY;
        y.data<float>()[n / 2] = -INFINITY;
      }
      const Tensor y64 = cast_tensor(y, DType::kF64, Rounding::kNearestEven);
      const TensorDiff fast = compare_tensors(y, x, 0.01), generic = compare_tensors(y64, x, 0.01);
      EXPECT_EQ(fast.max_abs, generic.max_abs);
      EXPECT_EQ(fast.max_rel, generic.max_rel);
      EXPECT_EQ(fast.max_ref, generic.max_ref);
      EXPECT_EQ(fast.mean_abs, generic.mean_abs);
      EXPECT_EQ(fast.rmse, generic.rmse);
      EXPECT_EQ(fast.over_tol, generic.over_tol);
      EXPECT_EQ(fast.nan_mismatch, generic.nan_mismatch);
      if (std::isnan(generic.pcc)) EXPECT_TRUE(std::isnan(fast.pcc));
      else EXPECT_EQ(fast.pcc, generic.pcc);
      if (n <= 4003) expect_same(fast, plain(y, x, 0.01));  // a longer sequential sum drifts past 1e-13
    }
  }
}

}  // namespace
