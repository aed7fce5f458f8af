// Executor profiles: strict YAML validation with file:line:col, the nss
// rules that follow the Torq manual, and the cost model arithmetic.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <tuple>

#include "pipeline/base/error.h"
#include "worker/engine/kernel.h"
#include "worker/engine/profile.h"

using namespace torq::engine;

namespace {

const char* kMinimal = R"(name: test
cost:
  clock_mhz: 100
  slices: 2
  macs_per_cycle_per_slice: 10
  eltwise_per_cycle: 4
  dma_bytes_per_cycle: 8
  dispatch_overhead_cycles: 100
ops:
  Conv: {dtypes: [f32]}
)";

std::string error_of(const std::string& text) {
  try {
    ExecutorProfile::parse(text, "p.yaml");
  } catch (const EngineError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    return e.what();
  }
  return "";
}

onnx::NodeProto conv_node(int64_t group, std::vector<int64_t> strides = {1, 1}) {
  onnx::NodeProto n;
  n.set_op_type("Conv");
  n.set_name("conv0");
  n.add_input("x");
  n.add_input("w");
  n.add_output("y");
  auto* g = n.add_attribute();
  g->set_name("group");
  g->set_type(onnx::AttributeProto::INT);
  g->set_i(group);
  auto* s = n.add_attribute();
  s->set_name("strides");
  s->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : strides) s->add_ints(v);
  return n;
}

std::string unsupported_reason(const ExecutorProfile& p, const onnx::NodeProto& proto,
                               const std::vector<const Tensor*>& in) {
  NodeInfo info(proto, 13);
  try {
    p.check(info, in);
  } catch (const EngineError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    return e.reason();
  }
  return "";
}

}  // namespace

TEST(ProfileYaml, MinimalProfileParses) {
  ExecutorProfile p = ExecutorProfile::parse(kMinimal, "p.yaml");
  EXPECT_EQ(p.name(), "test");
  EXPECT_EQ(p.cost().slices, 2);
  ASSERT_NE(p.rule("Conv"), nullptr);
  EXPECT_EQ(p.rule("Conv")->dtypes.count(DType::kF32), 1u);
}

TEST(ProfileYaml, UnknownKeyHasLocationAndSuggestion) {
  std::string text = kMinimal;
  text.replace(text.find("  slices: 2"), 11, "  slicez: 2");
  EXPECT_EQ(error_of(text).rfind("p.yaml:4:3: unknown key 'slicez' in cost (did you mean 'slices'?)", 0), 0u)
      << error_of(text);
}

TEST(ProfileYaml, DuplicateKeyIsAnError) {
  std::string text = std::string(kMinimal) + "name: again\n";
  EXPECT_EQ(error_of(text), "p.yaml:11:1: duplicate key 'name' in profile");
}

TEST(ProfileYaml, UnknownOpTypeSuggestsTheRegisteredOne) {
  std::string text = kMinimal;
  text.replace(text.find("  Conv:"), 7, "  Cnov:");
  EXPECT_NE(error_of(text).find("p.yaml:10:3: unknown op type 'Cnov' (did you mean 'Conv'?)"), std::string::npos)
      << error_of(text);
}

TEST(ProfileYaml, BadDtypeAndBadEnumAndBadNumber) {
  std::string t1 = kMinimal;
  t1.replace(t1.find("[f32]"), 5, "[fp33]");
  EXPECT_NE(error_of(t1).find("p.yaml:10:19: unknown dtype 'fp33'"), std::string::npos) << error_of(t1);
  std::string t2 = std::string(kMinimal) + "numerics: {float_type: bf61}\n";
  EXPECT_NE(error_of(t2).find("bad value 'bf61' for numerics.float_type (did you mean 'bf16'?)"), std::string::npos)
      << error_of(t2);
  std::string t3 = kMinimal;
  t3.replace(t3.find("clock_mhz: 100"), 14, "clock_mhz: fast");
  EXPECT_NE(error_of(t3).find("p.yaml:3:14: cost.clock_mhz must be a number in (0, 1e+09], got 'fast'"), std::string::npos)
      << error_of(t3);
}

// Every number of a profile is range-checked at load (issue 60): the error
// names the file:line:col, the setting and its range.
TEST(ProfileYaml, EveryNumberIsRangeChecked) {
  const std::string ext = "[1, 2147483647]";
  const std::string count = "[1, 9223372036854775807]";
  // {rule, its bad value, the message after "p.yaml:10:<col of the value>: "}.
  const std::tuple<std::string, std::string, std::string> rules[] = {
      {"min_spatial: -5", "-5", "min_spatial must be an integer in " + ext + ", got -5"},
      {"min_spatial: 0", "0", "min_spatial must be an integer in " + ext + ", got 0"},
      {"max_kernel: 0", "0", "max_kernel must be an integer in " + ext + ", got 0"},
      {"min_kernel: -1", "-1", "min_kernel must be an integer in " + ext + ", got -1"},
      {"max_stride: 0", "0", "max_stride must be an integer in " + ext + ", got 0"},
      {"max_dilation: 0", "0", "max_dilation must be an integer in " + ext + ", got 0"},
      {"max_kernel: 2147483648", "2147483648", "max_kernel must be an integer in " + ext + ", got 2147483648"},
      {"max_rank: -1", "-1", "max_rank must be an integer in [0, 64], got -1"},
      {"max_rank: 65", "65", "max_rank must be an integer in [0, 64], got 65"},
      {"max_input_elements: 0", "0", "max_input_elements must be an integer in " + count + ", got 0"},
      {"max_strided_input_elements: -3", "-3",
       "max_strided_input_elements must be an integer in " + count + ", got -3"},
      {"spatial_ranks: [2, 0]", "0", "spatial rank must be an integer in [1, 64], got 0"},
      {"int: {min_spatial: -5}", "-5", "min_spatial must be an integer in " + ext + ", got -5"},
  };
  for (const auto& [rule, value, want] : rules) {
    std::string t = kMinimal;
    const std::string line = "  Conv: {dtypes: [f32, i8], " + rule + "}";
    t.replace(t.find("  Conv: {dtypes: [f32]}"), 23, line);
    const size_t col = line.find(value, line.find(": ", line.find(rule)) + 1) + 1;
    EXPECT_EQ(error_of(t), "p.yaml:10:" + std::to_string(col) + ": " + want) << rule;
  }
  const std::pair<std::string, std::string> costs[] = {
      {"clock_mhz: 100", "p.yaml:3:14: cost.clock_mhz must be a number in (0, 1e+09], got '0'"},
      {"clock_mhz: 100", "p.yaml:3:14: cost.clock_mhz must be a number in (0, 1e+09], got 'nan'"},
      {"clock_mhz: 100", "p.yaml:3:14: cost.clock_mhz must be a number in (0, 1e+09], got 'inf'"},
      {"slices: 2", "p.yaml:4:11: cost.slices must be an integer in [1, 1048576], got 0"},
      {"macs_per_cycle_per_slice: 10", "p.yaml:5:29: cost.macs_per_cycle_per_slice must be a number in (0, 1e+09], got '-10'"},
      {"eltwise_per_cycle: 4", "p.yaml:6:22: cost.eltwise_per_cycle must be a number in (0, 1e+09], got '2e9'"},
      {"dma_bytes_per_cycle: 8", "p.yaml:7:24: cost.dma_bytes_per_cycle must be a number in (0, 1e+09], got '0'"},
      {"dispatch_overhead_cycles: 100",
       "p.yaml:8:29: cost.dispatch_overhead_cycles must be an integer in [0, 1000000000000], got -1"},
  };
  for (const auto& [field, want] : costs) {
    std::string t = kMinimal;
    const std::string value = want.substr(want.rfind("got ") + 4);
    const std::string bare = value[0] == '\'' ? value.substr(1, value.size() - 2) : value;
    t.replace(t.find(field), field.size(), field.substr(0, field.find(' ') + 1) + bare);
    EXPECT_EQ(error_of(t), want) << field << " " << bare;
  }
}

TEST(ProfileYaml, ASecondDocumentIsRefusedWhereItStarts) {
  const std::string t = std::string(kMinimal) + "---\nname: other\n";
  EXPECT_EQ(error_of(t), "p.yaml:11:1: a second YAML document starts here; this file holds one document (remove the "
                         "'---' and what follows, or merge it into the first)");
  // A leading '---' and a final '...' are one document.
  EXPECT_EQ(error_of("---\n" + std::string(kMinimal) + "...\n"), "");
}

TEST(ProfileYaml, SyntaxErrorHasLocation) {
  EXPECT_NE(error_of("name: [unclosed\n").find("p.yaml:"), std::string::npos);
  EXPECT_NE(error_of("name: [unclosed\n").find("YAML syntax error"), std::string::npos);
}

TEST(BuiltinProfiles, AllThreeLoad) {
  for (const char* name : {"nss", "css", "host"}) {
    ExecutorProfile p = ExecutorProfile::resolve(name);
    EXPECT_EQ(p.name(), name);
  }
  EXPECT_TRUE(ExecutorProfile::resolve("host").all_ops());
  EXPECT_EQ(ExecutorProfile::resolve("nss").float_type(), DType::kBF16);
}

TEST(NssProfile, RejectsFp32WithTheSeedToolMessage) {
  ExecutorProfile nss = ExecutorProfile::resolve("nss");
  Tensor x(DType::kF32, {1, 8, 8, 8}), w(DType::kF32, {8, 8, 3, 3});
  EXPECT_EQ(unsupported_reason(nss, conv_node(1), {&x, &w}), "FP32 not supported on nss; use --auto-convert-bf16");
}

// The nss profile as calibrated on the SL2610 chip (configs/targets/nss.yaml).
TEST(NssProfile, Bf16ConvAndDepthwiseRunGroupedStride4AndOneByOneMapsDoNot) {
  ExecutorProfile nss = ExecutorProfile::resolve("nss");
  EXPECT_EQ(nss.chip(), "sl2610");
  Tensor x(DType::kBF16, {1, 8, 8, 8}), w(DType::kBF16, {8, 8, 3, 3}), dw(DType::kBF16, {8, 1, 3, 3}),
      gw(DType::kBF16, {8, 2, 3, 3}), se(DType::kBF16, {1, 8, 1, 1}), w1(DType::kBF16, {8, 8, 1, 1});
  EXPECT_EQ(unsupported_reason(nss, conv_node(1), {&x, &w}), "");
  EXPECT_EQ(unsupported_reason(nss, conv_node(8), {&x, &dw}), "");  // depthwise: measured on the chip
  EXPECT_NE(unsupported_reason(nss, conv_node(4), {&x, &gw}).find("grouped Conv not supported on nss"),
            std::string::npos);
  EXPECT_NE(unsupported_reason(nss, conv_node(1, {4, 4}), {&x, &w}).find("stride 4 exceeds the nss limit of 2"),
            std::string::npos);
  // The squeeze-excitation 1x1 Conv on a 1x1 feature map fails on the chip.
  EXPECT_NE(unsupported_reason(nss, conv_node(1), {&se, &w1}).find("spatial extent of 1 is below the nss minimum of 2"),
            std::string::npos);
}

TEST(NssProfile, Bf16MaxPoolSigmoidAndSmallMeansRunSoftmaxAndLargeMeansDoNot) {
  ExecutorProfile nss = ExecutorProfile::resolve("nss");
  Tensor x(DType::kBF16, {1, 8, 8, 8}), big(DType::kBF16, {1, 240, 30, 30}), f(DType::kF32, {1, 8});
  onnx::NodeProto mp, sig, sm, gap, flat;
  mp.set_op_type("MaxPool");
  sig.set_op_type("Sigmoid");
  sm.set_op_type("Softmax");
  gap.set_op_type("GlobalAveragePool");
  flat.set_op_type("Flatten");
  EXPECT_EQ(unsupported_reason(nss, mp, {&x}), "");
  EXPECT_EQ(unsupported_reason(nss, sig, {&x}), "");
  EXPECT_EQ(unsupported_reason(nss, gap, {&x}), "");
  EXPECT_NE(unsupported_reason(nss, gap, {&big}).find("input of 216000 elements exceeds the nss limit of 131072"),
            std::string::npos);
  EXPECT_EQ(unsupported_reason(nss, sm, {&x}), "Softmax is not supported on nss");
  // An op of any dtype still has no fp32 datapath on nss.
  EXPECT_EQ(unsupported_reason(nss, flat, {&x}), "");
  EXPECT_EQ(unsupported_reason(nss, flat, {&f}), "FP32 not supported on nss; use --auto-convert-bf16");
}

TEST(CostModel, ConvCyclesFollowMacsAndDispatch) {
  ExecutorProfile p = ExecutorProfile::parse(kMinimal, "p.yaml");
  // 1x8x8x8 input, 16x8x3x3 weights, output 1x16x8x8: MACs = 1024 * 72.
  Tensor x(DType::kF32, {1, 8, 8, 8}), w(DType::kF32, {16, 8, 3, 3});
  std::vector<Tensor> out{Tensor(DType::kF32, {1, 16, 8, 8})};
  onnx::NodeProto proto = conv_node(1);
  NodeInfo info(proto, 13);
  LayerCost c = p.cost_of(info, {&x, &w}, out);
  EXPECT_EQ(c.macs, 1024u * 72u);
  // compute = 73728 / (10 * 2) = 3686.4; dma = (512+1152+1024)*4/8 = 1344.
  EXPECT_EQ(c.cycles, 100u + 3686u);
  EXPECT_DOUBLE_EQ(c.time_ms, 3786.0 / (100 * 1e3));
}
