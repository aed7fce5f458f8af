// Discovery of the reference CNNs in ../shared/models, fp32 and converted
// to bf16, and kill -9 / resume, through the real binaries.
#include <gtest/gtest.h>

#include <set>

#include "tests/integration/proc.h"

using namespace torq::test;
using json = nlohmann::ordered_json;

namespace {

std::string model_path(const std::string& m) { return std::string(TORQ_SHARED_MODELS) + "/" + m + "/model.onnx"; }

json discover(const std::string& m, const std::string& out, const std::string& extra, int want_code = 0) {
  auto r = run_cmd(bin("torq-gen-config") + " discover --model " + model_path(m) + " --output-dir " + out + " " + extra);
  EXPECT_EQ(r.code, want_code) << r.output;
  return read_json(out + "/torq_gen_config_" + m + ".json");
}

void check_common(const std::string& what, const json& rep, size_t layers, const std::string& out,
                  const std::string& m) {
  ASSERT_EQ(rep["ops"].size(), layers);
  std::map<std::string, std::map<std::string, int>> counts;
  int index = 0;
  for (auto& [id, op] : rep["ops"].items()) {
    EXPECT_EQ(op["_node_index"], index++) << id;
    EXPECT_TRUE(op["mlir_location"].is_string()) << id;
    EXPECT_NE(op["executors"]["host"]["status"], "error") << id;
    for (auto& [ex, r] : op["executors"].items()) counts[ex][r["status"].get<std::string>()]++;
  }
  json comp = read_json(out + "/torq_gen_config_" + m + "_compiler.json");
  size_t assigned = 0;
  for (auto& [id, op] : rep["ops"].items()) {
    if (op["recommended_executor"].is_null()) continue;
    ++assigned;
    EXPECT_EQ(comp["op_assignments"][op["mlir_location"].get<std::string>()]["executor"], op["recommended_executor"]);
  }
  EXPECT_EQ(comp["op_assignments"].size(), assigned);
  std::printf("[%s] status counts:", what.c_str());
  for (auto& [ex, c] : counts) {
    std::printf(" %s{", ex.c_str());
    for (auto& [s, n] : c) std::printf(" %s=%d", s.c_str(), n);
    std::printf(" }");
  }
  std::printf("\n");
}

// Ops the SL2610-calibrated nss profile runs in bf16 (configs/targets/nss.yaml).
const std::set<std::string> kNssBf16Ops = {"Conv", "Relu", "Add", "Gemm", "Clip", "Mul", "MaxPool", "Concat",
                                           "Flatten", "Sigmoid", "AveragePool"};

void check_bf16(const json& rep) {
  for (auto& [id, op] : rep["ops"].items()) {
    const std::string type = id.substr(0, id.find('_'));
    const json& nss = op["executors"]["nss"];
    if (!kNssBf16Ops.count(type)) continue;
    // A Conv on a 1x1 feature map (squeeze-excitation) fails as on the chip:
    // its error is the profile's, not a crash; everything else runs.
    if (nss["status"] == "error") {
      EXPECT_EQ(type, "Conv") << id << ": " << nss.dump();
      EXPECT_NE(nss["failure_report"]["summary"].get<std::string>().find("spatial extent of 1 is below the nss minimum"),
                std::string::npos) << id << ": " << nss.dump();
    } else {
      EXPECT_TRUE(nss["status"] == "success" || nss["status"] == "difference") << id;
    }
  }
}

}  // namespace

TEST(DiscoverSharedModels, Squeezenet) {
  const std::string out = fresh_dir("sq_fp32");
  json rep = discover("squeezenet1.0", out, "--workers 2");
  check_common("squeezenet1.0 fp32", rep, 65, out, "squeezenet1.0");
  for (auto& [id, op] : rep["ops"].items()) {
    EXPECT_EQ(op["executors"]["nss"]["status"], "error") << id;  // fp32 never runs on the NPU
    EXPECT_NE(op["recommended_executor"], "nss") << id;
  }
}

TEST(DiscoverSharedModels, SqueezenetBf16) {
  const std::string out = fresh_dir("sq_bf16");
  json rep = discover("squeezenet1.0", out, "--workers 2 --auto-convert-bf16");
  check_common("squeezenet1.0 bf16", rep, 65, out, "squeezenet1.0");
  check_bf16(rep);
}

TEST(DiscoverSharedModels, Resnet18) {
  const std::string out = fresh_dir("rn_fp32");
  json rep = discover("resnet18", out, "--workers 2");
  check_common("resnet18 fp32", rep, 49, out, "resnet18");
}

TEST(DiscoverSharedModels, Resnet18Bf16) {
  const std::string out = fresh_dir("rn_bf16");
  json rep = discover("resnet18", out, "--workers 2 --auto-convert-bf16");
  check_common("resnet18 bf16", rep, 49, out, "resnet18");
  check_bf16(rep);
}

TEST(DiscoverResume, KillNineThenRerunContinuesAndLosesNothing) {
  const std::string out = fresh_dir("resume");
  Child c = spawn({bin("torq-gen-config"), "discover", "--model", model_path("resnet18"), "--output-dir", out,
                   "--workers", "1"});
  ASSERT_TRUE(c.wait_for("jobs 50/")) << c.buffer;
  kill(c.pid, SIGKILL);
  c.wait_exit();
  auto r = run_cmd(bin("torq-gen-config") + " discover --model " + model_path("resnet18") + " --output-dir " + out +
                   " --workers 2");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto pos = r.output.find(" resumed from the store");
  ASSERT_NE(pos, std::string::npos) << r.output;
  const auto start = r.output.rfind(", ", pos) + 2;
  const int resumed = std::stoi(r.output.substr(start, pos - start));
  std::printf("[resume] %d jobs resumed after kill -9 at >= 50 done\n", resumed);
  EXPECT_GE(resumed, 50);
  EXPECT_LT(resumed, 147);
  json rep = read_json(out + "/torq_gen_config_resnet18.json");
  ASSERT_EQ(rep["ops"].size(), 49u);
  for (auto& [id, op] : rep["ops"].items()) EXPECT_EQ(op["executors"].size(), 3u) << id;
  // A third run recomputes nothing.
  auto r3 = run_cmd(bin("torq-gen-config") + " discover --model " + model_path("resnet18") + " --output-dir " + out);
  EXPECT_NE(r3.output.find("jobs: 0 run, 147 resumed"), std::string::npos) << r3.output;
}
