// The per-channel broadcast fast path (kernels/binary_chan.h): x in
// channels-last f32 (op) c[C] gives, bit for bit, what the plain NCHW loop
// gives for every op and for the channel shapes it takes; the cases it does
// not take (c along another axis, a plain or nChw16c x, bf16) are refused
// without touching the output.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernels/binary_chan.h"

using namespace torq::engine;
using dnnl::algorithm;
using ft = dnnl::memory::format_tag;

namespace {

constexpr int64_t kN = 2, kC = 24, kH = 5, kW = 7;

std::vector<float> random_values(size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// NCHW values `v` stored in layout `tag`.
Tensor in_layout(const std::vector<float>& v, ft tag, DnnlEnv& env) {
  Tensor plain(DType::kF32, Shape{kN, kC, kH, kW});
  std::memcpy(plain.raw(), v.data(), v.size() * sizeof(float));
  const dnnl::memory::desc md(to_dims(plain.shape()), dnnl::memory::data_type::f32, tag);
  return reorder_to(plain, md, DType::kF32, env);
}

float apply(algorithm alg, float a, float b) {
  switch (alg) {
    case algorithm::binary_add: return a + b;
    case algorithm::binary_sub: return a - b;
    case algorithm::binary_mul: return a * b;
    default: return a / b;
  }
}

TEST(BinaryChannel, MatchesThePlainLoopBitForBit) {
  DnnlEnv env;
  const auto xv = random_values(kN * kC * kH * kW, 1, -4.f, 4.f);
  const auto cv = random_values(kC, 2, 0.25f, 2.f);
  const Tensor x = in_layout(xv, ft::nhwc, env);
  for (const Shape& cs : {Shape{1, kC, 1, 1}, Shape{kC, 1, 1}}) {
    Tensor c(DType::kF32, cs);
    std::memcpy(c.raw(), cv.data(), cv.size() * sizeof(float));
    for (auto alg : {algorithm::binary_add, algorithm::binary_sub, algorithm::binary_mul, algorithm::binary_div}) {
      SCOPED_TRACE(static_cast<int>(alg));
      Tensor out;
      ASSERT_TRUE(elt::channel_broadcast(alg, x, md_of(x), c, out));
      EXPECT_FALSE(out.is_plain());  // keeps x's channels-last layout
      EXPECT_EQ(out.shape(), x.shape());
      const Tensor p = to_plain(out, env);
      const float* got = p.data<float>();
      int64_t i = 0, diffs = 0;
      for (int64_t n = 0; n < kN; ++n)
        for (int64_t ch = 0; ch < kC; ++ch)
          for (int64_t s = 0; s < kH * kW; ++s, ++i) {
            const float want = apply(alg, xv[static_cast<size_t>(i)], cv[static_cast<size_t>(ch)]);
            if (std::memcmp(&want, &got[i], sizeof(float)) != 0) ++diffs;
          }
      EXPECT_EQ(diffs, 0);
      EXPECT_NE(got[1], xv[1]);  // the op did change the values
    }
  }
}

TEST(BinaryChannel, RefusesOtherCases) {
  DnnlEnv env;
  const auto xv = random_values(kN * kC * kH * kW, 3, -1.f, 1.f);
  const Tensor nhwc = in_layout(xv, ft::nhwc, env);
  Tensor c(DType::kF32, Shape{1, kC, 1, 1});
  std::memset(c.raw(), 0, kC * sizeof(float));
  const auto refused = [&](algorithm alg, const Tensor& x, const Tensor& cc) {
    Tensor out;
    const bool took = elt::channel_broadcast(alg, x, md_of(x), cc, out);
    return !took && !out.defined();
  };
  // c along W (numpy aligns [W] with the last axis), and c with a wrong extent.
  Tensor along_w(DType::kF32, Shape{kW});
  std::memset(along_w.raw(), 0, kW * sizeof(float));
  EXPECT_TRUE(refused(algorithm::binary_mul, nhwc, along_w));
  Tensor along_h(DType::kF32, Shape{1, 1, kH, 1});
  std::memset(along_h.raw(), 0, kH * sizeof(float));
  EXPECT_TRUE(refused(algorithm::binary_mul, nhwc, along_h));
  // x plain (NCHW) or nChw16c: the plain loop and the primitive run those.
  Tensor plain(DType::kF32, Shape{kN, kC, kH, kW});
  EXPECT_TRUE(refused(algorithm::binary_mul, plain, c));
  EXPECT_TRUE(refused(algorithm::binary_mul, in_layout(xv, ft::nChw16c, env), c));
  // bf16 operands, and an op that is not add/sub/mul/div.
  EXPECT_TRUE(refused(algorithm::binary_mul, nhwc, cast_tensor(c, DType::kBF16, Rounding::kNearestEven)));
  EXPECT_TRUE(refused(algorithm::binary_max, nhwc, c));
  // The same c is taken on the nhwc x.
  Tensor out;
  EXPECT_TRUE(elt::channel_broadcast(algorithm::binary_mul, nhwc, md_of(nhwc), c, out));
}

}  // namespace
