// A compiler JSON given to `run` alone (coordinator/fleet/assignment_file.h)
// is read strictly: every executor value, every location key and the
// model_name are checked, and each bad one is an error naming the file, the
// key and what was expected (issue 60, finding 7). The demo CNN of torq-sim.
#include <gtest/gtest.h>

#include <functional>

#include "coordinator/fleet/assignment_file.h"
#include "pipeline/base/error.h"
#include "pipeline/model/mlir.h"
#include "pipeline/model/model_import.h"
#include "tests/unit/temp_dir.h"
#include "worker/sim/demo_model.h"

namespace torq::coordinator {
namespace {

using pipeline::Executor;

class CompilerJsonForRun : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = pipeline::ImportedModel::from_bytes(sim::build_demo_model(), "demo");
    const std::string mlir = pipeline::emit_torch_mlir(model_->proto());
    locations_ = pipeline::map_layer_locations(mlir, model_->proto()).locations;
    ASSERT_GE(locations_.size(), 2u);
    ASSERT_FALSE(locations_[0].empty());
    for (const auto& op : pipeline::mlir_operators(mlir, false)) {
      const std::string at = std::to_string(op.line) + ":" + std::to_string(op.col);
      if (std::find(locations_.begin(), locations_.end(), at) == locations_.end() && not_a_layer_.empty())
        not_a_layer_ = at;
    }
    ASSERT_FALSE(not_a_layer_.empty());  // the initializers are onnx.Constant operators
    path_ = dir_.path("torq_gen_config_demo_compiler.json");
  }

  // Reads `text` as the demo's compiler JSON.
  AssignmentFile read(const std::string& text, const std::string& model_name = "demo") {
    dir_.write("torq_gen_config_demo_compiler.json", text);
    return assignment_from_compiler(path_, "", model_->proto(), model_name, model_->layers());
  }
  // The error reading `text`, "" when it is read.
  std::string error(const std::string& text, const std::string& model_name = "demo") {
    try {
      read(text, model_name);
    } catch (const pipeline::PipelineError& e) {
      return e.what();
    }
    return "";
  }
  // A compiler JSON assigning `value` to the first layer.
  std::string with_executor(const std::string& value) const {
    return R"({"model_name": "demo", "op_assignments": {")" + locations_[0] + R"(": {"executor": )" + value + "}}}";
  }

  test::TempDir dir_;
  std::unique_ptr<pipeline::ImportedModel> model_;
  std::vector<std::string> locations_;
  std::string not_a_layer_;
  std::string path_;
};

TEST_F(CompilerJsonForRun, ReadsTheExecutorsAndNullAsTheCompilersChoice) {
  const AssignmentFile a = read(R"({"model_name": "demo", "op_assignments": {")" + locations_[0] +
                                R"(": {"executor": "host"}, ")" + locations_[1] + R"(": {"executor": "css"}}})");
  ASSERT_EQ(a.assignment.size(), model_->layers().size());
  EXPECT_EQ(a.assignment[0], Executor::kHost);
  EXPECT_EQ(a.assignment[1], Executor::kCss);
  for (size_t i = 2; i < a.assignment.size(); ++i) EXPECT_FALSE(a.assignment[i]) << i;
  // JSON null, and the string "null" the seed's `edit --executor null` wrote.
  EXPECT_FALSE(read(with_executor("null")).assignment[0]);
  EXPECT_FALSE(read(with_executor(R"("null")")).assignment[0]);
  EXPECT_EQ(read(with_executor(R"("nss")")).assignment[0], Executor::kNss);
}

TEST_F(CompilerJsonForRun, AnExecutorThatIsNoExecutorIsRefusedWithFileKeyAndValue) {
  for (const std::string v : {"true", "3.5", "{}", "[]", "1e18", R"("")", R"("NSS")", R"("gpu")", "0"}) {
    const std::string shown = v == "1e18" ? "1e+18" : v;
    EXPECT_EQ(error(with_executor(v)), path_ + ": op_assignments.\"" + locations_[0] + "\".executor: " + shown +
                                           " is not an executor; expected \"nss\", \"css\", \"host\" or null (the "
                                           "compiler decides)")
        << v;
  }
}

TEST_F(CompilerJsonForRun, AnAssignmentThatIsNoObjectWithAnExecutorIsRefused) {
  for (const std::string v : {R"("nss")", "{}", R"({"exec":"nss"})", "null"}) {
    const std::string text = R"({"model_name": "demo", "op_assignments": {")" + locations_[0] + R"(": )" + v + "}}";
    EXPECT_EQ(error(text), path_ + ": op_assignments.\"" + locations_[0] +
                               "\": expected {\"executor\": \"nss\" | \"css\" | \"host\" | null}, got " + v)
        << v;
  }
}

TEST_F(CompilerJsonForRun, ALocationKeyThatIsNotLineColIsRefused) {
  for (const std::string key : {"14", "0:11", "14:0", "-14:11", "14:11:1", "a:b", "014:11", " 14:11", "", ":"}) {
    const std::string e = error(R"({"model_name": "demo", "op_assignments": {")" + key + R"(": {"executor": "nss"}}})");
    EXPECT_EQ(e.substr(0, e.find(" (e.g.")),
              path_ + ": op_assignments key \"" + key +
                  "\": expected \"<line>:<col>\" with positive integers, the location of an op of the torch-mlir "
                  "import of demo")
        << key;
  }
}

TEST_F(CompilerJsonForRun, ALocationNoLayerOfTheImportHasIsRefused) {
  const std::string layers = "; expected the location of one of its " + std::to_string(locations_.size()) + " layers";
  const std::string none = error(R"({"model_name": "demo", "op_assignments": {"9999:1": {"executor": "nss"}}})");
  EXPECT_EQ(none.substr(0, none.find(" (e.g.")),
            path_ + ": op_assignments key \"9999:1\": no op of the torch-mlir import of demo is at this line:col" + layers);
  // An operator that is no layer (an initializer's onnx.Constant) takes none.
  const std::string constant =
      error(R"({"model_name": "demo", "op_assignments": {")" + not_a_layer_ + R"(": {"executor": "nss"}}})");
  EXPECT_NE(constant.find(path_ + ": op_assignments key \"" + not_a_layer_ + "\": the "), std::string::npos)
      << constant;
  EXPECT_NE(constant.find("operator there is not a layer and takes no executor" + layers), std::string::npos)
      << constant;
}

TEST_F(CompilerJsonForRun, AKeyGivenTwiceIsRefused) {
  EXPECT_EQ(error(R"({"model_name": "demo", "op_assignments": {")" + locations_[0] + R"(": {"executor": "nss"}, ")" +
                  locations_[0] + R"(": {"executor": "host"}}})"),
            path_ + ": key \"" + locations_[0] + "\" is given twice");
}

TEST_F(CompilerJsonForRun, TheModelNameMustBeTheModelsBeingRun) {
  EXPECT_EQ(error(R"({"model_name": "resnet50", "op_assignments": {}})"),
            path_ + ": model_name: \"resnet50\" is not the model being run, \"demo\" (is it the compiler JSON of "
                    "another model?)");
  EXPECT_EQ(error(R"({"op_assignments": {}})"),
            path_ + ": model_name: expected the name of the model being run, \"demo\", got none");
  EXPECT_EQ(error(R"({"model_name": 7, "op_assignments": {}})"),
            path_ + ": model_name: expected the name of the model being run, \"demo\", got 7");
  // The real tool names a quantized model's files "<m>_quant" and writes model_name "<m>".
  EXPECT_EQ(error(R"({"model_name": "demo", "op_assignments": {}})", "demo_quant"), "");
  EXPECT_EQ(error(R"({"model_name": "demo", "op_assignments": {}})", "demo_subgraph_1_3"), "");
  EXPECT_NE(error(R"({"model_name": "dem", "op_assignments": {}})", "demo_quant"), "");
}

}  // namespace
}  // namespace torq::coordinator
