// Executor profiles on quantized models: the `int:` block of an op rule
// (strict YAML), and QDQ layers and QOperator nodes judged in sessions under
// the real configs/targets profiles as the integer kernels they are.
#include <gtest/gtest.h>

#include "pipeline/base/error.h"
#include "tests/unit/quant_graphs.h"
#include "worker/engine/kernel.h"
#include "worker/engine/profile.h"
#include "worker/engine/quant_ops.h"
#include "worker/engine/session.h"

using namespace torq::engine;
using namespace torq::engine::test;

namespace {

const char* kProfile = R"(name: p
cost: {clock_mhz: 100, slices: 1, macs_per_cycle_per_slice: 10, eltwise_per_cycle: 4,
       dma_bytes_per_cycle: 8, dispatch_overhead_cycles: 100}
ops:
  Conv:
    dtypes: [bf16, i8]
    min_spatial: 2
    max_kernel: 7
    note: float
    int:
      min_spatial: null
      max_strided_input_elements: 1000
      note: integer
)";

std::string parse_error(const std::string& text) {
  try {
    ExecutorProfile::parse(text, "p.yaml");
  } catch (const EngineError& e) {
    return e.what();
  }
  return "";
}

onnx::NodeProto node(const std::string& op, int inputs, int64_t stride = 1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name("n");
  for (int i = 0; i < inputs; ++i) n.add_input("in" + std::to_string(i));
  n.add_output("y");
  if (op.find("Conv") != std::string::npos) torq::engine::test::add_ints(n, "strides", {stride, stride});
  return n;
}

std::string reason(const ExecutorProfile& p, const onnx::NodeProto& proto, const std::vector<const Tensor*>& in,
                   const QuantView* q = nullptr) {
  try {
    p.check(NodeInfo(proto, 13), in, q);
  } catch (const EngineError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    return e.reason();
  }
  return "";
}

// Why `profile` refuses the model (a run on seeded inputs); "" when it runs.
std::string refusal(const onnx::ModelProto& m, const std::string& profile, Numerics numerics = Numerics::kAsModel) {
  SessionOptions so;
  so.numerics = numerics;
  so.profile = std::make_shared<ExecutorProfile>(ExecutorProfile::resolve(profile));
  auto s = Session::from_proto(m, so);
  try {
    s->run(s->random_inputs(1));
  } catch (const EngineError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
    return e.reason();
  }
  return "";
}

const ConvSpec kConv{{1, 8, 8, 8}, {8, 8, 3, 3}, 1, 1, 1};
const ConvSpec kDepthwise{{1, 8, 8, 8}, {8, 1, 3, 3}, 8, 1, 1};
const ConvSpec kSqueezeExcite{{1, 8, 1, 1}, {4, 8, 1, 1}};  // a Conv on a 1x1 map

}  // namespace

TEST(ProfileIntRules, IntBlockOverridesOnlyTheConstraintsItNames) {
  const ExecutorProfile p = ExecutorProfile::parse(kProfile, "p.yaml");
  const OpRule& conv = *p.rule("Conv");
  EXPECT_EQ(conv.min_spatial, 2);
  EXPECT_FALSE(conv.max_strided_input_elements);
  ASSERT_NE(conv.int_rule, nullptr);
  EXPECT_FALSE(conv.int_rule->min_spatial);                 // null removes it
  EXPECT_EQ(conv.int_rule->max_strided_input_elements, 1000);
  EXPECT_EQ(conv.int_rule->max_kernel, 7);                  // inherited
  EXPECT_EQ(conv.int_rule->dtypes, conv.dtypes);
  EXPECT_EQ(conv.int_rule->note, "integer");
  EXPECT_EQ(conv.int_rule->int_rule, nullptr);
}

TEST(ProfileIntRules, IntBlockIsValidatedStrictly) {
  std::string typo = kProfile;
  typo.replace(typo.find("      min_spatial: null"), 23, "      min_spatail: null");
  EXPECT_EQ(parse_error(typo).rfind("p.yaml:11:7: unknown key 'min_spatail' in int: rule for op 'Conv' (did you mean "
                                    "'min_spatial'?)",
                                    0),
            0u)
      << parse_error(typo);
  // dtypes belong to the rule, not to its integer constraints.
  std::string dtypes = kProfile;
  dtypes.replace(dtypes.find("      note: integer"), 19, "      dtypes: [i8]");
  EXPECT_NE(parse_error(dtypes).find("p.yaml:13:7: unknown key 'dtypes' in int: rule for op 'Conv'"), std::string::npos)
      << parse_error(dtypes);
  std::string bad = kProfile;
  bad.replace(bad.find("1000"), 4, "lots");
  EXPECT_NE(parse_error(bad).find("p.yaml:12:35: max_strided_input_elements must be an integer"), std::string::npos)
      << parse_error(bad);
}

TEST(ProfileIntRules, QOperatorOpsAreJudgedByTheirFloatOpsRule) {
  std::string text = kProfile;
  text += "  QLinearConv: {}\n";
  EXPECT_NE(parse_error(text).find("p.yaml:14:3: QLinearConv is judged by the rule of Conv"), std::string::npos)
      << parse_error(text);
}

TEST(ProfileIntRules, Int8MacRateIsOptionalAndPositive) {
  EXPECT_EQ(ExecutorProfile::parse(kProfile, "p.yaml").cost().int8_macs_per_cycle_per_slice, 0);
  std::string text = kProfile;
  text.replace(text.find("slices: 1,"), 10, "slices: 1, int8_macs_per_cycle_per_slice: 0,");
  EXPECT_NE(parse_error(text).find("cost.int8_macs_per_cycle_per_slice must be a number in (0, 1e+09], got '0'"), std::string::npos)
      << parse_error(text);
  EXPECT_EQ(ExecutorProfile::resolve("nss").cost().int8_macs_per_cycle_per_slice, 256);
}

TEST(QOperatorForms, FloatOpInputsAndScalesFollowTheOperatorSpecs) {
  using V = std::vector<size_t>;
  auto form = [](const char* op, size_t n) { return *qoperator_form(op, n); };
  EXPECT_EQ(form("QLinearConv", 9).float_op, "Conv");
  EXPECT_EQ(form("QLinearConv", 9).inputs, (V{0, 3, 8}));  // x, w, B
  EXPECT_EQ(form("QLinearConv", 8).inputs, (V{0, 3}));     // no bias
  EXPECT_EQ(form("ConvInteger", 4).inputs, (V{0, 1}));
  EXPECT_EQ(form("QLinearMatMul", 8).float_op, "MatMul");
  EXPECT_EQ(form("QLinearMatMul", 8).inputs, (V{0, 3}));
  EXPECT_EQ(form("MatMulInteger", 4).inputs, (V{0, 1}));
  EXPECT_EQ(form("QLinearMul", 8).float_op, "Mul");
  EXPECT_EQ(form("QLinearMul", 8).inputs, (V{0, 3}));
  EXPECT_EQ(form("QLinearAveragePool", 5).float_op, "AveragePool");
  EXPECT_EQ(form("QLinearGlobalAveragePool", 5).float_op, "GlobalAveragePool");
  EXPECT_EQ(form("QLinearConcat", 8).float_op, "Concat");
  EXPECT_EQ(form("QLinearConcat", 8).inputs, (V{2, 5}));  // Y_scale, Y_zp, then (X, scale, zp) x 2
  EXPECT_FALSE(qoperator_form("Conv", 3));
  EXPECT_FALSE(qoperator_form("QuantizeLinear", 3));
  EXPECT_EQ(scale_inputs("QuantizeLinear", 3), (V{1}));
  EXPECT_EQ(scale_inputs("DequantizeLinear", 2), (V{1}));
  EXPECT_EQ(scale_inputs("QLinearConv", 9), (V{1, 4, 6}));
  EXPECT_EQ(scale_inputs("QLinearSigmoid", 5), (V{1, 3}));
  EXPECT_EQ(scale_inputs("QLinearConcat", 8), (V{0, 3, 6}));
  EXPECT_EQ(scale_inputs("MatMulInteger", 4), V{});
  EXPECT_EQ(scale_inputs("Resize", 3), V{});
}

TEST(ProfileJudge, IntegerDataMeetTheIntConstraints) {
  const ExecutorProfile p = ExecutorProfile::parse(kProfile, "p.yaml");
  Tensor x8(DType::kI8, {1, 8, 1, 1}), w8(DType::kI8, {4, 8, 1, 1});
  Tensor xb(DType::kBF16, {1, 8, 1, 1}), wb(DType::kBF16, {4, 8, 1, 1});
  EXPECT_EQ(reason(p, node("Conv", 2), {&x8, &w8}), "");
  EXPECT_EQ(reason(p, node("Conv", 2), {&xb, &wb}),
            "Conv on a spatial extent of 1 is below the p minimum of 2 (float)");
  Tensor big(DType::kI8, {1, 8, 20, 20}), w3(DType::kI8, {8, 8, 3, 3});
  EXPECT_EQ(reason(p, node("Conv", 2, 2), {&big, &w3}),
            "i8 Conv input of 3200 elements for a stride > 1 exceeds the p limit of 1000 (integer)");
  EXPECT_EQ(reason(p, node("Conv", 2, 1), {&big, &w3}), "");
}

TEST(ProfileJudge, QOperatorNodesAreJudgedAsTheirFloatOpOnItsInputs) {
  const ExecutorProfile p = ExecutorProfile::parse(kProfile, "p.yaml");
  Tensor x8(DType::kI8, {1, 8, 1, 1}), xu8(DType::kU8, {1, 8, 1, 1}), w8(DType::kI8, {4, 8, 1, 1});
  Tensor scale(DType::kF32, {}), zp8(DType::kI8, {}), zpu8(DType::kU8, {}), bias(DType::kI32, {4});
  EXPECT_EQ(reason(p, node("QLinearConv", 9), {&x8, &scale, &zp8, &w8, &scale, &zp8, &scale, &zp8, &bias}), "");
  EXPECT_EQ(reason(p, node("QLinearConv", 9), {&xu8, &scale, &zpu8, &w8, &scale, &zp8, &scale, &zpu8, &bias}),
            "u8 Conv (QLinearConv) not supported on p (supports bf16, i8): float");
  EXPECT_EQ(reason(p, node("QLinearAdd", 8), {&x8, &scale, &zp8, &x8, &scale, &zp8, &scale, &zp8}),
            "i8 Add (QLinearAdd) is not supported on p");
}

TEST(ProfileJudge, AQuantViewMakesDequantizedInputsDataButNotTheBias) {
  const ExecutorProfile p = ExecutorProfile::parse(kProfile, "p.yaml");
  Tensor x8(DType::kI8, {1, 8, 4, 4}), wu8(DType::kU8, {4, 8, 1, 1}), w8(DType::kI8, {4, 8, 1, 1});
  Tensor bias(DType::kI32, {4});
  QuantView q;
  q.dequantized = {true, true, true};
  EXPECT_EQ(reason(p, node("Conv", 3), {&x8, &wu8, &bias}), "");  // a plain integer input 1 is not data
  EXPECT_EQ(reason(p, node("Conv", 3), {&x8, &wu8, &bias}, &q),
            "u8 Conv not supported on p (supports bf16, i8): float");
  EXPECT_EQ(reason(p, node("Conv", 3), {&x8, &w8, &bias}, &q), "");  // the int32 bias is the accumulator's
  Tensor float_bias(DType::kF32, {4});  // a bias left in float is added in the accumulator too
  EXPECT_EQ(reason(p, node("Conv", 3), {&x8, &w8, &float_bias}),
            "f32 Conv not supported on p (supports bf16, i8): float");
  q.dequantized = {true, true, false};
  EXPECT_EQ(reason(p, node("Conv", 3), {&x8, &w8, &float_bias}, &q), "");
}

TEST(ProfileJudge, IntegerMacsRunAtTheInt8RateAndRequantizedOutputsCountTheirBytes) {
  std::string text = kProfile;
  text.replace(text.find("slices: 1,"), 10, "slices: 1, int8_macs_per_cycle_per_slice: 40,");
  const ExecutorProfile p = ExecutorProfile::parse(text, "p.yaml");
  // 1x8x8x8 input, 16x8x3x3 weights, output 1x16x8x8: MACs = 1024 * 72.
  Tensor x8(DType::kI8, {1, 8, 8, 8}), w8(DType::kI8, {16, 8, 3, 3});
  Tensor xf(DType::kF32, {1, 8, 8, 8}), wf(DType::kF32, {16, 8, 3, 3});
  const std::vector<Tensor> out{Tensor(DType::kF32, {1, 16, 8, 8})};
  onnx::NodeProto proto = node("Conv", 2);
  const NodeInfo info(proto, 13);
  QuantView q;
  q.dequantized = {true, true};
  q.outputs = {DType::kI8};
  const LayerCost ci = p.cost_of(info, {&x8, &w8}, out, &q);
  EXPECT_TRUE(ci.integer_macs);
  EXPECT_EQ(ci.bytes, 512u + 1152u + 1024u);      // the int8 output a fused Q writes
  EXPECT_EQ(ci.cycles, 100u + 1843u);              // 73728 / 40
  const LayerCost cf = p.cost_of(info, {&xf, &wf}, out);
  EXPECT_FALSE(cf.integer_macs);
  EXPECT_EQ(cf.bytes, (512u + 1152u + 1024u) * 4);
  EXPECT_EQ(cf.cycles, 100u + 7373u);              // 73728 / 10
}

// QDQ layers: the Conv reads int8 (the DQs' inputs), not the fp32 they
// write, and the Q/DQ nodes are part of the kernel, not ops of their own.
TEST(ProfileJudge, AQuantizedClipsFloatScalarBoundsAreParametersNotData) {
  // Opset >= 11 Clip: min and max are fp32 scalar inputs no DQ wrote; the
  // kernel clamps in the integer domain, so they are not fp32 data.
  const ExecutorProfile nss = ExecutorProfile::resolve("nss");
  Tensor x8(DType::kI8, {1, 8, 4, 4}), lo(DType::kF32, {}), hi(DType::kF32, {});
  QuantView q;
  q.dequantized = {true, false, false};
  EXPECT_EQ(reason(nss, node("Clip", 3), {&x8, &lo, &hi}, &q), "");
  // Outside a quantized kernel they are fp32 data, which nss has no path for.
  Tensor xf(DType::kBF16, {1, 8, 4, 4});
  EXPECT_EQ(reason(nss, node("Clip", 3), {&xf, &lo, &hi}), "FP32 not supported on nss; use --auto-convert-bf16");
  // A float tensor no DQ wrote stays data even in a quantized kernel.
  Tensor other(DType::kF32, {1, 8, 4, 4});
  q.dequantized = {true, false};
  EXPECT_EQ(reason(nss, node("Add", 2), {&x8, &other}, &q), "FP32 not supported on nss; use --auto-convert-bf16");
}

TEST(QdqOnNss, Int8ConvAndDepthwiseConvRunInFp32AndBf16Numerics) {
  for (Numerics num : {Numerics::kAsModel, Numerics::kBF16}) {
    EXPECT_EQ(refusal(qdq_conv(kConv), "nss", num), "");
    EXPECT_EQ(refusal(qdq_conv(kDepthwise), "nss", num), "");
  }
}

TEST(QdqOnNss, ChipDifferencesBetweenInt8AndBf16Rules) {
  // A Conv on a 1x1 feature map (the squeeze-excitation Convs): fails in
  // bf16 on the chip, runs in int8.
  EXPECT_EQ(refusal(qdq_conv(kSqueezeExcite), "nss"), "");
  EXPECT_NE(refusal(float_conv(kSqueezeExcite), "nss", Numerics::kBF16)
                .find("Conv on a spatial extent of 1 is below the nss minimum of 2"),
            std::string::npos);
  // A large stride-2 depthwise Conv (blocks.1.0 / blocks.2.0 conv_dw):
  // fails in int8, runs in bf16; at stride 1 it runs in int8.
  ConvSpec big{{1, 8, 200, 200}, {8, 1, 3, 3}, 8, 2, 1};
  EXPECT_EQ(refusal(qdq_conv(big), "nss"),
            "i8 Conv input of 320000 elements for a stride > 1 exceeds the nss limit of 262144 (NSS Conv2D (i8, i16 "
            "x i8) / DepthwiseConv2D (i8): 2-D, any feature map, kernel <= 7, a stride-2 input of at most 262144 "
            "elements)");
  EXPECT_EQ(refusal(float_conv(big), "nss", Numerics::kBF16), "");
  big.stride = 1;
  EXPECT_EQ(refusal(qdq_conv(big), "nss"), "");
}

TEST(QdqOnNss, IntegerKernelsOfTheManualRunOthersAreRefusedByName) {
  auto pool = [](onnx::NodeProto& n) { add_ints(n, "kernel_shape", {3, 3}); };
  auto fc = [](onnx::NodeProto& n) { add_int(n, "transB", 1); };
  EXPECT_EQ(refusal(qdq_op("MaxPool", {{1, 8, 8, 8}}, pool), "nss"), "");
  EXPECT_EQ(refusal(qdq_op("Sigmoid", {{1, 8, 8, 8}}), "nss"), "");
  EXPECT_EQ(refusal(qdq_op("Add", {{1, 8, 8, 8}, {1, 8, 8, 8}}), "nss"), "");
  EXPECT_EQ(refusal(qdq_op("Gemm", {{1, 16}, {8, 16}}, fc), "nss"), "");
  EXPECT_EQ(refusal(qdq_op("Softmax", {{1, 8}}), "nss"), "i8 Softmax is not supported on nss");
  EXPECT_EQ(refusal(qdq_op("Div", {{1, 8}, {1, 8}}), "nss"),
            "i8 Div not supported on nss (supports bf16): composite kernel");
  ConvSpec u8 = kConv;
  u8.x_type = kU8;
  EXPECT_EQ(refusal(qdq_conv(u8), "nss").rfind("u8 Conv not supported on nss (supports bf16, i8, i16)", 0), 0u);
}

TEST(QdqOnCssAndHost, QuantizedLayersRunAsIntegerCode) {
  auto pool = [](onnx::NodeProto& n) { add_ints(n, "kernel_shape", {3, 3}); };
  for (const char* p : {"css", "host"}) {
    EXPECT_EQ(refusal(qdq_conv(kConv), p), "") << p;
    EXPECT_EQ(refusal(qdq_conv(kDepthwise), p), "") << p;
    EXPECT_EQ(refusal(qdq_op("MaxPool", {{1, 8, 8, 8}}, pool), p), "") << p;
    EXPECT_EQ(refusal(qdq_op("Sigmoid", {{1, 8, 8, 8}}), p), "") << p;
    EXPECT_EQ(refusal(qdq_op("Add", {{1, 8, 8, 8}, {1, 8, 8, 8}}), p), "") << p;
  }
}

TEST(StandaloneQdq, IsAnOpLikeAnyOther) {
  EXPECT_EQ(refusal(standalone_q(), "nss"), "QuantizeLinear is not supported on nss");
  EXPECT_EQ(refusal(standalone_q(), "css"), "");
  EXPECT_EQ(refusal(standalone_q(), "host"), "");
}

TEST(QOperatorOnNss, JudgedAsTheFloatOpWithIntegerInputs) {
  EXPECT_EQ(refusal(qlinear_conv(kConv), "nss"), "");
  EXPECT_EQ(refusal(qlinear_conv(kDepthwise), "nss"), "");
  EXPECT_EQ(refusal(qlinear_conv(kSqueezeExcite), "nss"), "");  // the int8 rule: any feature map
  ConvSpec u8 = kConv;
  u8.x_type = kU8;
  EXPECT_EQ(
      refusal(qlinear_conv(u8), "nss").rfind("u8 Conv (QLinearConv) not supported on nss (supports bf16, i8, i16)", 0),
      0u);
  ConvSpec grouped{{1, 8, 8, 8}, {8, 4, 3, 3}, 2, 1, 1};
  EXPECT_EQ(refusal(qlinear_conv(grouped), "nss").rfind("grouped i8 Conv (QLinearConv) not supported on nss", 0), 0u);
  EXPECT_EQ(refusal(qlinear_contrib("QLinearAdd", 2, {1, 8, 4, 4}), "nss"), "");
  EXPECT_EQ(refusal(qlinear_contrib("QLinearSigmoid", 1, {1, 8, 4, 4}), "nss"), "");
  EXPECT_EQ(refusal(qlinear_contrib("QLinearLeakyRelu", 1, {1, 8, 4, 4}), "nss"),
            "i8 LeakyRelu (QLinearLeakyRelu) is not supported on nss");
}

TEST(QOperatorOnNss, TheQAndDqAroundQOperatorNodesArePartOfTheirKernels) {
  EXPECT_EQ(refusal(qoperator_boundary(kConv), "nss"), "");
  EXPECT_EQ(refusal(matmul_integer_gemm(), "nss"), "");
}

TEST(QOperatorOnCssAndHost, RunAsIntegerCode) {
  for (const char* p : {"css", "host"}) {
    EXPECT_EQ(refusal(qlinear_conv(kConv), p), "") << p;
    EXPECT_EQ(refusal(qlinear_contrib("QLinearAdd", 2, {1, 8, 4, 4}), p), "") << p;
    EXPECT_EQ(refusal(qlinear_contrib("QLinearLeakyRelu", 1, {1, 8, 4, 4}), p), "") << p;
    EXPECT_EQ(refusal(qoperator_boundary(kConv), p), "") << p;
    EXPECT_EQ(refusal(matmul_integer_gemm(), p), "") << p;
  }
}
