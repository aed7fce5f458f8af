// Unit tests of MatMul (kernels/gemm.cc) on batched operands: a B shared by
// every batch (batch dims of 1 or a 2-D B) is run as one 2-D product with
// the batch rows stacked; a B with its own batches as a batched product.
// Both against a double-precision reference, with a constant B (packed
// once, reused by a second run) and a B that changes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tests/unit/kernel_harness.h"

namespace torq::engine {
namespace {

using namespace test;

Tensor random_tensor(Shape s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (float& x : v) x = u(rng);
  return vec(v, s);
}

// numpy matmul of [.., M, K] x [.., K, N] (ranks >= 2, batch broadcast) in double.
std::vector<double> reference(const Tensor& a, const Tensor& b, Shape* out_shape) {
  Shape as = a.shape(), bs = b.shape();
  const size_t r = std::max(as.size(), bs.size());
  as.insert(as.begin(), r - as.size(), 1);
  bs.insert(bs.begin(), r - bs.size(), 1);
  Shape batch;
  for (size_t i = 0; i + 2 < r; ++i) batch.push_back(std::max(as[i], bs[i]));
  const int64_t m = as[r - 2], k = as[r - 1], n = bs[r - 1];
  *out_shape = batch;
  out_shape->push_back(m);
  out_shape->push_back(n);
  const int64_t nb = shape_numel(batch);
  std::vector<double> out;
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t rem = bi, ao = 0, bo = 0, astr = m * k, bstr = k * n;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      ao += (as[d] == 1 ? 0 : idx) * astr;
      bo += (bs[d] == 1 ? 0 : idx) * bstr;
      astr *= as[d];
      bstr *= bs[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += static_cast<double>(a.data<float>()[ao + i * k + p]) * b.data<float>()[bo + p * n + j];
        out.push_back(s);
      }
  }
  return out;
}

void expect_matmul(const Shape& as, const Shape& bs, bool constant_b) {
  SCOPED_TRACE(shape_str(as) + " x " + shape_str(bs) + (constant_b ? " (constant B)" : ""));
  KernelRunner r(nullptr, constant_b);
  NodeInfo info(make_node("MatMul", 2), 17);
  const KernelFactory* f = KernelRegistry::global().find("MatMul", 17);
  ASSERT_NE(f, nullptr);
  std::unique_ptr<Kernel> k = (*f)(info);
  const Tensor b = random_tensor(bs, 7);
  for (uint32_t run = 0; run < 2; ++run) {  // the second run reuses the packed B
    const Tensor a = random_tensor(as, 11 + run);
    std::vector<Tensor> outs(1);
    KernelContext ctx({&a, &b}, {false, constant_b}, &outs, &r.env, Rounding::kNearestEven, 1);
    k->compute(ctx);
    Shape want_shape;
    const auto want = reference(a, b, &want_shape);
    ASSERT_EQ(outs[0].shape(), want_shape);
    ASSERT_TRUE(outs[0].is_plain());
    const auto got = values<float>(outs[0]);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i])) << i;
  }
}

TEST(MatMul, SharedWeightIsOneStackedProduct) {
  for (bool c : {true, false}) {
    expect_matmul({197, 1, 48}, {48, 72}, c);      // vit's sequence-first projection
    expect_matmul({1, 197, 48}, {48, 40}, c);
    expect_matmul({2, 3, 5, 16}, {1, 1, 16, 24}, c);
    expect_matmul({3, 5, 16}, {1, 16, 24}, c);
  }
}

TEST(MatMul, PerBatchWeightStaysBatched) {
  expect_matmul({12, 9, 16}, {12, 16, 9}, false);
  expect_matmul({1, 9, 16}, {3, 16, 5}, false);  // A broadcast over B's batches
  expect_matmul({2, 1, 9, 16}, {1, 3, 16, 5}, true);
}

}  // namespace
}  // namespace torq::engine
