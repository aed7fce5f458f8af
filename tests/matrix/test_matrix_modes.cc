// Matrix modes run and subgraph, and the auto-bisect of a failing assigned
// run, end to end: torq-coordinator --spec with real local workers, real
// ONNX files (the demo CNN, a chain of Muls built in code), a real store.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "tests/fleet/fleet_harness.h"
#include "tests/integration/models.h"
#include "tests/matrix/matrix_helpers.h"

using namespace torq::fleet_test;
using nlohmann::json;

namespace {

class MatrixModes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("modes-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto [code, out] = run({bin("torq-sim"), "demo", "--save", dir_ + "/demo.onnx"}, dir_ + "/demo.log");
    ASSERT_EQ(code, 0) << out;
  }
  std::pair<int, std::string> coordinator(const std::string& spec, const std::string& out) {
    return run({bin("torq-coordinator"), "--spec", dir_ + "/" + spec, "--export", dir_ + "/" + out, "--local-workers",
                "2", "--heartbeat-ms", "200"},
               dir_ + "/" + out + ".log");
  }
  std::string dir_;
};

}  // namespace

TEST_F(MatrixModes, RunAndSubgraphTestsHaveOutcomesReportsJUnitAndHtml) {
  // A config kept in a repository: the report of a discover, one op edited to host.
  auto [dc, dout] = run({bin("torq-gen-config"), "discover", "--model", dir_ + "/demo.onnx", "-o", dir_ + "/cfg", "-q"},
                        dir_ + "/discover.log");
  ASSERT_EQ(dc, 0) << dout;
  auto [ec, eout] = run({bin("torq-gen-config"), "edit", dir_ + "/cfg/torq_gen_config_demo.json", "--layer",
                         "Conv_conv1", "--executor", "host"},
                        dir_ + "/edit.log");
  ASSERT_EQ(ec, 0) << eout;
  write(dir_ + "/spec.yaml",
        "models:\n"
        "  - path: demo.onnx\n"
        "    config: cfg/torq_gen_config_demo.json\n"
        "    subgraphs: [{from: 1, to: 8}, {from: Relu_relu1, to: Conv_conv2}, {from: NoSuchLayer, to: 3},\n"
        "                {from: Relu_relu1, to: 8}]\n"
        "modes: [discover, run, subgraph]\n");
  auto [code, out] = coordinator("spec.yaml", "out");
  EXPECT_EQ(code, 1) << out;  // the subgraph naming no layer fails
  auto t = tests_by_id(read_json(dir_ + "/out/summary.json"));
  ASSERT_EQ(t.size(), 6u) << out;
  // 1..8 named two ways is one unit: one range run serves both tests.
  for (const char* id : {"demo-fp32-sim-discover", "demo-fp32-sim-run", "demo-fp32-sim-subgraph-1-8",
                         "demo-fp32-sim-subgraph-Relu_relu1-Conv_conv2", "demo-fp32-sim-subgraph-Relu_relu1-8"}) {
    ASSERT_TRUE(t.count(id)) << id << "\n" << out;
    EXPECT_EQ(t[id]["outcome"], "passed") << id << ": " << t[id].dump();
    EXPECT_EQ(t[id]["bringup_status"], "PASSED") << id;
    EXPECT_EQ(t[id]["full_model"], true) << id;
  }
  EXPECT_EQ(t["demo-fp32-sim-run"]["mode"], "run");
  EXPECT_EQ(t["demo-fp32-sim-subgraph-1-8"]["mode"], "subgraph");
  const json& bad = t["demo-fp32-sim-subgraph-NoSuchLayer-3"];
  EXPECT_EQ(bad["outcome"], "failed");
  EXPECT_EQ(bad["bringup_status"], "FAILED_FE_COMPILATION");
  EXPECT_NE(bad["message"].get<std::string>().find("closest layer ids"), std::string::npos) << bad.dump();

  // The subgraph test's report: the seed's file name, 8 ops numbered from 0, its full-subgraph run.
  const json sub = read_json(dir_ + "/out/reports/demo-fp32-sim-subgraph-1-8/torq_gen_config_demo_subgraph_1_8.json");
  ASSERT_EQ(sub["ops"].size(), 8u);
  std::set<int> indices;
  for (auto& [id, op] : sub["ops"].items()) indices.insert(op["_node_index"].get<int>());
  EXPECT_EQ(indices, (std::set<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(sub["full_model"]["layers"], 8);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/out/reports/demo-fp32-sim-subgraph-1-8/demo_subgraph_1_8.torch.mlir"));
  // The run test ran the config's assignment: Conv_conv1 on host, the rest as discovered (css for fp32).
  const json runrep = read_json(dir_ + "/out/reports/demo-fp32-sim-run/torq_gen_config_demo.json");
  EXPECT_EQ(runrep["full_model"]["executor_counts"]["host"], 1) << runrep["full_model"].dump();
  EXPECT_EQ(runrep["full_model"]["executor_counts"]["css"], 13) << runrep["full_model"].dump();
  const json disc = read_json(dir_ + "/out/reports/demo-fp32-sim-discover/torq_gen_config_demo.json");
  EXPECT_EQ(disc["full_model"]["executor_counts"]["host"], 0);

  // JUnit (read by Python's ElementTree) and the HTML carry every test.
  const std::string junit = junit_via_python(dir_ + "/out/junit.xml");
  EXPECT_NE(junit.find("6 1 0"), std::string::npos) << junit;
  EXPECT_EQ(read_json(dir_ + "/out/reports/demo-fp32-sim-subgraph-Relu_relu1-8/torq_gen_config_demo_subgraph_1_8.json")
                ["full_model"]["worker"],
            sub["full_model"]["worker"]);
  EXPECT_NE(junit.find("demo-fp32-sim-subgraph-1-8|-|passed|PASSED"), std::string::npos) << junit;
  EXPECT_NE(junit.find("demo-fp32-sim-run|-|passed|PASSED"), std::string::npos) << junit;
  const std::string html = slurp(dir_ + "/out/report.html");
  EXPECT_NE(html.find("demo-fp32-sim-subgraph-Relu_relu1-Conv_conv2"), std::string::npos);
}

// A chain of Muls whose layers all pass alone on an nss that rounds to
// nearest (the reference truncates) but whose assigned run misses
// allclose: the test fails as INCORRECT_RESULT and the bisect's range is in
// the report, summary.json, the JUnit message and the HTML.
TEST_F(MatrixModes, AFailingAssignedRunIsBisectedAndItsRangeIsReported) {
  torq::test::save_chain_model(dir_ + "/chain.onnx", 24);
  std::ifstream nss(std::string(TORQ_SOURCE_DIR) + "/configs/targets/nss.yaml");
  std::string profile((std::istreambuf_iterator<char>(nss)), std::istreambuf_iterator<char>());
  profile = std::regex_replace(profile, std::regex("rounding: truncate"), "rounding: rne");
  write(dir_ + "/nss-rne.yaml", profile);
  write(dir_ + "/spec.yaml",
        "models: [chain.onnx]\n"
        "variants: [bf16]\n"
        "executors: [nss]\n"
        "targets: {rne: {profiles: {nss: nss-rne.yaml}}}\n"
        "test_config: [cfg.yaml]\n");
  write(dir_ + "/cfg.yaml",
        "test_config:\n"
        "  chain-bf16-rne-discover: {status: EXPECTED_PASSING, assert_pcc: false, assert_allclose: true,\n"
        "                            allclose_rtol: 0.0, allclose_atol: 0.01}\n");
  auto [code, out] = coordinator("spec.yaml", "out");
  EXPECT_EQ(code, 1) << out;
  const json rep = read_json(dir_ + "/out/reports/chain-bf16-rne-discover/torq_gen_config_chain.json");
  for (auto& [id, op] : rep["ops"].items()) ASSERT_EQ(op["executors"]["nss"]["status"], "success") << id;
  const json& f = rep["full_model"]["first_failing_range"];
  ASSERT_TRUE(f.is_object()) << rep["full_model"].dump();
  const int a = f["first_node"], b = f["last_node"];
  EXPECT_LT(b - a + 1, 24);
  EXPECT_LE(f["bisect_runs"].get<int>(), 10);  // 2 * ceil(log2(24))
  EXPECT_GT(f["metrics"]["max_abs_diff"].get<double>(), 0.01);
  const std::string range = std::to_string(a) + ".." + std::to_string(b);
  auto t = tests_by_id(read_json(dir_ + "/out/summary.json"));
  const json& c = t["chain-bf16-rne-discover"];
  EXPECT_EQ(c["outcome"], "failed");
  EXPECT_EQ(c["bringup_status"], "INCORRECT_RESULT");
  EXPECT_EQ(c["first_failing_range"].get<std::string>().rfind(range + " (Mul_m" + std::to_string(a), 0), 0u)
      << c.dump();
  EXPECT_NE(c["message"].get<std::string>().find("first failing range: " + range), std::string::npos) << c.dump();
  EXPECT_NE(slurp(dir_ + "/out/junit.xml").find("first failing range: " + range), std::string::npos);
  EXPECT_NE(slurp(dir_ + "/out/report.html").find("first failing range: " + range), std::string::npos);
}

// A matrix target {toolchain: FILE}: the Torq tools (here the stand-in
// personas of torq-sim) run the executors, on local workers started with
// that backend; results equal the sim target's, kept apart from them.
TEST_F(MatrixModes, AToolchainTargetRunsTheStandInToolsAndAgreesWithSim) {
  write(dir_ + "/spec.yaml",
        std::string("models: [demo.onnx]\n"
                    "targets: {sim: {}, tools: {toolchain: ") + TORQ_SOURCE_DIR + "/configs/toolchains/standin.yaml}}\n");
  auto [code, out] = coordinator("spec.yaml", "out");
  ASSERT_EQ(code, 0) << out;
  auto t = tests_by_id(read_json(dir_ + "/out/summary.json"));
  EXPECT_EQ(t["demo-fp32-tools-discover"]["outcome"], "passed") << t["demo-fp32-tools-discover"].dump();
  EXPECT_EQ(t["demo-fp32-tools-discover"]["executor_distribution"], t["demo-fp32-sim-discover"]["executor_distribution"]);
  const json sim = read_json(dir_ + "/out/reports/demo-fp32-sim-discover/torq_gen_config_demo.json");
  const json tools = read_json(dir_ + "/out/reports/demo-fp32-tools-discover/torq_gen_config_demo.json");
  for (auto& [id, op] : sim["ops"].items()) {
    EXPECT_EQ(tools["ops"][id]["recommended_executor"], op["recommended_executor"]) << id;
    for (auto& [e, r] : op["executors"].items())
      EXPECT_EQ(tools["ops"][id]["executors"][e]["status"], r["status"]) << id << " " << e;
  }
  EXPECT_NE(tools["ops"]["Conv_conv1"]["executors"]["css"]["toolchain"].get<std::string>().find("standin"),
            std::string::npos) << tools["ops"]["Conv_conv1"]["executors"]["css"].dump();
}

// options.collect_profile: each test's assigned run is profiled; its
// Perfetto trace sits next to the test's report and the HTML report shows
// the Host Profile Overview.
TEST_F(MatrixModes, CollectProfileExportsTheTraceAndTheHtmlShowsTheOverview) {
  write(dir_ + "/spec.yaml", "models: [demo.onnx]\nvariants: [bf16]\noptions: {collect_profile: true}\n");
  auto [code, out] = coordinator("spec.yaml", "out");
  ASSERT_EQ(code, 0) << out;
  const std::string trace = dir_ + "/out/reports/demo-bf16-sim-discover/demo.trace.json";
  ASSERT_TRUE(std::filesystem::exists(trace)) << out;
  EXPECT_GT(read_json(trace)["traceEvents"].size(), 14u);
  const std::string html = slurp(dir_ + "/out/report.html");
  EXPECT_NE(html.find("Host Profile Overview"), std::string::npos);
  EXPECT_NE(html.find("WALL_TIME"), std::string::npos);
}

// The int8 variants are made from the run's start, ahead of the preparing
// thread: with no worker to run them the preparer holds three units and
// waits, yet every variant is quantized meanwhile (the workers of a real
// run never wait for a calibration, issue 32). A stop while it waits is
// STOPPED EARLY (exit 3), not an import failure of the test it waited for.
TEST_F(MatrixModes, Int8VariantsAreMadeAheadOfThePreparation) {
  const std::string demo = slurp(dir_ + "/demo.onnx");
  std::string models;
  for (int i = 0; i < 5; ++i) {  // five models: the demo with a doc_string each (ONNX field 6)
    const std::string tag = "copy-" + std::to_string(i);
    write(dir_ + "/m" + std::to_string(i) + ".onnx", demo + "\x32" + std::string(1, char(tag.size())) + tag);
    models += "  - m" + std::to_string(i) + ".onnx\n";
  }
  write(dir_ + "/ahead.yaml", "models:\n" + models + "variants: [int8]\nmodes: [discover]\n");
  Proc coord({bin("torq-coordinator"), "--spec", dir_ + "/ahead.yaml", "--bind", endpoint(free_port()), "--export",
              dir_ + "/out", "--heartbeat-ms", "200", "--grace-s", "2"},
             dir_ + "/ahead.log");
  ASSERT_TRUE(coord.wait_for("int8 variant 5/5 of", 120000)) << coord.output();
  ASSERT_TRUE(coord.wait_for("prepared unit 2 ", 30000)) << coord.output();
  size_t made = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_ + "/out/.quantized"))
    made += e.path().extension() == ".onnx";
  EXPECT_EQ(made, 5u);
  for (int i = 1; i <= 5; ++i)
    EXPECT_NE(coord.output().find("int8 variant " + std::to_string(i) + "/5 of " + dir_ + "/m" + std::to_string(i - 1) +
                                  ".onnx made ahead in "),
              std::string::npos)
        << coord.output();
  // No worker: the preparer holds three units and waits for room.
  EXPECT_EQ(coord.output().find("prepared unit 3 "), std::string::npos) << coord.output();
  coord.signal(SIGTERM);
  EXPECT_EQ(coord.wait(30000), 3) << coord.output();
  EXPECT_EQ(coord.output().find("import failed"), std::string::npos) << coord.output();
  EXPECT_NE(coord.output().find("STOPPED EARLY"), std::string::npos) << coord.output();
}

// A stop while the preparer waits for an int8 variant (here a quantizer
// that would take a minute) kills the quantizer and ends the run at once:
// STOPPED EARLY, exit 3, and no import failure for the test it waited for.
TEST_F(MatrixModes, AStopWhileAVariantIsMadeKillsTheQuantizerAndFailsNoTest) {
  write(dir_ + "/slow-quantize", "#!/bin/sh\nexec sleep 60\n");
  std::filesystem::permissions(dir_ + "/slow-quantize", std::filesystem::perms::owner_all);
  write(dir_ + "/one.yaml", "models: [demo.onnx]\nvariants: [int8]\nmodes: [discover]\n");
  Proc coord({bin("torq-coordinator"), "--spec", dir_ + "/one.yaml", "--bind", endpoint(free_port()), "--export",
              dir_ + "/out", "--heartbeat-ms", "200", "--grace-s", "2"},
             dir_ + "/one.log", {"TORQ_GEN_CONFIG_BIN=" + dir_ + "/slow-quantize"});
  ASSERT_TRUE(coord.wait_for("phase: preparing", 30000)) << coord.output();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the preparer waits for the variant
  const auto t0 = std::chrono::steady_clock::now();
  coord.signal(SIGTERM);
  EXPECT_EQ(coord.wait(30000), 3) << coord.output();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20)) << "the run waited for the quantizer";
  EXPECT_EQ(coord.output().find("import failed"), std::string::npos) << coord.output();
  EXPECT_EQ(coord.output().find("int8 variant 1/1"), std::string::npos) << coord.output();  // neither made nor failed
  EXPECT_NE(coord.output().find("STOPPED EARLY"), std::string::npos) << coord.output();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/summary.json"));
}

// The int8 variants: the model quantized once per (model, per-channel,
// seed) by torq-gen-config quantize, discovered and run as a QDQ model with
// its fp32 original's layers; a model that cannot be quantized (it already
// is) fails its int8 tests at import with the tool's reason.
TEST_F(MatrixModes, Int8VariantsDiscoverTheQuantizedModelAndQuantizeOnce) {
  auto [qc, qout] = run({bin("torq-gen-config"), "quantize", "--model", dir_ + "/demo.onnx", "-o", dir_ + "/q"},
                        dir_ + "/quantize.log");
  ASSERT_EQ(qc, 0) << qout;
  write(dir_ + "/spec.yaml",
        "models:\n"
        "  - demo.onnx\n"
        "  - {path: q/demo_quant.onnx, name: already}\n"
        "variants: [fp32, int8, {dtype: int8, per_channel: true}]\n"
        "modes: [discover, run]\n");
  auto [code, out] = coordinator("spec.yaml", "out");
  EXPECT_EQ(code, 1) << out;
  auto t = tests_by_id(read_json(dir_ + "/out/summary.json"));
  ASSERT_EQ(t.size(), 12u) << out;
  for (const char* id : {"demo-fp32-sim-discover", "demo-int8-sim-discover", "demo-int8-sim-run",
                         "demo-int8-pc-sim-discover", "demo-int8-pc-sim-run", "already-fp32-sim-discover"}) {
    EXPECT_EQ(t[id]["outcome"], "passed") << id << ": " << t[id].dump();
    EXPECT_EQ(t[id]["layers"], 14) << id;
  }
  for (const char* id : {"already-int8-sim-discover", "already-int8-pc-sim-run"}) {
    EXPECT_EQ(t[id]["outcome"], "failed") << id;
    EXPECT_EQ(t[id]["bringup_status"], "FAILED_FE_COMPILATION") << id;
    EXPECT_NE(t[id]["message"].get<std::string>().find("the model is already quantized"), std::string::npos)
        << t[id].dump();
  }
  // The int8 report: the quantized model's name, the fp32 layer ids (but the
  // graph output's producer, whose output the Q/DQ pair renames), each layer
  // compared on its int8 output.
  const json fp = read_json(dir_ + "/out/reports/demo-fp32-sim-discover/torq_gen_config_demo.json");
  const json q = read_json(dir_ + "/out/reports/demo-int8-sim-discover/torq_gen_config_demo_quant.json");
  ASSERT_EQ(q["ops"].size(), fp["ops"].size());
  auto fi = fp["ops"].begin();
  for (auto qi = q["ops"].begin(); qi != q["ops"].end(); ++qi, ++fi) {
    if (std::next(qi) != q["ops"].end()) {
      EXPECT_EQ(qi.key(), fi.key());
    }
    EXPECT_EQ((*qi)["_node_index"], (*fi)["_node_index"]);
    const json& host = (*qi)["executors"]["host"];
    EXPECT_EQ(host["status"], "success") << qi.key() << ": " << host.dump();
  }
  EXPECT_EQ(q["ops"]["Conv_conv1"]["executors"]["host"]["outputs"][0]["name"], "conv1_quantized");
  // One quantized model per variant, reused by the next run (not rewritten).
  std::vector<std::filesystem::path> made;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_ + "/out/.quantized"))
    if (e.path().extension() == ".onnx") made.push_back(e.path());
  ASSERT_EQ(made.size(), 2u);
  const auto when = std::filesystem::last_write_time(made[0]);
  auto [code2, out2] = coordinator("spec.yaml", "out");
  EXPECT_EQ(code2, 1) << out2;
  EXPECT_EQ(std::filesystem::last_write_time(made[0]), when);
  EXPECT_EQ(tests_by_id(read_json(dir_ + "/out/summary.json"))["demo-int8-sim-run"]["outcome"], "passed");
}
