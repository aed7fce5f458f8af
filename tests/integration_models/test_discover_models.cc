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

// int8 (issue 12): discover --quantize makes the static int8 QDQ model and
// discovers it. Its layers are the fp32 model's, ids included (the graph
// output's producer, whose output the quantizer renames, is named after the
// graph output its Q/DQ pair writes, as in the seed's `_quant` reports), host
// reproduces the integer reference exactly, nss runs every layer but
// `nss_fails` (the chip-calibrated int8 rules), the quantization's own
// graph-output PCC vs fp32 is printed, and run --quantize passes.
void check_int8(const std::string& m, const std::string& flags, size_t layers, size_t nss_fails) {
  const std::string out = fresh_dir(m + "_int8");
  const std::string base = bin("torq-gen-config") + " discover --model " + model_path(m) + " --output-dir " + out;
  auto fp = run_cmd(base + "/fp32 --skip-executors nss,css -q");
  ASSERT_EQ(fp.code, 0) << fp.output;
  auto r = run_cmd(base + " --workers 2 --quantize " + flags);
  ASSERT_EQ(r.code, 0) << r.output;
  const size_t at = r.output.find("held out from calibration): PCC ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const double pcc = std::stod(r.output.substr(at + 33));
  std::printf("[%s int8 %s] graph-output PCC vs fp32 %.6f\n", m.c_str(), flags.c_str(), pcc);
  EXPECT_GE(pcc, 0.999);
  const json f = read_json(out + "/fp32/torq_gen_config_" + m + ".json");
  const json q = read_json(out + "/torq_gen_config_" + m + "_quant.json");
  check_common(m + " int8", q, layers, out, m + "_quant");
  ASSERT_EQ(f["ops"].size(), layers);
  size_t fails = 0, same_id = 0;
  auto fi = f["ops"].begin();
  for (auto qi = q["ops"].begin(); qi != q["ops"].end(); ++qi, ++fi) {
    same_id += qi.key() == fi.key();
    const json& host = (*qi)["executors"]["host"];
    EXPECT_EQ(host["status"], "success") << qi.key();
    EXPECT_EQ(host["max_diff"]["max_abs_diff"], 0.0) << qi.key();
    const json& nss = (*qi)["executors"]["nss"];
    if (nss["status"] == "error") {
      ++fails;
      EXPECT_EQ(nss["error_class"], "unsupported") << qi.key() << ": " << nss.dump();
    }
  }
  EXPECT_EQ(same_id, layers);
  EXPECT_EQ(fails, nss_fails);
  auto run = run_cmd(bin("torq-gen-config") + " run --model " + model_path(m) + " --output-dir " + out +
                     " --quantize " + flags);
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("Result: PASSED"), std::string::npos) << run.output;
}

TEST(DiscoverSharedModels, SqueezenetInt8) { check_int8("squeezenet1.0", "", 65, 1); }

// Per channel raises mobilenetv2's opset 10 to 13: its Clips take their
// bounds as inputs, which the int8 kernel keeps as parameters.
TEST(DiscoverSharedModels, Mobilenetv2Int8PerChannel) { check_int8("mobilenetv2", "--per-channel", 100, 2); }

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
