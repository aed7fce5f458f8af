// Unit tests of the unary element-wise kernels (unary*.cc): values of the
// activations and math ops, NaN propagation, blocked and bf16 inputs,
// integer variants, Clip's opset variants and unsupported cases.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/kernel_harness.h"
#include "worker/engine/dnnl_util.h"
#include "pipeline/base/error.h"
#include "worker/engine/kernel.h"

namespace torq::engine {
namespace {

using namespace test;

struct Runner : KernelRunner {
  Runner() : KernelRunner(register_unary_kernels) {}
};

const float kNaN = std::numeric_limits<float>::quiet_NaN();

void expect_close(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], 1e-7 + 1e-3 * std::fabs(want[i])) << "element " << i;
    }
  }
}

TEST(Unary, ActivationValuesWithDefaultsAndAttributes) {
  Runner r;
  auto x = Tensor::from_vector<float>({-2, -0.5f, 0, 1.5f, kNaN}, {5});
  expect_close(values<float>(r.run("Relu", 14, {x})), {0, 0, 0, 1.5, NAN});
  auto lrelu = make_node("LeakyRelu", 1);
  add_float(lrelu, "alpha", 0.1f);
  expect_close(values<float>(r.run(lrelu, 16, {x})), {-0.2, -0.05, 0, 1.5, NAN});
  expect_close(values<float>(r.run("Elu", 6, {x})),
               {std::expm1(-2.0), std::expm1(-0.5), 0, 1.5, NAN});
  const double a = 1.67326319217681884765625, g = 1.05070102214813232421875;
  expect_close(values<float>(r.run("Selu", 6, {x})),
               {g * a * std::expm1(-2.0), g * a * std::expm1(-0.5), 0, g * 1.5, NAN});
  expect_close(values<float>(r.run("Sigmoid", 13, {x})),
               {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 0.5, 1 / (1 + std::exp(-1.5)), NAN});
  expect_close(values<float>(r.run("HardSigmoid", 6, {x})), {0.1, 0.4, 0.5, 0.8, NAN});
  expect_close(values<float>(r.run("HardSwish", 14, {x})),
               {-2 * (1.0 / 6), -0.5 * (0.5 - 0.5 / 6), 0, 1.5 * 0.75, NAN});
  expect_close(values<float>(r.run("Softplus", 1, {x})),
               {std::log1p(std::exp(-2.0)), std::log1p(std::exp(-0.5)), std::log(2.0),
                std::log1p(std::exp(1.5)), NAN});
  expect_close(values<float>(r.run("Softsign", 1, {x})), {-2.0 / 3, -0.5 / 1.5, 0, 0.6, NAN});
}

TEST(Unary, MathOpsAndSpecialValues) {
  Runner r;
  auto x = Tensor::from_vector<float>({-1.5f, 0, 1.0003715f, 4, kNaN}, {5});
  expect_close(values<float>(r.run("Sqrt", 13, {x})), {NAN, 0, std::sqrt(1.0003715), 2, NAN});
  expect_close(values<float>(r.run("Exp", 13, {x})),
               {std::exp(-1.5), 1, std::exp(1.0003715), std::exp(4.0), NAN});
  expect_close(values<float>(r.run("Log", 13, {x})),
               {NAN, -INFINITY, std::log(static_cast<double>(1.0003715f)), std::log(4.0), NAN});
  expect_close(values<float>(r.run("Reciprocal", 13, {x})),
               {-1 / 1.5, INFINITY, 1 / 1.0003715, 0.25, NAN});
  expect_close(values<float>(r.run("Erf", 13, {x})),
               {std::erf(-1.5), 0, std::erf(1.0003715), std::erf(4.0), NAN});
  expect_close(values<float>(r.run("Sign", 13, {x})), {-1, 0, 1, 1, NAN});
  expect_close(values<float>(r.run("Ceil", 13, {x})), {-1, 0, 2, 4, NAN});
  expect_close(values<float>(r.run("Floor", 13, {x})), {-2, 0, 1, 4, NAN});
  expect_close(values<float>(r.run("Neg", 13, {x})), {1.5, 0, -1.0003715, -4, NAN});
  expect_close(values<float>(r.run("Abs", 13, {x})), {1.5, 0, 1.0003715, 4, NAN});
}

TEST(Unary, IntegerAbsNegSignRelu) {
  Runner r;
  auto x = Tensor::from_vector<int8_t>({-128, -3, 0, 5}, {4});
  EXPECT_EQ(values<int8_t>(r.run("Abs", 13, {x})), (std::vector<int8_t>{-128, 3, 0, 5}));
  EXPECT_EQ(values<int8_t>(r.run("Neg", 13, {x})), (std::vector<int8_t>{-128, 3, 0, -5}));
  EXPECT_EQ(values<int8_t>(r.run("Sign", 13, {x})), (std::vector<int8_t>{-1, -1, 0, 1}));
  EXPECT_EQ(values<int8_t>(r.run("Relu", 14, {x})), (std::vector<int8_t>{0, 0, 0, 5}));
  auto d = Tensor::from_vector<double>({-0.25, 9}, {2});
  EXPECT_EQ(values<double>(r.run("Sqrt", 13, {d}))[1], 3.0);
}

TEST(Unary, UnsupportedVariantsThrowUnsupported) {
  Runner r;
  auto xi = Tensor::from_vector<int32_t>({4}, {1});
  EXPECT_EQ(error_kind_of([&] { r.run("Sqrt", 13, {xi}); }), ErrorKind::kUnsupported);
  auto relu1 = make_node("Relu", 1);
  auto* a = relu1.add_attribute();
  a->set_name("consumed_inputs");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(0);
  auto xf = Tensor::from_vector<float>({1}, {1});
  EXPECT_EQ(error_kind_of([&] { r.run(relu1, 1, {xf}); }), ErrorKind::kUnsupported);
  EXPECT_EQ(error_kind_of([&] { r.run("Not", 1, {xf}); }), ErrorKind::kUnsupported);
}

TEST(Unary, BlockedInputsKeepTheirLayout) {
  Runner r;
  const Shape s{1, 20, 3, 2};
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::cos(static_cast<float>(i)) * 4.0f;
  Tensor x = Tensor::from_vector(v, s);
  dnnl::memory::desc blk(to_dims(s), dnnl::memory::data_type::f32,
                         dnnl::memory::format_tag::nChw16c);
  Tensor xb = reorder_to(x, blk, DType::kF32, r.env);
  for (const char* op : {"Tanh", "Relu", "HardSigmoid", "Erf", "Exp", "Selu"}) {
    Tensor out = r.run(op, 13, {xb});
    Tensor want = r.run(op, 13, {x});
    std::vector<float> got = values<float>(to_plain(out, r.env));
    std::vector<double> w;
    for (float f : values<float>(want)) w.push_back(f);
    expect_close(got, w);
  }
  EXPECT_FALSE(r.run("Tanh", 13, {xb}).is_plain());
  EXPECT_FALSE(r.run("Erf", 13, {xb}).is_plain());
  // Clip bounds excluding 0 would corrupt the zero padding: computed plain.
  auto lo = Tensor::from_vector<float>({1}, {}), hi = Tensor::from_vector<float>({2}, {});
  Tensor clipped = r.run("Clip", 13, {xb, lo, hi});
  EXPECT_TRUE(clipped.is_plain());
  std::vector<double> w;
  for (float f : v) w.push_back(std::min(std::max(f, 1.0f), 2.0f));
  expect_close(values<float>(clipped), w);
}

TEST(Unary, Bf16InputRoundsToNearestEvenOrYieldsF32) {
  TORQ_REQUIRE_NATIVE_BF16();
  Runner r;
  Tensor x(DType::kBF16, {3});
  const float in[3] = {-1.0f, 0.5f, 2.0f};
  for (int i = 0; i < 3; ++i) x.bf16()[i] = f32_to_bf16(in[i], Rounding::kNearestEven);
  Tensor out = r.run("Sigmoid", 13, {x});
  ASSERT_EQ(out.dtype(), DType::kBF16);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(out.bf16()[i],
              f32_to_bf16(1.0f / (1.0f + std::exp(-in[i])), Rounding::kNearestEven));
  r.rounding = Rounding::kTruncate;
  Tensor f = r.run("Sigmoid", 13, {x});
  ASSERT_EQ(f.dtype(), DType::kF32);
  EXPECT_NEAR(f.data<float>()[2], 1.0f / (1.0f + std::exp(-2.0f)), 1e-6);
}

TEST(Unary, ClipAttributesInputsAndIntegers) {
  Runner r;
  auto x = Tensor::from_vector<float>({-3, -0.25f, 0.75f, 3, kNaN}, {5});
  auto clip6 = make_node("Clip", 1);
  add_float(clip6, "min", -0.5f);
  add_float(clip6, "max", 0.5f);
  expect_close(values<float>(r.run(clip6, 6, {x})), {-0.5, -0.25, 0.5, 0.5, NAN});
  auto lo = Tensor::from_vector<float>({-1}, {});
  expect_close(values<float>(r.run("Clip", 13, {x, lo, Tensor()})), {-1, -0.25, 0.75, 3, NAN});
  auto hi = Tensor::from_vector<float>({-2}, {});
  // min > max gives max everywhere (numpy clip).
  expect_close(values<float>(r.run("Clip", 13, {x, lo, hi})), {-2, -2, -2, -2, NAN});
  auto xi = Tensor::from_vector<int8_t>({-100, 1, 100}, {3});
  auto imin = Tensor::from_vector<int8_t>({0}, {});
  EXPECT_EQ(values<int8_t>(r.run("Clip", 13, {xi, imin})), (std::vector<int8_t>{0, 1, 100}));
  EXPECT_EQ(values<int8_t>(r.run("Clip", 13, {xi})), (std::vector<int8_t>{-100, 1, 100}));
}

TEST(Unary, NotNegatesBooleans) {
  Runner r;
  auto x = Tensor::from_vector<bool>({true, false}, {2});
  EXPECT_EQ(values<bool>(r.run("Not", 1, {x})), (std::vector<bool>{false, true}));
}

}  // namespace
}  // namespace torq::engine

namespace torq::engine {
namespace {

// Float Erf runs on libmvec's vector erff: over a dense sweep of [-6, 6],
// the special values and a length that leaves a partial vector (and, large
// enough, a parallel split), it stays within 4 ulp of double-precision erf;
// bf16 inputs give erf of their value rounded to bf16 (or kept f32 when the
// session truncates).
TEST(Unary, ErfVectorPathMatchesErfToAFewUlp) {
  test::KernelRunner r(register_unary_kernels);
  std::vector<float> xs;
  for (int i = 0; i < 120001; ++i) xs.push_back(-6.f + 12.f * static_cast<float>(i) / 120000.f);
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 1e-45f, 0.5f, 3.9f, 10.f, -10.f, INFINITY, -INFINITY})
    xs.push_back(v);
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  const auto got = test::values<float>(r.run("Erf", 13, {test::vec(xs)}));
  ASSERT_EQ(got.size(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (std::isnan(xs[i])) {
      EXPECT_TRUE(std::isnan(got[i]));
      continue;
    }
    const double want = std::erf(static_cast<double>(xs[i]));
    const double ulp = std::nextafter(static_cast<float>(std::fabs(want)), INFINITY) - std::fabs(static_cast<float>(want));
    ASSERT_LE(std::fabs(got[i] - want), 4 * std::max(ulp, 1e-45)) << "erf(" << xs[i] << ")";
    ASSERT_EQ(std::signbit(got[i]), std::signbit(xs[i])) << "erf(" << xs[i] << ")";
  }
  // bf16: the value of erf at each bf16 input, rounded to nearest even.
  std::vector<bf16_t> xb;
  for (size_t i = 0; i < 40000; ++i) xb.push_back(f32_to_bf16(xs[i * 3], Rounding::kNearestEven));
  Tensor tb(DType::kBF16, {static_cast<int64_t>(xb.size())});
  std::copy(xb.begin(), xb.end(), tb.bf16());
  const Tensor gbt = r.run("Erf", 13, {tb});
  ASSERT_EQ(gbt.dtype(), DType::kBF16);
  const std::vector<bf16_t> gb(gbt.bf16(), gbt.bf16() + gbt.numel());
  r.rounding = Rounding::kTruncate;
  const Tensor gf = r.run("Erf", 13, {tb});
  ASSERT_EQ(gf.dtype(), DType::kF32);
  const auto gfv = test::values<float>(gf);
  for (size_t i = 0; i < xb.size(); ++i) {
    const double want = std::erf(static_cast<double>(bf16_to_f32(xb[i])));
    ASSERT_NEAR(bf16_to_f32(gb[i]), want, std::fabs(want) * 0.0079 + 1e-30) << i;
    ASSERT_NEAR(gfv[i], want, std::fabs(want) * 1e-6 + 1e-30) << i;
  }
}

}  // namespace
}  // namespace torq::engine
