// Quantization kernels (worker/engine/kernels/quant*.cc): QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, Round, MatMulInteger,
// QLinearMatMul, ConvInteger and QLinearConv against hand-computed values,
// with ties (x / scale exactly .5 rounds to even), saturation at both ends,
// per-axis parameters, and int8 / uint8 / int16 / uint16 / int32 types.
#include "kernel_harness.h"

namespace torq::engine::test {
namespace {

Tensor f32(const std::vector<float>& v, Shape s = {}) { return vec<float>(v, std::move(s)); }

TEST(QuantizeLinear, TiesRoundToEvenAndZeroPointIsAddedAfter) {
  KernelRunner k;
  // x / 2 = 0.5, 1.5, 2.5, 3.5, -0.5, -2.5 -> 0, 2, 2, 4, -0, -2; + 10.
  Tensor y = k.run("QuantizeLinear", 13, {f32({1, 3, 5, 7, -1, -5}), f32({2}), vec<int8_t>({10})});
  EXPECT_EQ(y.dtype(), DType::kI8);
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{10, 12, 12, 14, 10, 8}));
}

TEST(QuantizeLinear, SaturatesAtBothEndsAndDefaultsToUint8) {
  KernelRunner k;
  EXPECT_EQ(values<int8_t>(k.run("QuantizeLinear", 13, {f32({1000, -1000, 126.5f}), f32({1}), vec<int8_t>({0})})),
            (std::vector<int8_t>{127, -128, 126}));
  Tensor u = k.run(make_node("QuantizeLinear", 2), 13, {f32({1000, -1000, 0.5f, 1.5f}), f32({1})});
  EXPECT_EQ(u.dtype(), DType::kU8);
  EXPECT_EQ(values<uint8_t>(u), (std::vector<uint8_t>{255, 0, 0, 2}));
  EXPECT_EQ(values<uint8_t>(k.run("QuantizeLinear", 13, {f32({-200, 200}), f32({1}), vec<uint8_t>({128})})),
            (std::vector<uint8_t>{0, 255}));
}

TEST(QuantizeLinear, PerAxisScalesAndZeroPoints) {
  KernelRunner k;
  onnx::NodeProto n = make_node("QuantizeLinear", 3);
  add_int(n, "axis", 1);
  // Columns: scale 1, 2, 4; zero point 0, 1, 2.
  Tensor y = k.run(n, 13, {f32({2, 2, 2, 8, -8, 6}, {2, 3}), f32({1, 2, 4}), vec<int8_t>({0, 1, 2})});
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{2, 2, 2, 8, -3, 4}));
  onnx::NodeProto rows = make_node("QuantizeLinear", 3);
  add_int(rows, "axis", -2);
  Tensor r = k.run(rows, 13, {f32({3, 3, 3, 3}, {2, 2}), f32({1, 2}), vec<uint8_t>({0, 100})});
  EXPECT_EQ(values<uint8_t>(r), (std::vector<uint8_t>{3, 3, 102, 102}));  // 1.5 -> 2
}

TEST(QuantizeLinear, SixteenBitOutputsAndInt32Input) {
  KernelRunner k;
  EXPECT_EQ(values<int16_t>(k.run("QuantizeLinear", 21, {f32({40000, -40000, -3.5f}), f32({1}), vec<int16_t>({0})})),
            (std::vector<int16_t>{32767, -32768, -4}));
  onnx::NodeProto n = make_node("QuantizeLinear", 2);
  add_int(n, "output_dtype", onnx::TensorProto::UINT16);
  Tensor u = k.run(n, 21, {f32({70000, 2.5f, -1}), f32({1})});
  EXPECT_EQ(u.dtype(), DType::kU16);
  EXPECT_EQ(values<uint16_t>(u), (std::vector<uint16_t>{65535, 2, 0}));
  // int32 x (opset 10): 5 / 2 = 2.5 -> 2, 7 / 2 = 3.5 -> 4.
  EXPECT_EQ(values<uint8_t>(k.run("QuantizeLinear", 10, {vec<int32_t>({5, 7}), f32({2}), vec<uint8_t>({0})})),
            (std::vector<uint8_t>{2, 4}));
}

TEST(QuantizeLinear, BlockedQuantizationIsUnsupported) {
  KernelRunner k;
  onnx::NodeProto n = make_node("QuantizeLinear", 3);
  add_int(n, "block_size", 2);
  EXPECT_EQ(error_kind_of([&] { k.run(n, 21, {f32({1, 2}), f32({1}), vec<uint8_t>({0})}); }),
            ErrorKind::kUnsupported);
}

TEST(DequantizeLinear, PerTensorPerAxisAndInt32) {
  KernelRunner k;
  EXPECT_EQ(values<float>(k.run("DequantizeLinear", 13, {vec<int8_t>({-128, 0, 127}), f32({0.5f}), vec<int8_t>({-1})})),
            (std::vector<float>{-63.5f, 0.5f, 64.0f}));
  onnx::NodeProto n = make_node("DequantizeLinear", 3);
  add_int(n, "axis", 0);
  EXPECT_EQ(values<float>(k.run(n, 13, {vec<uint8_t>({10, 20, 4, 8}, {2, 2}), f32({1, 0.25f}), vec<uint8_t>({10, 0})})),
            (std::vector<float>{0, 10, 1, 2}));
  EXPECT_EQ(values<float>(k.run(make_node("DequantizeLinear", 2), 10, {vec<int32_t>({100000, -7}), f32({0.5f})})),
            (std::vector<float>{50000.0f, -3.5f}));
  EXPECT_EQ(values<float>(k.run("DequantizeLinear", 21, {vec<uint16_t>({65535, 0}), f32({2}), vec<uint16_t>({1})})),
            (std::vector<float>{131068.0f, -2.0f}));
}

TEST(DequantizeLinear, ZeroPointOfAnotherTypeIsInvalid) {
  KernelRunner k;
  EXPECT_EQ(error_kind_of([&] { k.run("DequantizeLinear", 13, {vec<int8_t>({1}), f32({1}), vec<uint8_t>({0})}); }),
            ErrorKind::kInvalidModel);
}

TEST(DynamicQuantizeLinear, ScaleZeroPointAndValues) {
  KernelRunner k;
  std::vector<Tensor> o = k.run_all(make_node("DynamicQuantizeLinear", 1, 3), 11, {f32({-1, 0, 1, 2})});
  EXPECT_FLOAT_EQ(values<float>(o[1])[0], 3.0f / 255.0f);
  EXPECT_EQ(values<uint8_t>(o[2])[0], 85);
  EXPECT_EQ(values<uint8_t>(o[0]), (std::vector<uint8_t>{0, 85, 170, 255}));
  // All zeros: scale 1, zero point 0 (no division by zero).
  o = k.run_all(make_node("DynamicQuantizeLinear", 1, 3), 11, {f32({0, 0})});
  EXPECT_EQ(values<float>(o[1])[0], 1.0f);
  EXPECT_EQ(values<uint8_t>(o[2])[0], 0);
  EXPECT_EQ(values<uint8_t>(o[0]), (std::vector<uint8_t>{0, 0}));
}

TEST(Round, HalvesGoToEven) {
  KernelRunner k;
  EXPECT_EQ(values<float>(k.run("Round", 11, {f32({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.6f})})),
            (std::vector<float>{0, 2, 2, -0.0f, -2, 2, -3}));
}

TEST(MatMulInteger, ZeroPointsPerRowAndColumn) {
  KernelRunner k;
  // A - 1 = [[0,1,2],[3,4,5]]; B's second column has zero point -1.
  Tensor y = k.run("MatMulInteger", 10,
                   {vec<uint8_t>({1, 2, 3, 4, 5, 6}, {2, 3}), vec<int8_t>({1, -1, 2, 0, -3, 4}, {3, 2}),
                    vec<uint8_t>({1}), vec<int8_t>({0, -1})});
  EXPECT_EQ(y.dtype(), DType::kI32);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{-4, 11, -4, 29}));
  Tensor row = k.run("MatMulInteger", 10,
                     {vec<uint8_t>({1, 2, 3, 4, 5, 6}, {2, 3}), vec<int8_t>({1, 1, 1}, {3, 1}), vec<uint8_t>({1, 4})});
  EXPECT_EQ(values<int32_t>(row), (std::vector<int32_t>{3, 3}));  // (0+1+2), (0+1+2)
  Tensor b = k.run(make_node("MatMulInteger", 2), 10, {vec<int8_t>({1, 2, 3, 4}, {2, 1, 2}), vec<int8_t>({1, 1}, {2, 1})});
  EXPECT_EQ(b.shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(values<int32_t>(b), (std::vector<int32_t>{3, 7}));
}

std::vector<Tensor> qmatmul_inputs(float ys, Tensor yz) {
  // acc = (2, 4) . (3-1, 5-1) = 20; multiplier 0.5 * 1 / ys.
  return {vec<uint8_t>({2, 4}, {1, 2}), f32({0.5f}), vec<uint8_t>({0}), vec<uint8_t>({3, 5}, {2, 1}), f32({1}),
          vec<uint8_t>({1}), f32({ys}), std::move(yz)};
}

TEST(QLinearMatMul, TieRoundsToEvenAndSaturates) {
  KernelRunner k;
  EXPECT_EQ(values<uint8_t>(k.run("QLinearMatMul", 10, qmatmul_inputs(4, vec<uint8_t>({0})))),
            (std::vector<uint8_t>{2}));  // 2.5 -> 2
  // The ONNX reference adds y_zero_point before rounding (unlike QuantizeLinear):
  // 2.5 + 3 = 5.5 -> 6, not rint(2.5) + 3 = 5.
  EXPECT_EQ(values<uint8_t>(k.run("QLinearMatMul", 10, qmatmul_inputs(4, vec<uint8_t>({3})))),
            (std::vector<uint8_t>{6}));
  EXPECT_EQ(values<uint8_t>(k.run("QLinearMatMul", 10, qmatmul_inputs(0.01f, vec<uint8_t>({0})))),
            (std::vector<uint8_t>{255}));
  EXPECT_EQ(values<int8_t>(k.run("QLinearMatMul", 10, qmatmul_inputs(-0.01f, vec<int8_t>({0})))),
            (std::vector<int8_t>{-128}));
}

TEST(QLinearMatMul, PerColumnWeightScales) {
  KernelRunner k;
  // A = [1, 1] (int8), B = [[1, 2], [1, 2]] -> acc [2, 4]; b_scale [1, 0.25].
  Tensor y = k.run("QLinearMatMul", 10,
                   {vec<int8_t>({1, 1}, {1, 2}), f32({1}), vec<int8_t>({0}), vec<int8_t>({1, 2, 1, 2}, {2, 2}),
                    f32({1, 0.25f}), vec<int8_t>({0, 0}), f32({1}), vec<int8_t>({0})});
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{2, 1}));
}

TEST(ConvInteger, PaddingContributesZeroAfterTheZeroPoint) {
  KernelRunner k;
  onnx::NodeProto n = make_node("ConvInteger", 4);
  add_ints(n, "pads", {0, 1, 0, 1});
  // x - 5 = [0, 2], padded [0, 0, 2, 0]; kernel of three ones.
  Tensor y = k.run(n, 10, {vec<uint8_t>({5, 7}, {1, 1, 1, 2}), vec<uint8_t>({1, 1, 1}, {1, 1, 1, 3}),
                           vec<uint8_t>({5}), vec<uint8_t>({0})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 2}));
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{2, 2}));
  onnx::NodeProto g = make_node("ConvInteger", 2);
  add_int(g, "group", 2);
  EXPECT_EQ(values<int32_t>(k.run(g, 10, {vec<int8_t>({3, 4}, {1, 2, 1, 1}), vec<int8_t>({2, 3}, {2, 1, 1, 1})})),
            (std::vector<int32_t>{6, 12}));
}

TEST(QLinearConv, PerChannelScalesBiasTiesAndSaturation) {
  KernelRunner k;
  // x - 10 = [-10, 0, 10, 20]; w = [1, -1] per output channel; w_scale [0.5, 0.25].
  std::vector<Tensor> in{vec<uint8_t>({0, 10, 20, 30}, {1, 1, 2, 2}), f32({1}), vec<uint8_t>({10}),
                         vec<int8_t>({1, -1}, {2, 1, 1, 1}), f32({0.5f, 0.25f}), vec<int8_t>({0, 0}),
                         f32({1}), vec<int8_t>({0})};
  Tensor y = k.run(make_node("QLinearConv", 8), 10, in);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 2}));
  // ch0: [-5, 0, 5, 10]; ch1: [2.5, 0, -2.5, -5] -> [2, 0, -2, -5].
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{-5, 0, 5, 10, 2, 0, -2, -5}));
  in.push_back(vec<int32_t>({1, 0}));  // bias: ch0 acc [-9, 1, 11, 21] * 0.5
  y = k.run(make_node("QLinearConv", 9), 10, in);
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{-4, 0, 6, 10, 2, 0, -2, -5}));
  in[6] = f32({0.01f});
  y = k.run(make_node("QLinearConv", 9), 10, in);
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{-128, 50, 127, 127, 127, 0, -128, -128}));
}

}  // namespace
}  // namespace torq::engine::test
