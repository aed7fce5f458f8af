// Unit tests of the binary element-wise kernels (binary*.cc): broadcasting,
// integer semantics, legacy broadcast attributes, the oneDNN blocked path,
// comparisons/logic, Where, Pow, Mod, PRelu, BitShift and unsupported cases.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/kernel_harness.h"
#include "worker/engine/cpu_isa.h"
#include "worker/engine/dnnl_util.h"
#include "pipeline/base/error.h"
#include "worker/engine/kernel.h"

namespace torq::engine {
namespace {

using namespace test;

struct Runner : KernelRunner {
  Runner() : KernelRunner(register_binary_kernels) {}
};

TEST(Binary, AddBroadcastsRowVectorOverMatrix) {
  Runner r;
  auto a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = Tensor::from_vector<float>({10, 20, 30}, {3});
  Tensor out = r.run("Add", 14, {a, b});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(Binary, MultidirectionalBroadcastOfColumnAndRow) {
  Runner r;
  auto a = Tensor::from_vector<float>({1, 2}, {2, 1});
  auto b = Tensor::from_vector<float>({10, 20, 30}, {1, 3});
  Tensor out = r.run("Sub", 14, {a, b});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{-9, -19, -29, -8, -18, -28}));
}

TEST(Binary, IntegerArithmeticWrapsAndDivisionTruncates) {
  Runner r;
  auto a = Tensor::from_vector<int32_t>({std::numeric_limits<int32_t>::max(), -7, 7,
                                         std::numeric_limits<int32_t>::min()}, {4});
  auto b = Tensor::from_vector<int32_t>({1, 2, -2, -1}, {4});
  EXPECT_EQ(values<int32_t>(r.run("Add", 14, {a, b}))[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(values<int32_t>(r.run("Div", 14, {a, b})),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::max(), -3, -3,
                                  std::numeric_limits<int32_t>::min()}));
  auto u = Tensor::from_vector<uint8_t>({200, 3}, {2});
  auto v = Tensor::from_vector<uint8_t>({100, 5}, {2});
  EXPECT_EQ(values<uint8_t>(r.run("Add", 14, {u, v})), (std::vector<uint8_t>{44, 8}));
  EXPECT_EQ(values<uint8_t>(r.run("Sub", 14, {v, u})), (std::vector<uint8_t>{156, 2}));
}

TEST(Binary, IntegerDivisionByZeroIsAnInputError) {
  Runner r;
  auto a = Tensor::from_vector<int64_t>({1, 2}, {2});
  auto b = Tensor::from_vector<int64_t>({1, 0}, {2});
  EXPECT_EQ(error_kind_of([&] { r.run("Div", 14, {a, b}); }), ErrorKind::kInvalidInput);
}

TEST(Binary, LegacyBroadcastAlignsBAtAxis) {
  Runner r;
  auto node = make_node("Add", 2);
  add_int(node, "broadcast", 1);
  add_int(node, "axis", 0);
  auto a = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = Tensor::from_vector<double>({100, 200}, {2});
  Tensor out = r.run(node, 6, {a, b});
  EXPECT_EQ(values<double>(out), (std::vector<double>{101, 102, 103, 204, 205, 206}));
  // Without broadcast=1 the shapes must match.
  EXPECT_EQ(error_kind_of([&] { r.run("Add", 6, {a, b}); }), ErrorKind::kInvalidModel);
}

TEST(Binary, ConsumedInputsOfOpset1IsUnsupported) {
  Runner r;
  auto node = make_node("Add", 2);
  add_int(node, "consumed_inputs", 0);
  auto a = Tensor::from_vector<float>({1}, {1});
  EXPECT_EQ(error_kind_of([&] { r.run(node, 1, {a, a}); }), ErrorKind::kUnsupported);
}

TEST(Binary, AddOfBoolIsUnsupported) {
  Runner r;
  auto a = Tensor::from_vector<bool>({true}, {1});
  EXPECT_EQ(error_kind_of([&] { r.run("Add", 14, {a, a}); }), ErrorKind::kUnsupported);
}

// Blocked (nChw16c) operands run on oneDNN; the result must equal the plain
// computation and keep the blocked layout.
TEST(Binary, BlockedMulByPerChannelScaleMatchesPlain) {
  Runner r;
  const Shape xs{2, 24, 5, 3}, ss{2, 24, 1, 1};
  std::vector<float> xv(static_cast<size_t>(shape_numel(xs))), sv(48);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(static_cast<float>(i)) * 3.0f;
  for (size_t i = 0; i < sv.size(); ++i) sv[i] = 0.5f + static_cast<float>(i) * 0.01f;
  Tensor x = Tensor::from_vector(xv, xs), s = Tensor::from_vector(sv, ss);
  dnnl::memory::desc blk(to_dims(xs), dnnl::memory::data_type::f32,
                         dnnl::memory::format_tag::nChw16c);
  Tensor xb = reorder_to(x, blk, DType::kF32, r.env);
  Tensor out = r.run("Mul", 14, {s, xb});  // commutative: the blocked operand becomes src0
  // (oneDNN's AVX-512 binary keeps nChw16c; without AVX-512 it may not.)
  if (simd_allowed(Simd::kAvx512)) {
    EXPECT_FALSE(out.is_plain());
  }
  Tensor plain = to_plain(out, r.env);
  Tensor want = r.run("Mul", 14, {x, s});
  EXPECT_EQ(values<float>(plain), values<float>(want));

  Tensor sum = to_plain(r.run("Add", 14, {xb, xb}), r.env);
  Tensor sum_want = r.run("Add", 14, {x, x});
  EXPECT_EQ(values<float>(sum), values<float>(sum_want));

  // Non-commutative with the broadcast operand first falls back to plain.
  Tensor d = r.run("Div", 14, {s, xb});
  EXPECT_TRUE(d.is_plain());
  EXPECT_EQ(values<float>(d), values<float>(r.run("Div", 14, {s, x})));
}

// bf16 blocked operands: computed in bf16 on oneDNN under round-to-nearest
// (one rounding of the fp32 sum), in f32 under truncation.
TEST(Binary, BlockedBf16AddRoundsOnceOrYieldsF32) {
  TORQ_REQUIRE_NATIVE_BF16();
  Runner r;
  const Shape s{1, 16, 2, 2};
  Tensor x(DType::kBF16, s), y(DType::kBF16, s);
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.bf16()[i] = f32_to_bf16(1.0f + static_cast<float>(i) / 128.0f, Rounding::kNearestEven);
    y.bf16()[i] = f32_to_bf16(static_cast<float>(i) / 3.0f, Rounding::kNearestEven);
  }
  dnnl::memory::desc blk(to_dims(s), dnnl::memory::data_type::bf16,
                         dnnl::memory::format_tag::nChw16c);
  Tensor xb = reorder_to(x, blk, DType::kBF16, r.env), yb = reorder_to(y, blk, DType::kBF16, r.env);
  Tensor out = to_plain(r.run("Add", 14, {xb, yb}), r.env);
  ASSERT_EQ(out.dtype(), DType::kBF16);
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_EQ(out.bf16()[i], f32_to_bf16(bf16_to_f32(x.bf16()[i]) + bf16_to_f32(y.bf16()[i]),
                                         Rounding::kNearestEven));
  r.rounding = Rounding::kTruncate;
  Tensor f = to_plain(r.run("Add", 14, {xb, yb}), r.env);
  ASSERT_EQ(f.dtype(), DType::kF32);
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_EQ(f.data<float>()[i], bf16_to_f32(x.bf16()[i]) + bf16_to_f32(y.bf16()[i]));
}

TEST(Binary, VariadicSumMeanMaxMin) {
  Runner r;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = Tensor::from_vector<float>({1, 2, 3}, {3});
  auto b = Tensor::from_vector<float>({4, nan, 6}, {3});
  auto c = Tensor::from_vector<float>({1}, {1});
  EXPECT_EQ(values<float>(r.run("Sum", 13, {a, c, a})), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(values<float>(r.run("Mean", 13, {a, a, c})), (std::vector<float>{1, 5.0f / 3, 7.0f / 3}));
  auto mx = values<float>(r.run("Max", 13, {a, b, c}));
  EXPECT_EQ(mx[0], 4);
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 6);
  auto mn = Tensor::from_vector<int16_t>({5, -3}, {2});
  EXPECT_EQ(values<int16_t>(r.run("Min", 13, {mn, Tensor::from_vector<int16_t>({0}, {1})})),
            (std::vector<int16_t>{0, -3}));
  EXPECT_EQ(values<float>(r.run("Max", 13, {a})), (std::vector<float>{1, 2, 3}));
}

TEST(Binary, ComparisonsAndLogic) {
  Runner r;
  auto a = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  auto b = Tensor::from_vector<int32_t>({2}, {1});
  EXPECT_EQ(values<bool>(r.run("Equal", 13, {a, b})), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(values<bool>(r.run("Less", 13, {a, b})), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(values<bool>(r.run("GreaterOrEqual", 16, {a, b})),
            (std::vector<bool>{false, true, true}));
  auto p = Tensor::from_vector<bool>({true, true, false, false}, {2, 2});
  auto q = Tensor::from_vector<bool>({true, false}, {2});
  EXPECT_EQ(values<bool>(r.run("Xor", 7, {p, q})), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values<bool>(r.run("And", 7, {p, q})), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(error_kind_of([&] { r.run("Less", 13, {p, p}); }), ErrorKind::kUnsupported);
}

TEST(Binary, WhereBroadcastsAllThreeInputs) {
  Runner r;
  auto c = Tensor::from_vector<bool>({true, false}, {2, 1});
  auto x = Tensor::from_vector<int64_t>({1, 2, 3}, {3});
  auto y = Tensor::from_vector<int64_t>({-1}, {});
  Tensor out = r.run("Where", 16, {c, x, y});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>(out), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
}

TEST(Binary, PowMixesBaseAndExponentTypes) {
  Runner r;
  auto xf = Tensor::from_vector<float>({1, 2, 3}, {3});
  auto yi = Tensor::from_vector<int64_t>({4, 5, 6}, {3});
  EXPECT_EQ(values<float>(r.run("Pow", 15, {xf, yi})), (std::vector<float>{1, 32, 729}));
  auto xi = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  auto yf = Tensor::from_vector<float>({4, 5, 6}, {3});
  EXPECT_EQ(values<int32_t>(r.run("Pow", 15, {xi, yf})), (std::vector<int32_t>{1, 32, 729}));
  auto yi32 = Tensor::from_vector<int32_t>({4, 5, 6}, {3});
  EXPECT_EQ(values<int32_t>(r.run("Pow", 15, {xi, yi32})), (std::vector<int32_t>{1, 32, 729}));
  auto sq = values<float>(r.run("Pow", 15, {xf, Tensor::from_vector<float>({0.5f}, {})}));
  EXPECT_FLOAT_EQ(sq[1], std::sqrt(2.0f));
}

TEST(Binary, ModFollowsDivisorSignUnlessFmod) {
  Runner r;
  auto a = Tensor::from_vector<int8_t>({-4, 7, 5, 4, -7, 8}, {6});
  auto b = Tensor::from_vector<int8_t>({2, -3, 8, -2, 3, 5}, {6});
  EXPECT_EQ(values<int8_t>(r.run("Mod", 13, {a, b})), (std::vector<int8_t>{0, -2, 5, 0, 2, 3}));
  auto node = make_node("Mod", 2);
  add_int(node, "fmod", 1);
  EXPECT_EQ(values<int8_t>(r.run(node, 13, {a, b})), (std::vector<int8_t>{0, 1, 5, 0, -1, 3}));
  auto fa = Tensor::from_vector<float>({-4.3f, 7.2f}, {2});
  auto fb = Tensor::from_vector<float>({2.1f, -3.4f}, {2});
  auto fm = values<float>(r.run(node, 13, {fa, fb}));
  EXPECT_FLOAT_EQ(fm[0], std::fmod(-4.3f, 2.1f));
  EXPECT_FLOAT_EQ(fm[1], std::fmod(7.2f, -3.4f));
  EXPECT_EQ(error_kind_of([&] { r.run("Mod", 13, {fa, fb}); }), ErrorKind::kUnsupported);
}

TEST(Binary, PReluSlopeBroadcastAndLegacyPerChannel) {
  Runner r;
  auto x = Tensor::from_vector<float>({-1, 2, -3, 4, -5, 6}, {1, 3, 2});
  auto s3 = Tensor::from_vector<float>({0.1f, 0.2f, 0.3f}, {3});
  // Opset 6: a 1-D slope of size C is per channel.
  EXPECT_EQ(values<float>(r.run("PRelu", 6, {x, s3})),
            (std::vector<float>{-0.1f, 2, -0.6f, 4, -1.5f, 6}));
  // Opset 16: numpy broadcast against the last axis.
  auto s2 = Tensor::from_vector<float>({0.5f, 0.25f}, {2});
  EXPECT_EQ(values<float>(r.run("PRelu", 16, {x, s2})),
            (std::vector<float>{-0.5f, 2, -1.5f, 4, -2.5f, 6}));
}

TEST(Binary, BitShiftBothDirections) {
  Runner r;
  auto x = Tensor::from_vector<uint8_t>({16, 4, 1}, {3});
  auto s = Tensor::from_vector<uint8_t>({1, 2, 8}, {3});
  auto left = make_node("BitShift", 2);
  add_string(left, "direction", "LEFT");
  auto right = make_node("BitShift", 2);
  add_string(right, "direction", "RIGHT");
  EXPECT_EQ(values<uint8_t>(r.run(left, 11, {x, s})), (std::vector<uint8_t>{32, 16, 0}));
  EXPECT_EQ(values<uint8_t>(r.run(right, 11, {x, s})), (std::vector<uint8_t>{8, 1, 0}));
}

}  // namespace
}  // namespace torq::engine
