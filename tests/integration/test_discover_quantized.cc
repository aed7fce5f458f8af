// discover|run --quantize through the real binaries on the demo CNN: the
// int8 QDQ model is discovered layer by layer (a layer = compute op + its
// Q/DQ neighbours) against the exact integer semantics on host, resumed,
// run with its assignment, and bad option combinations exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/integration/proc.h"

using namespace torq::test;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

class DiscoverQuantized : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("quant-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + model()).code, 0);
  }
  std::string model() const { return dir_ + "/demo.onnx"; }
  std::string out() const { return dir_ + "/out"; }
  ProcResult gen(const std::string& args) const {
    return run_cmd(bin("torq-gen-config") + " " + args + " --model " + model() + " -o " + out());
  }
  std::string dir_;
};

// The text of line `n` (1-based) of `text`.
std::string line_of(const std::string& text, size_t n) {
  std::istringstream in(text);
  std::string line;
  for (size_t i = 0; i < n && std::getline(in, line); ++i) {
  }
  return line;
}

}  // namespace

TEST_F(DiscoverQuantized, DiscoversTheInt8ModelLayerByLayerAndResumes) {
  auto r = gen("discover --quantize --workers 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("graph outputs vs fp32"), std::string::npos) << r.output;  // the quantization's own error
  EXPECT_TRUE(fs::exists(out() + "/demo_quant.onnx"));
  const json rep = read_json(out() + "/torq_gen_config_demo_quant.json");
  EXPECT_EQ(rep["model_name"], "demo_quant");
  ASSERT_EQ(rep["ops"].size(), 14u);
  const std::string mlir = slurp(out() + "/demo_quant.torch.mlir");
  int index = 0;
  for (auto& [id, op] : rep["ops"].items()) {
    EXPECT_EQ(op["_node_index"], index++) << id;
    const std::string type = id.substr(0, id.find('_'));
    // The reference is the integer semantics on host: host agrees exactly.
    const json& host = op["executors"]["host"];
    EXPECT_EQ(host["status"], "success") << id << ": " << host.dump();
    EXPECT_EQ(host["max_diff"]["max_abs_diff"], 0.0) << id;
    // The location is the compute op's line of the import, not a Q/DQ's.
    const std::string loc = op["mlir_location"];
    EXPECT_NE(line_of(mlir, std::stoul(loc)).find("torch.operator \"onnx." + type + "\""), std::string::npos)
        << id << " at " << loc;
  }
  // A layer's output is the int8 tensor its Q writes.
  EXPECT_EQ(rep["ops"]["Conv_conv1"]["executors"]["host"]["outputs"][0]["name"], "conv1_quantized");
  EXPECT_EQ(mlir.find("torch.operator \"onnx.QuantizeLinear\"") != std::string::npos, true);

  // The same command again quantizes to the same bytes: every job resumes.
  auto again = gen("discover --quantize --workers 2");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("jobs: 0 run, 42 resumed from the store"), std::string::npos) << again.output;

  // run --quantize: the assigned full-model run of the int8 model passes.
  auto run = gen("run --quantize --debug-ir");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("Result: PASSED"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("run demo_quant: 14 ops"), std::string::npos) << run.output;
  // --debug-ir annotates a layer's Q/DQ operators with its executor too.
  const std::string ir = slurp(out() + "/debug_ir/demo_quant.torch.mlir");
  size_t annotated_q = 0;
  std::istringstream lines(ir);
  for (std::string l; std::getline(lines, l);)
    if (l.find("onnx.QuantizeLinear") != std::string::npos && l.find("torq-executor") != std::string::npos)
      ++annotated_q;
  EXPECT_GE(annotated_q, 14u) << ir.substr(0, 2000);
}

TEST_F(DiscoverQuantized, ASubgraphOfTheInt8ModelKeepsWholeLayers) {
  auto r = gen("discover --quantize --subgraph-from Relu_relu1 --subgraph-to Conv_conv2 -q");
  ASSERT_EQ(r.code, 0) << r.output;
  const json sub = read_json(out() + "/torq_gen_config_demo_quant_subgraph_1_3.json");
  ASSERT_EQ(sub["ops"].size(), 3u);
  auto it = sub["ops"].begin();
  EXPECT_EQ(it.key(), "Relu_relu1");
  EXPECT_EQ(sub["full_model"]["layers"], 3);
  EXPECT_EQ(sub["full_model"]["status"], "success") << sub["full_model"].dump();
}

TEST_F(DiscoverQuantized, BadOptionCombinationsExit2) {
  auto both = gen("discover --quantize --auto-convert-bf16");
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.output.find("--auto-convert-bf16 and --quantize are mutually exclusive"), std::string::npos)
      << both.output;
  auto alone = gen("run --per-channel");
  EXPECT_EQ(alone.code, 2);
  EXPECT_NE(alone.output.find("--per-channel, --quant-format and --num-calib need --quantize"), std::string::npos)
      << alone.output;
  auto fmt = gen("discover --quantize --quant-format qint4");
  EXPECT_EQ(fmt.code, 2);
  EXPECT_NE(fmt.output.find("qint4"), std::string::npos) << fmt.output;
  auto calib = gen("discover --quantize --num-calib 0");
  EXPECT_EQ(calib.code, 2);
  EXPECT_NE(calib.output.find("--num-calib must be at least 1"), std::string::npos) << calib.output;
  // An int8 model given to --quantize: refused, nothing discovered.
  ASSERT_EQ(run_cmd(bin("torq-gen-config") + " quantize --model " + model() + " -o " + dir_ + "/q").code, 0);
  auto twice = run_cmd(bin("torq-gen-config") + " discover --quantize --model " + dir_ + "/q/demo_quant.onnx -o " +
                       out());
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.output.find("the model is already quantized"), std::string::npos) << twice.output;
  EXPECT_FALSE(fs::exists(out() + "/torq_gen_config_demo_quant.json"));
}
