// The vectorized sigmoid and swish (kernels/vec_sigmoid.h) the Sigmoid
// kernel and a Conv's fused Swish run: values within 2 ulp of the double
// result over the whole float range that does not round to 0 or 1, special
// values, tails of every length, swish bit-identical to sigmoid then an fp32
// multiply, and the Sigmoid kernel on a channels-last buffer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tests/unit/kernel_harness.h"
#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernel.h"
#include "worker/engine/kernels/vec_sigmoid.h"

namespace torq::engine {
namespace {

using namespace test;

// Distance in representable floats between two finite floats of one sign.
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

float ref_sigmoid(float x) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x)))); }

#define REQUIRE_FAST()                                                                  \
  if (!vm::fast_sigmoid()) GTEST_SKIP() << "no AVX-512F: the engine keeps oneDNN's logistic"

TEST(VecSigmoid, WithinTwoUlpOfTheDoubleResult) {
  REQUIRE_FAST();
  // Every 1/64 from -110 to 110 (the results go from 0 through the
  // subnormals to 1), then random floats of every exponent in that range.
  std::vector<float> x;
  for (int i = -110 * 64; i <= 110 * 64; ++i) x.push_back(static_cast<float>(i) / 64.f);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> ex(-30, 6), sign(0, 1);
  for (int i = 0; i < 200000; ++i) x.push_back((sign(rng) ? -1.f : 1.f) * std::ldexp(mant(rng), ex(rng)));
  x.push_back(-103.9f);
  std::vector<float> s(x.size());
  vm::sigmoid_f32(x.data(), s.data(), static_cast<int64_t>(x.size()));
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t u = ulps(s[i], ref_sigmoid(x[i]));
    ASSERT_LE(u, 2) << "x " << x[i] << " got " << s[i] << " want " << ref_sigmoid(x[i]);
    worst = std::max(worst, u);
  }
  EXPECT_LE(worst, 2);
  EXPECT_EQ(s[0], 0.f);  // sigmoid(-110) rounds to 0
  EXPECT_EQ(s[110 * 64 * 2], 1.f);
  EXPECT_GT(s[(110 - 100) * 64], 0.f);  // sigmoid(-100): a subnormal, not flushed
  EXPECT_LT(s[(110 - 100) * 64], std::numeric_limits<float>::min());
}

TEST(VecSigmoid, SpecialValues) {
  REQUIRE_FAST();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x{nan, inf, -inf, 0.f, -0.f, 1e30f, -1e30f, std::numeric_limits<float>::denorm_min()};
  std::vector<float> s(x.size());
  vm::sigmoid_f32(x.data(), s.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_EQ(s[1], 1.f);
  EXPECT_EQ(s[2], 0.f);
  EXPECT_EQ(s[3], 0.5f);
  EXPECT_EQ(s[4], 0.5f);
  EXPECT_EQ(s[5], 1.f);
  EXPECT_EQ(s[6], 0.f);
  EXPECT_EQ(s[7], 0.5f);
  std::vector<float> w = x;
  vm::swish_f32(w.data(), static_cast<int64_t>(w.size()));
  EXPECT_TRUE(std::isnan(w[0]));
  EXPECT_EQ(w[1], inf);
  EXPECT_TRUE(std::isnan(w[2]));  // -inf * 0, as Sigmoid then Mul
  EXPECT_EQ(w[3], 0.f);
  EXPECT_EQ(w[5], 1e30f);
  EXPECT_EQ(w[6], -0.f);
}

TEST(VecSigmoid, SwishIsSigmoidThenAMultiplyBitForBitAtEveryLength) {
  REQUIRE_FAST();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-12.f, 12.f);
  // Tails of every length, and lengths that run in parallel (> 32768).
  for (int64_t n : {1, 5, 15, 16, 17, 31, 33, 4095, 4097, 40000, 100003}) {
    SCOPED_TRACE(n);
    std::vector<float> x(static_cast<size_t>(n) + 3);
    for (float& v : x) v = u(rng);
    const float guard = x[static_cast<size_t>(n)];
    std::vector<float> s(x.size(), 42.f);
    vm::sigmoid_f32(x.data(), s.data(), n);
    std::vector<float> w = x;
    vm::swish_f32(w.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i);
      ASSERT_EQ(ulps(s[k], ref_sigmoid(x[k])) <= 2, true) << i;
      const float want = x[k] * s[k];
      ASSERT_EQ(std::memcmp(&w[k], &want, 4), 0) << i;
    }
    EXPECT_EQ(s[static_cast<size_t>(n)], 42.f);  // nothing written past n
    EXPECT_EQ(w[static_cast<size_t>(n)], guard);
    // In place gives the same as out of place.
    std::vector<float> in_place = x;
    vm::sigmoid_f32(in_place.data(), in_place.data(), n);
    EXPECT_EQ(std::memcmp(in_place.data(), s.data(), static_cast<size_t>(n) * 4), 0);
  }
}

TEST(VecSigmoid, SigmoidKernelKeepsAChannelsLastLayoutWithTheSameNumbers) {
  REQUIRE_FAST();
  KernelRunner r(register_unary_kernels);
  const Shape s{1, 20, 3, 5};
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i)) * 9.f;
  const Tensor x = Tensor::from_vector(v, s);
  const Tensor plain = r.run("Sigmoid", 13, {x});
  ASSERT_TRUE(plain.is_plain());
  std::vector<float> want(v.size());
  vm::sigmoid_f32(v.data(), want.data(), static_cast<int64_t>(v.size()));
  EXPECT_EQ(values<float>(plain), want);
  const dnnl::memory::desc nhwc(to_dims(s), dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc);
  const Tensor out = r.run("Sigmoid", 13, {reorder_to(x, nhwc, DType::kF32, r.env)});
  ASSERT_FALSE(out.is_plain());
  EXPECT_TRUE(md_of(out) == nhwc);
  EXPECT_EQ(values<float>(to_plain(out, r.env)), want);
}

}  // namespace
}  // namespace torq::engine
