// torq-gen-config discover | view | edit through the real binaries: real
// worker processes, a real RocksDB store, real ONNX files.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <set>
#include <thread>

#include "tests/integration/models.h"
#include "tests/integration/proc.h"
#include "pipeline/model/model_import.h"
#include "pipeline/store/store.h"
#include "worker/runner/job_runner.h"

using namespace torq::test;
using json = nlohmann::ordered_json;

namespace {

std::string gen() { return bin("torq-gen-config"); }

// Per-executor status counts of a report, printed for the test log.
std::map<std::string, std::map<std::string, int>> status_counts(const json& rep) {
  std::map<std::string, std::map<std::string, int>> c;
  for (auto& [id, op] : rep["ops"].items())
    for (auto& [ex, r] : op["executors"].items()) c[ex][r["status"].get<std::string>()]++;
  return c;
}

void print_counts(const std::string& what, const json& rep) {
  std::printf("[%s]", what.c_str());
  for (auto& [ex, m] : status_counts(rep)) {
    std::printf(" %s:", ex.c_str());
    for (auto& [st, n] : m) std::printf(" %s=%d", st.c_str(), n);
  }
  std::printf("\n");
}

void expect_compiler_consistent(const json& rep, const json& comp) {
  size_t expected = 0;
  for (auto& [id, op] : rep["ops"].items()) {
    if (op["recommended_executor"].is_null() || op["mlir_location"].is_null()) continue;
    ++expected;
    const std::string loc = op["mlir_location"];
    ASSERT_TRUE(comp["op_assignments"].contains(loc)) << id << " at " << loc;
    EXPECT_EQ(comp["op_assignments"][loc]["executor"], op["recommended_executor"]) << id;
  }
  EXPECT_EQ(comp["op_assignments"].size(), expected);
}

}  // namespace

TEST(DiscoverDemo, EveryLayerReportedWithIdsLocationsAndHostNeverError) {
  const std::string dir = fresh_dir("demo");
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  auto r = run_cmd(gen() + " discover --model " + dir + "/demo.onnx --output-dir " + dir + "/out --workers 2");
  ASSERT_EQ(r.code, 0) << r.output;
  json rep = read_json(dir + "/out/torq_gen_config_demo.json");
  json comp = read_json(dir + "/out/torq_gen_config_demo_compiler.json");
  EXPECT_EQ(rep["version"], "1.1");
  EXPECT_EQ(rep["model_name"], "demo");
  ASSERT_EQ(rep["ops"].size(), 14u);
  int index = 0;
  for (auto& [id, op] : rep["ops"].items()) {
    EXPECT_EQ(op["_node_index"], index++);
    EXPECT_TRUE(op["mlir_location"].is_string()) << id;
    EXPECT_EQ(op["executors"]["host"]["status"], "success") << id;
    // fp32 model on the NPU: rejected as the chip would.
    EXPECT_EQ(op["executors"]["nss"]["status"], "error") << id;
    const std::string why = op["executors"]["nss"]["failure_report"]["summary"];
    EXPECT_TRUE(why.find("FP32 not supported on nss") != std::string::npos ||
                why.find("is not supported on nss") != std::string::npos)
        << id << ": " << why;
  }
  EXPECT_TRUE(rep["ops"].contains("Conv_conv1"));
  EXPECT_EQ(rep["ops"]["Conv_conv1"]["recommended_executor"], "css");
  expect_compiler_consistent(rep, comp);
  // Every result names the engine that computed it: this build's digest,
  // the identity the coordinator keys its cache on.
  const std::regex identity("torq-sim-[0-9a-f]{16} \\(oneDNN [0-9]+\\.[0-9]+\\.[0-9]+, [a-z0-9_]+\\)");
  for (auto& [id, op] : rep["ops"].items()) {
    const std::string tc = op["executors"]["css"]["toolchain"];
    EXPECT_TRUE(std::regex_match(tc, identity)) << id << ": " << tc;
    EXPECT_EQ(tc, torq::runner::toolchain_identity()) << id;
  }
  print_counts("demo fp32", rep);
}

TEST(DiscoverDemo, Bf16ConvertedRunsConvOnNssAndSoftmaxFallsBackToCss) {
  const std::string dir = fresh_dir("demo_bf16");
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  auto r = run_cmd(gen() + " discover --model " + dir + "/demo.onnx --output-dir " + dir +
                   "/out --auto-convert-bf16 --save-bf16-model " + dir + "/demo_bf16.onnx");
  ASSERT_EQ(r.code, 0) << r.output;
  json rep = read_json(dir + "/out/torq_gen_config_demo.json");
  const json& conv = rep["ops"]["Conv_conv1"]["executors"]["nss"];
  EXPECT_TRUE(conv["status"] == "success" || conv["status"] == "difference") << conv.dump();
  EXPECT_EQ(rep["ops"]["Conv_conv1"]["recommended_executor"], conv["status"] == "success" ? "nss" : "css");
  // bf16 MaxPool runs on the SL2610's nss (calibrated profile); Softmax does not.
  EXPECT_NE(rep["ops"]["MaxPool_pool1"]["executors"]["nss"]["status"], "error");
  const json& sm = rep["ops"]["Softmax_probabilities"];
  EXPECT_EQ(sm["executors"]["nss"]["status"], "error");
  EXPECT_NE(sm["executors"]["nss"]["failure_report"]["summary"].get<std::string>().find("Softmax is not supported on nss"),
            std::string::npos);
  EXPECT_EQ(sm["recommended_executor"], "css");
  // Results record the chip their profile models (nss.yaml: chip sl2610; css names none).
  EXPECT_EQ(conv["chip"], "sl2610");
  EXPECT_FALSE(sm["executors"]["css"].contains("chip"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/demo_bf16.onnx"));
  print_counts("demo bf16", rep);
}

TEST(DiscoverEdit, ViewEditRoundTripAndNullIsJsonNull) {
  const std::string dir = fresh_dir("edit");
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  ASSERT_EQ(run_cmd(gen() + " discover --model " + dir + "/demo.onnx --output-dir " + dir + "/out -q").code, 0);
  const std::string rep_path = dir + "/out/torq_gen_config_demo.json";
  auto v = run_cmd(gen() + " view " + rep_path);
  ASSERT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("Conv_conv1"), std::string::npos);
  auto e = run_cmd(gen() + " edit " + rep_path + " --layer conv_CONV1 --executor host");  // case-insensitive
  ASSERT_EQ(e.code, 0) << e.output;
  json rep = read_json(rep_path);
  EXPECT_EQ(rep["ops"]["Conv_conv1"]["recommended_executor"], "host");
  json comp = read_json(dir + "/out/torq_gen_config_demo_compiler.json");
  expect_compiler_consistent(rep, comp);
  const std::string loc = rep["ops"]["Conv_conv1"]["mlir_location"];
  EXPECT_EQ(comp["op_assignments"][loc]["executor"], "host");
  ASSERT_EQ(run_cmd(gen() + " edit " + rep_path + " --layer 'Relu_*' --executor null").code, 0);
  rep = read_json(rep_path);
  EXPECT_TRUE(rep["ops"]["Relu_relu1"]["recommended_executor"].is_null());
  EXPECT_EQ(slurp(rep_path).find("\"null\""), std::string::npos);
  comp = read_json(dir + "/out/torq_gen_config_demo_compiler.json");
  EXPECT_FALSE(comp["op_assignments"].contains(rep["ops"]["Relu_relu1"]["mlir_location"].get<std::string>()));
  auto vc = run_cmd(gen() + " view " + dir + "/out/torq_gen_config_demo_compiler.json");
  EXPECT_EQ(vc.code, 0) << vc.output;
  // Skip mode re-tests the null layers and keeps the others.
  auto s = run_cmd(gen() + " discover --model " + dir + "/demo.onnx --output-dir " + dir + "/out --skip-mode");
  ASSERT_EQ(s.code, 0) << s.output;
  rep = read_json(rep_path);
  EXPECT_EQ(rep["ops"]["Relu_relu1"]["recommended_executor"], "css");
}

TEST(DiscoverEdit, EditedToleranceIsUsedByTheNextDiscover) {
  const std::string dir = fresh_dir("tol");
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  ASSERT_EQ(run_cmd(gen() + " discover --model " + dir + "/demo.onnx --output-dir " + dir + "/out -q").code, 0);
  const std::string rep_path = dir + "/out/torq_gen_config_demo.json";
  ASSERT_EQ(run_cmd(gen() + " edit " + rep_path + " --layer Conv_conv2 --tolerance-max 0.25").code, 0);
  ASSERT_EQ(run_cmd(gen() + " discover --model " + dir + "/demo.onnx --output-dir " + dir + "/out -q").code, 0);
  json rep = read_json(rep_path);
  EXPECT_DOUBLE_EQ(rep["ops"]["Conv_conv2"]["executors"]["css"]["tolerance_used"]["fp_max_tol"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(rep["ops"]["Conv_conv1"]["executors"]["css"]["tolerance_used"]["fp_max_tol"].get<double>(), 0.01);
}

TEST(DiscoverDedup, ClipsWithDifferentBoundsAreNotMerged) {
  const std::string dir = fresh_dir("dedup");
  save_dedup_model(dir + "/m.onnx");
  auto r = run_cmd(gen() + " discover --model " + dir + "/m.onnx --output-dir " + dir + "/out --dedup-layers");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("3 saved by dedup"), std::string::npos) << r.output;  // one Relu x 3 executors
  json rep = read_json(dir + "/out/torq_gen_config_m.json");
  EXPECT_EQ(rep["ops"]["Relu_r1"]["dedup_of"], "Relu_r0");
  EXPECT_FALSE(rep["ops"]["Clip_c1"].contains("dedup_of") && rep["ops"]["Clip_c1"]["dedup_of"].is_string());
  EXPECT_EQ(rep["ops"]["Clip_c1"]["executors"]["host"]["status"], "success");
}

TEST(DiscoverBadInput, CriticalFailureExitsOneAndReportsEveryOtherLayer) {
  const std::string dir = fresh_dir("critical");
  save_critical_model(dir + "/m.onnx");
  auto r = run_cmd(gen() + " discover --model " + dir + "/m.onnx --output-dir " + dir + "/out");
  EXPECT_EQ(r.code, 1) << r.output;
  json rep = read_json(dir + "/out/torq_gen_config_m.json");
  EXPECT_TRUE(rep["has_critical_failures"].get<bool>());
  ASSERT_EQ(rep["discovery_report"]["critical_failures"].size(), 1u);
  EXPECT_EQ(rep["discovery_report"]["critical_failures"][0]["layer_id"], "LpNormalization_b");
  EXPECT_TRUE(rep["ops"]["LpNormalization_b"]["recommended_executor"].is_null());
  EXPECT_EQ(rep["ops"]["Relu_a"]["executors"]["host"]["status"], "success");
  // Past LpNormalization the full run stops: Relu_y is tested on stand-in inputs of its inferred shape.
  EXPECT_EQ(rep["ops"]["Relu_y"]["executors"]["host"]["status"], "success");
}

TEST(DiscoverBadInput, NotOnnxTruncatedAndUnwritableGiveExitTwo) {
  const std::string dir = fresh_dir("bad");
  { std::ofstream(dir + "/text.onnx") << "hello, I am not a model\n"; }
  auto r1 = run_cmd(gen() + " discover --model " + dir + "/text.onnx --output-dir " + dir + "/out");
  EXPECT_EQ(r1.code, 2);
  EXPECT_NE(r1.output.find("text.onnx: not an ONNX model"), std::string::npos) << r1.output;
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  const std::string bytes = slurp(dir + "/demo.onnx");
  { std::ofstream(dir + "/trunc.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2); }
  auto r2 = run_cmd(gen() + " discover --model " + dir + "/trunc.onnx --output-dir " + dir + "/out");
  EXPECT_EQ(r2.code, 2);
  EXPECT_NE(r2.output.find("trunc.onnx: "), std::string::npos) << r2.output;
  auto r3 = run_cmd(gen() + " discover --model " + dir + "/demo.onnx --output-dir /proc/torq-no-such-dir");
  EXPECT_EQ(r3.code, 2);
  EXPECT_NE(r3.output.find("output directory /proc/torq-no-such-dir: cannot create: No such file or directory"),
            std::string::npos)
      << r3.output;
  auto r4 = run_cmd(gen() + " discover --model " + dir + "/demo.onnx --output-dir " + dir + "/out --skip-executors npu");
  EXPECT_EQ(r4.code, 2);
  EXPECT_NE(r4.output.find("unknown executor 'npu'"), std::string::npos) << r4.output;
}

TEST(DiscoverBadInput, CorruptOrForeignReportAndNoMatchGiveExitTwo) {
  const std::string dir = fresh_dir("badrep");
  { std::ofstream(dir + "/corrupt.json") << "{\"model_name\": \"x\", \"ops\": {"; }
  { std::ofstream(dir + "/foreign.json") << "{\"name\": \"package\", \"version\": \"1.0\"}"; }
  auto r1 = run_cmd(gen() + " view " + dir + "/corrupt.json");
  EXPECT_EQ(r1.code, 2);
  EXPECT_NE(r1.output.find("corrupt.json"), std::string::npos) << r1.output;
  auto r2 = run_cmd(gen() + " edit " + dir + "/foreign.json --layer ALL --executor host");
  EXPECT_EQ(r2.code, 2);
  EXPECT_NE(r2.output.find("foreign.json"), std::string::npos) << r2.output;
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  ASSERT_EQ(run_cmd(gen() + " discover -q --model " + dir + "/demo.onnx --output-dir " + dir + "/out").code, 0);
  const std::string rep = dir + "/out/torq_gen_config_demo.json";
  const std::string before = slurp(rep);
  auto r3 = run_cmd(gen() + " edit " + rep + " --layer NoSuchLayer --executor host");
  EXPECT_EQ(r3.code, 2);
  EXPECT_NE(r3.output.find("no layer matches 'NoSuchLayer'"), std::string::npos) << r3.output;
  auto r4 = run_cmd(gen() + " edit " + rep + " --layer ALL --executor npu");
  EXPECT_EQ(r4.code, 2);
  EXPECT_NE(r4.output.find("unknown executor 'npu'"), std::string::npos) << r4.output;
  EXPECT_EQ(slurp(rep), before);  // nothing lost or half-written
}

TEST(DiscoverSupervision, HangAndCrashCostOneJobEachAndTheRunCompletes) {
  const std::string dir = fresh_dir("faults");
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  auto r = run_cmd("TORQ_WORKER_FAULT='hang:/3/css,crash:/5/nss' " + gen() + " discover --model " + dir +
                   "/demo.onnx --output-dir " + dir + "/out --timeout-ms 1500 --workers 2");
  ASSERT_EQ(r.code, 0) << r.output;
  json rep = read_json(dir + "/out/torq_gen_config_demo.json");
  std::vector<std::string> ids;
  for (auto& [id, op] : rep["ops"].items()) ids.push_back(id);
  const json& hung = rep["ops"][ids[3]]["executors"]["css"];
  EXPECT_EQ(hung["status"], "error");
  EXPECT_EQ(hung["failure_report"]["type"], "timeout") << hung.dump();
  const json& crashed = rep["ops"][ids[5]]["executors"]["nss"];
  EXPECT_EQ(crashed["status"], "error");
  EXPECT_EQ(crashed["failure_report"]["type"], "crash") << crashed.dump();
  // Every other job still ran: host succeeded everywhere.
  for (auto& [id, op] : rep["ops"].items()) EXPECT_EQ(op["executors"]["host"]["status"], "success") << id;
  EXPECT_EQ(rep["ops"][ids[3]]["recommended_executor"], "host");
}

// Results are committed as they return without a disk flush each (the
// flush comes at the end): a discover killed with -9 keeps every result it
// reported, and the next one resumes from them to the same report.
TEST(DiscoverSupervision, AKilledDiscoverResumesFromEveryResultItReported) {
  const std::string dir = fresh_dir("killed");
  const std::string model = dir + "/demo.onnx";
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + model).code, 0);
  // 42 jobs of 120 ms on 2 lanes: after the 25th result, ~1 s to kill it in
  // even on a loaded machine (40 ms left ~0.34 s).
  setenv("TORQ_WORKER_DELAY_MS", "120", 1);
  Child c = spawn({gen(), "discover", "--model", model, "--output-dir", dir + "/out", "--workers", "2"});
  unsetenv("TORQ_WORKER_DELAY_MS");
  ASSERT_GT(c.pid, 0);
  ASSERT_TRUE(c.wait_for("jobs 25/")) << c.buffer;  // logged once 25 results are recorded
  kill(c.pid, SIGKILL);
  EXPECT_EQ(c.wait_exit(), 128 + SIGKILL) << c.buffer;
  const auto again = run_cmd(gen() + " discover --model " + model + " --output-dir " + dir + "/out --workers 2");
  ASSERT_EQ(again.code, 0) << again.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(again.output, m, std::regex(R"(jobs: (\d+) run, (\d+) resumed from the store)")))
      << again.output;
  const int run = std::stoi(m[1]), resumed = std::stoi(m[2]);
  EXPECT_GE(resumed, 25) << again.output;
  EXPECT_LT(resumed, 42) << again.output;
  EXPECT_EQ(run + resumed, 42) << again.output;
  // The same report as a discover that was never interrupted.
  const auto clean = run_cmd(gen() + " discover --model " + model + " --output-dir " + dir + "/clean --workers 2");
  ASSERT_EQ(clean.code, 0) << clean.output;
  const json a = read_json(dir + "/out/torq_gen_config_demo.json");
  const json b = read_json(dir + "/clean/torq_gen_config_demo.json");
  ASSERT_EQ(a["ops"].size(), b["ops"].size());
  for (auto& [id, op] : b["ops"].items()) {
    EXPECT_EQ(a["ops"][id]["recommended_executor"], op["recommended_executor"]) << id;
    for (const char* e : {"nss", "css", "host"})
      EXPECT_EQ(a["ops"][id]["executors"][e]["status"], op["executors"][e]["status"]) << id << " " << e;
  }
}

// ONEDNN_MAX_CPU_ISA gives the numbers of a CPU without AVX-512 (cpu_isa.h):
// a capped discover must compute them, not resume the uncapped results in
// the same output directory (or be resumed by an uncapped one); the cap is
// read case-blind, and every result names the ISA that computed it.
TEST(DiscoverCache, AnIsaCappedRunNeitherReusesNorIsReusedByAnUncappedOne) {
  const std::string dir = fresh_dir("isa_cap");
  const std::string model = dir + "/demo.onnx";
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + model).code, 0);
  const std::string cmd = gen() + " discover --model " + model + " --output-dir " + dir + "/out --workers 2";
  const std::regex counts(R"(jobs: (\d+) run, (\d+) resumed from the store, (\d+) from the cache)");
  auto run = [&](const std::string& env) {
    const auto r = run_cmd(env + cmd);
    EXPECT_EQ(r.code, 0) << r.output;
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.output, m, counts)) << r.output;
    return std::string(m[1]) + " run, " + std::string(m[2]) + " resumed, " + std::string(m[3]) + " cached";
  };
  auto toolchains = [&] {
    std::set<std::string> t;
    const auto rep = read_json(dir + "/out/torq_gen_config_demo.json");
    for (auto& [id, op] : rep["ops"].items()) t.insert(op["executors"]["host"]["toolchain"].get<std::string>());
    return t;
  };
  const std::string uncapped = torq::runner::toolchain_identity();  // this test runs uncapped
  EXPECT_EQ(run(""), "42 run, 0 resumed, 0 cached");
  EXPECT_EQ(toolchains(), std::set<std::string>{uncapped});
  EXPECT_EQ(run("ONEDNN_MAX_CPU_ISA=AVX2 "), "42 run, 0 resumed, 0 cached");
  const std::set<std::string> capped = toolchains();
  ASSERT_EQ(capped.size(), 1u);
  EXPECT_NE(capped.begin()->find(", avx2)"), std::string::npos) << *capped.begin();
  EXPECT_EQ(run("ONEDNN_MAX_CPU_ISA=avx2 "), "0 run, 42 resumed, 0 cached");
  EXPECT_EQ(run(""), "0 run, 42 resumed, 0 cached");
  EXPECT_EQ(toolchains(), std::set<std::string>{uncapped});
}

// After a rebuild that changed the engine, a discover into the same output
// directory computes again what the old engine computed: the store's
// results of another engine are not resumed (as the cache never serves
// them). The old engine is played by rewriting the stored host results'
// toolchain to another digest.
TEST(DiscoverCache, ResultsOfAnotherEngineAreNotResumed) {
  const std::string dir = fresh_dir("foreign_resume");
  const std::string model = dir + "/demo.onnx";
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + model).code, 0);
  const std::string cmd = gen() + " discover --model " + model + " --output-dir " + dir + "/out --workers 2";
  ASSERT_EQ(run_cmd(cmd).code, 0);
  const std::string older = "torq-sim-0123456789abcdef (oneDNN 2.6.3, avx512_core_bf16)";
  {
    auto store = torq::pipeline::Store::open(dir + "/out/.torq-store/db");
    const auto runs = store->result_runs();
    ASSERT_EQ(runs.size(), 1u);
    const std::string hash = torq::pipeline::ImportedModel::from_file(model)->hash();
    const auto layers = store->model_results(runs[0], hash);
    ASSERT_EQ(layers.size(), 14u);
    for (const auto& [layer, results] : layers)
      for (auto r : results)
        if (r.executor == torq::pipeline::Executor::kHost) {
          r.toolchain = older;
          store->merge_result(runs[0], hash, layer, r);
        }
  }
  const auto again = run_cmd(cmd);
  ASSERT_EQ(again.code, 0) << again.output;
  // The 14 host jobs come from this engine's cache (the first run filled it;
  // after a real rebuild they would run): not the older engine's results.
  EXPECT_NE(again.output.find("jobs: 0 run, 28 resumed from the store, 14 from the cache"), std::string::npos)
      << again.output;
  const auto rep = read_json(dir + "/out/torq_gen_config_demo.json");
  for (auto& [id, op] : rep["ops"].items())
    EXPECT_EQ(op["executors"]["host"]["toolchain"], torq::runner::toolchain_identity()) << id;
}

TEST(DiscoverTargets, CustomProfileReplacesTheBuiltinOneAndTyposAreLocated) {
  const std::string dir = fresh_dir("targets");
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  // An "nss" that accepts fp32 Conv only: a refined chip model a user might write.
  {
    std::ofstream(dir + "/nss_fp32.yaml") << "name: nss-fp32\n"
                                             "numerics: {float_type: f32}\n"
                                             "cost: {clock_mhz: 1000, slices: 2, macs_per_cycle_per_slice: 256,\n"
                                             "       eltwise_per_cycle: 64, dma_bytes_per_cycle: 64,\n"
                                             "       dispatch_overhead_cycles: 2000}\n"
                                             "ops:\n  Conv: {dtypes: [f32]}\n";
    std::ofstream(dir + "/targets.yaml") << "nss: nss_fp32.yaml\n";
    std::ofstream(dir + "/typo.yaml") << "nss: nss_fp32.yaml\nhots: host.yaml\n";
  }
  auto r = run_cmd(gen() + " discover --model " + dir + "/demo.onnx --output-dir " + dir + "/out --targets " + dir +
                   "/targets.yaml");
  ASSERT_EQ(r.code, 0) << r.output;
  json rep = read_json(dir + "/out/torq_gen_config_demo.json");
  EXPECT_EQ(rep["ops"]["Conv_conv1"]["executors"]["nss"]["status"], "success");
  EXPECT_EQ(rep["ops"]["Conv_conv1"]["recommended_executor"], "nss");
  EXPECT_EQ(rep["ops"]["Relu_relu1"]["executors"]["nss"]["status"], "error");
  auto t = run_cmd(gen() + " discover --model " + dir + "/demo.onnx --output-dir " + dir + "/out --targets " + dir +
                   "/typo.yaml");
  EXPECT_EQ(t.code, 2);
  EXPECT_NE(t.output.find("typo.yaml:2:1: unknown key 'hots' in targets (did you mean 'host'?)"), std::string::npos)
      << t.output;
}
