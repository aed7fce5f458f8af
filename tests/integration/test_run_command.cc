// torq-gen-config run through the real binaries: the whole model with every
// op on its assigned executor (from the report, else the compiler JSON),
// compared with the fp32 host reference; real workers, store and files.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "pipeline/core/sha256.h"
#include "tests/integration/models.h"
#include "tests/integration/proc.h"

using namespace torq::test;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

std::string gen() { return bin("torq-gen-config"); }

void write_json(const std::string& path, const json& j) { std::ofstream(path) << j.dump(2) << "\n"; }

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// The "Executors: nss N, css N, host N" line of a run's output, as counts.
std::map<std::string, int> executors_line(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex(R"(Executors: nss (\d+), css (\d+), host (\d+) \(of)"))) return {};
  return {{"nss", std::stoi(m[1])}, {"css", std::stoi(m[2])}, {"host", std::stoi(m[3])}};
}

// The "--- Full Model Comparison ---" block of a text, up to its blank line.
std::string full_model_block(const std::string& text) {
  const size_t at = text.find("--- Full Model Comparison ---");
  if (at == std::string::npos) return "";
  const size_t end = text.find("\n\n", at);
  return text.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
}

// Each test: its own directory with the demo model; out/ holds the files.
class RunCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("run_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::string model() const { return dir_ + "/demo.onnx"; }
  std::string out() const { return dir_ + "/out"; }
  std::string report() const { return out() + "/torq_gen_config_demo.json"; }
  std::string compiler() const { return out() + "/torq_gen_config_demo_compiler.json"; }
  void save_demo() { ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + model()).code, 0); }
  // Demo model, bf16 discovery (Conv etc. on nss, the rest on css).
  void discover_demo(const std::string& extra = "") {
    ASSERT_NO_FATAL_FAILURE(save_demo());
    const auto r = run_cmd(gen() + " discover -q --model " + model() + " --output-dir " + out() +
                           " --auto-convert-bf16" + extra);
    ASSERT_EQ(r.code, 0) << r.output;
  }
  ProcResult run(const std::string& extra = "") {
    return run_cmd(gen() + " run --model " + model() + " --output-dir " + out() + " --auto-convert-bf16" + extra);
  }
  std::string dir_;
};

}  // namespace

TEST_F(RunCommand, WithoutReportOrCompilerJsonExitsTwoAndNamesTheDiscoverCommand) {
  ASSERT_NO_FATAL_FAILURE(save_demo());
  fs::create_directories(out());
  const auto r = run();
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("run discovery first"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("torq-gen-config discover --model " + model() + " --output-dir " + out() +
                          " --auto-convert-bf16"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(report()));
  EXPECT_FALSE(fs::exists(compiler()));
  // Nothing else either: no store, no copy of the model left behind.
  EXPECT_TRUE(fs::is_empty(out()));
}

// The workers' cache holds the model under its content hash, written in the
// import's hashing pass; no temporary copy stays beside the output.
TEST_F(RunCommand, CachesTheModelUnderItsHashAndLeavesNoTemporaryCopy) {
  ASSERT_NO_FATAL_FAILURE(discover_demo());
  fs::remove_all(out() + "/.torq-store");
  const auto r = run();
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<std::string> cached;
  for (const auto& e : fs::directory_iterator(out() + "/.torq-store/models")) {
    // The fetch claims (worker/runner/cache_claim.h): empty lock files.
    if (e.path().filename() == ".fetching") {
      for (const auto& claim : fs::directory_iterator(e.path())) EXPECT_EQ(fs::file_size(claim.path()), 0u);
      continue;
    }
    cached.push_back(e.path().filename());
  }
  // The bf16 model, and the fp32 original the worker fetched for the
  // end-to-end comparison.
  ASSERT_EQ(cached.size(), 2u);
  for (const auto& c : cached)
    EXPECT_EQ(c, torq::pipeline::sha256_hex(slurp(out() + "/.torq-store/models/" + c)) + ".onnx");
  for (const auto& e : fs::directory_iterator(out()))
    EXPECT_NE(e.path().filename().string().rfind("import.", 0), 0u) << e.path();
}

// Temporary files a killed discover, run or worker left mid-write (their
// pid no longer runs: <name>.tmp.<pid>, pipeline/base/temp_files.h) are
// removed by the next discover or run; those of a live process stay.
TEST_F(RunCommand, TemporaryFilesOfDeadProcessesAreSweptAndLiveOnesKept) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  const std::string dead = std::to_string(child), live = std::to_string(getpid());
  const std::string models = out() + "/.torq-store/models";
  fs::create_directories(models);
  auto touch = [](const std::string& path) { std::ofstream(path) << "partial"; };
  const std::vector<std::string> names{"import.tmp." + dead, "x.onnx.tmp." + dead, "import.tmp." + live, "notes.tmp"};
  for (const auto& n : names) touch(models + "/" + n);
  touch(out() + "/import.tmp." + dead);
  touch(out() + "/import.tmp." + live);
  touch(out() + "/torq_gen_config_demo.json.tmp." + dead);  // a report a killed discover was writing
  touch(out() + "/notes.tmp.txt");                          // not a name of ours
  ASSERT_NO_FATAL_FAILURE(discover_demo());
  EXPECT_FALSE(fs::exists(models + "/import.tmp." + dead));
  EXPECT_FALSE(fs::exists(models + "/x.onnx.tmp." + dead));
  EXPECT_TRUE(fs::exists(models + "/import.tmp." + live));
  EXPECT_TRUE(fs::exists(models + "/notes.tmp"));
  EXPECT_FALSE(fs::exists(out() + "/torq_gen_config_demo.json.tmp." + dead));  // discover's output dir too
  EXPECT_FALSE(fs::exists(out() + "/import.tmp." + dead));
  touch(out() + "/import.tmp." + dead);
  const auto r = run();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("torq: removed " + out() + "/import.tmp." + dead +
                          ": the temporary file of process " + dead + ", which no longer runs"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out() + "/import.tmp." + dead));
  EXPECT_TRUE(fs::exists(out() + "/import.tmp." + live));
  EXPECT_TRUE(fs::exists(out() + "/notes.tmp.txt"));
}

TEST_F(RunCommand, AddsFullModelResultToTheReportAndNeverRewritesOps) {
  ASSERT_NO_FATAL_FAILURE(discover_demo());
  const json before = read_json(report());
  auto r = run();
  ASSERT_EQ(r.code, 0) << r.output;
  r = run();  // a second run replaces the block, it does not add one
  ASSERT_EQ(r.code, 0) << r.output;
  const json rep = read_json(report());
  EXPECT_EQ(rep["ops"], before["ops"]);
  ASSERT_TRUE(rep.contains("full_model")) << rep.dump(2);
  const json& fm = rep["full_model"];
  EXPECT_EQ(fm["passed"], true);
  EXPECT_EQ(fm["layers"], rep["ops"].size());
  int placed = 0;
  for (const char* e : {"nss", "css", "host"}) placed += fm["executor_counts"][e].get<int>();
  EXPECT_EQ(placed, static_cast<int>(rep["ops"].size()));
  // Counts are what the report recommends (nothing was left to the compiler).
  std::map<std::string, int> recommended;
  for (const auto& [id, op] : rep["ops"].items()) recommended[op["recommended_executor"].get<std::string>()]++;
  for (const auto& [e, n] : recommended) EXPECT_EQ(fm["executor_counts"][e], n) << e;
  EXPECT_TRUE(fm["compiler_decided"].empty());
  ASSERT_TRUE(fm["metrics"]["pcc"].is_number()) << fm.dump(2);
  EXPECT_GT(fm["metrics"]["pcc"].get<double>(), 0.99);
  EXPECT_FALSE(fm["worker"].get<std::string>().empty());
  const json& t = fm["simulated_time_ms"];
  for (const char* k : {"nss", "css", "host", "total"}) EXPECT_TRUE(t[k].is_number()) << k;
  EXPECT_GT(t["total"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(t["host"].get<double>(), 0.0);  // nothing on host
  const std::string text = rep["final_report_text"];
  EXPECT_EQ(count_of(text, "--- Full Model Comparison ---"), 1u) << text;
  const std::string block = full_model_block(text);
  for (const char* line : {"Max relative difference:", "Max absolute difference:", "Number of differences:"})
    EXPECT_EQ(count_of(block, line), 1u) << line << "\n" << block;
  EXPECT_NE(r.output.find(block), std::string::npos) << "stdout:\n" << r.output << "\nreport block:\n" << block;
  EXPECT_NE(text.find("Per-Layer Status"), std::string::npos);
}

TEST_F(RunCommand, ReportIsTheSourceOfTruthAndRegeneratesTheCompilerJson) {
  ASSERT_NO_FATAL_FAILURE(discover_demo());
  const json discovered = read_json(compiler());
  json edited = discovered;
  const std::string loc = edited["op_assignments"].begin().key();
  ASSERT_NE(edited["op_assignments"][loc]["executor"], "host");
  edited["op_assignments"][loc]["executor"] = "host";
  write_json(compiler(), edited);
  auto r = run();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(read_json(compiler()), discovered);
  EXPECT_EQ(executors_line(r.output)["host"], 0) << r.output;  // the hand edit was not used
  fs::remove(compiler());
  r = run();
  ASSERT_EQ(r.code, 0) << r.output;
  ASSERT_TRUE(fs::exists(compiler()));
  EXPECT_EQ(read_json(compiler()), discovered);
}

// Local workers use the model cache without re-hashing it (torq-worker
// --trusted-cache): what they find there must be what this command wrote,
// not what an earlier one left. Each cached file is named by its content's
// SHA-256; a corrupt one from an earlier run is replaced, and the run is
// the same as with a good one.
TEST_F(RunCommand, ACorruptModelCacheFromAnEarlierRunIsReplaced) {
  ASSERT_NO_FATAL_FAILURE(discover_demo());
  const std::string cache = out() + "/.torq-store/models";
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(cache)) files.push_back(e.path().string());
  ASSERT_EQ(files.size(), 1u);  // the model, no leftover temporary file
  const std::string good = slurp(files[0]);
  EXPECT_EQ(fs::path(files[0]).filename().string(), torq::pipeline::sha256_hex(good) + ".onnx");
  auto r1 = run(" --recompute-cache");
  ASSERT_EQ(r1.code, 0) << r1.output;
  const json first = read_json(report())["full_model"];
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << good.substr(0, good.size() / 2) << "garbage";
  auto r2 = run(" --recompute-cache");
  ASSERT_EQ(r2.code, 0) << r2.output;
  EXPECT_TRUE(slurp(files[0]) == good) << files[0] << ": not replaced by the model";
  const json second = read_json(report())["full_model"];
  EXPECT_EQ(second["passed"], true);
  EXPECT_EQ(second["metrics"], first["metrics"]);
  EXPECT_EQ(second["executor_counts"], first["executor_counts"]);
}

TEST_F(RunCommand, CompilerJsonAloneIsUsedAsItIsAndKeepsHandEdits) {
  ASSERT_NO_FATAL_FAILURE(discover_demo());
  auto r = run();
  ASSERT_EQ(r.code, 0) << r.output;
  const auto before = executors_line(r.output);
  ASSERT_EQ(before.size(), 3u) << r.output;
  fs::remove(report());
  json c = read_json(compiler());
  std::string loc;
  for (const auto& [l, a] : c["op_assignments"].items())
    if (a["executor"] != "host") {
      loc = l;
      break;
    }
  ASSERT_FALSE(loc.empty());
  const std::string was = c["op_assignments"][loc]["executor"];
  c["op_assignments"][loc]["executor"] = "host";
  write_json(compiler(), c);
  const std::string bytes = slurp(compiler());
  r = run();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("assignment from " + compiler()), std::string::npos) << r.output;
  const auto after = executors_line(r.output);
  EXPECT_EQ(after.at("host"), before.at("host") + 1) << r.output;
  EXPECT_EQ(after.at(was), before.at(was) - 1) << r.output;
  EXPECT_EQ(slurp(compiler()), bytes);
  EXPECT_FALSE(fs::exists(report()));  // run does not invent a report
}

TEST_F(RunCommand, NullAssignmentIsPlacedByTheCompiler) {
  ASSERT_NO_FATAL_FAILURE(discover_demo());
  const auto e = run_cmd(gen() + " edit " + report() + " --layer Relu_relu1 --executor null");
  ASSERT_EQ(e.code, 0) << e.output;
  const auto r = run();
  ASSERT_EQ(r.code, 0) << r.output;
  // bf16 Relu succeeds on nss (the report says so): the compiler's first choice.
  EXPECT_NE(r.output.find("Placed by the compiler (no assignment): Relu_relu1->nss\n"), std::string::npos)
      << r.output;
  const json rep = read_json(report());
  EXPECT_TRUE(rep["ops"]["Relu_relu1"]["recommended_executor"].is_null());
  const json expected = json::array({{{"layer", "Relu_relu1"}, {"executor", "nss"}}});
  EXPECT_EQ(rep["full_model"]["compiler_decided"], expected);
  const json c = read_json(compiler());
  EXPECT_FALSE(c["op_assignments"].contains(rep["ops"]["Relu_relu1"]["mlir_location"].get<std::string>()));
}

// Converted with rounding to nearest, the reference differs from the nss,
// which truncates: the run's tolerance decides.
TEST_F(RunCommand, ReportToleranceDecidesPassOrFail) {
  ASSERT_NO_FATAL_FAILURE(discover_demo(" --bf16-rounding rne"));
  auto set_tolerance = [&](double rel, double abs) {
    json rep = read_json(report());
    rep["tolerance"] = {{"max_relative_diff", rel}, {"max_absolute_diff", abs}};
    write_json(report(), rep);
  };
  set_tolerance(1e-9, 1e-9);
  auto r = run(" --bf16-rounding rne");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("Rule: relaxed tolerance"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Result: FAILED"), std::string::npos) << r.output;
  json rep = read_json(report());
  EXPECT_EQ(rep["full_model"]["passed"], false);
  EXPECT_EQ(rep["tolerance"]["max_relative_diff"], 1e-9);  // kept
  set_tolerance(1.0, 100.0);
  r = run(" --bf16-rounding rne");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("Rule: relaxed tolerance max_relative_diff 1, max_absolute_diff 100"), std::string::npos)
      << r.output;
  rep = read_json(report());
  EXPECT_EQ(rep["full_model"]["passed"], true);
  EXPECT_EQ(count_of(rep["final_report_text"].get<std::string>(), "--- Full Model Comparison ---"), 1u);
}

TEST_F(RunCommand, OpNoExecutorAcceptsFailsTheRun) {
  const std::string m = dir_ + "/m.onnx";
  save_critical_model(m);
  const auto d = run_cmd(gen() + " discover -q --model " + m + " --output-dir " + out());
  ASSERT_EQ(d.code, 1) << d.output;  // critical failure: LpNormalization
  const auto r = run_cmd(gen() + " run --model " + m + " --output-dir " + out());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("no executor accepts it"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Result: FAILED"), std::string::npos) << r.output;
  const json rep = read_json(out() + "/torq_gen_config_m.json");
  EXPECT_EQ(rep["full_model"]["passed"], false);
  EXPECT_EQ(rep["full_model"]["status"], "error");
  EXPECT_NE(rep["full_model"]["error_message"].get<std::string>().find("LpNormalization"), std::string::npos)
      << rep["full_model"].dump(2);
}

TEST_F(RunCommand, DebugIrAnnotatesEachOperatorWithItsExecutor) {
  ASSERT_NO_FATAL_FAILURE(discover_demo());
  const std::string ir = dir_ + "/ir";
  const auto r = run(" --debug-ir " + ir);
  ASSERT_EQ(r.code, 0) << r.output;
  const json rep = read_json(report());
  std::vector<std::string> ids, expected;
  for (const auto& [id, op] : rep["ops"].items()) {
    ids.push_back(id);
    expected.push_back(op["recommended_executor"]);
  }
  std::istringstream mlir(slurp(ir + "/demo.torch.mlir"));
  std::vector<std::string> annotated;
  const std::regex attr(R"(torq-executor = "([^"]*)\")");
  for (std::string line; std::getline(mlir, line);) {
    const size_t n = count_of(line, "torq-executor = \"");
    // Initializers and Constant nodes are onnx.Constant operators of the
    // import: no layer, no executor.
    if (line.find("torch.operator") == std::string::npos || line.find("\"onnx.Constant\"") != std::string::npos) {
      EXPECT_EQ(n, 0u) << line;
      continue;
    }
    ASSERT_EQ(n, 1u) << line;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, attr)) << line;
    annotated.push_back(m[1]);
  }
  EXPECT_EQ(annotated, expected);
  std::istringstream table(slurp(ir + "/demo.executors.txt"));
  std::vector<std::string> rows;
  for (std::string line; std::getline(table, line);)
    if (!line.empty()) rows.push_back(line);
  ASSERT_EQ(rows.size(), ids.size() + 1) << slurp(ir + "/demo.executors.txt");
  for (size_t i = 0; i < ids.size(); ++i) {
    std::istringstream row(rows[i + 1]);
    std::string index, layer, op, executor;
    row >> index >> layer >> op >> executor;
    EXPECT_EQ(index, std::to_string(i)) << rows[i + 1];
    EXPECT_EQ(layer, ids[i]) << rows[i + 1];
    EXPECT_EQ(executor, expected[i]) << rows[i + 1];
  }
}

TEST_F(RunCommand, MissingModelOrCorruptReportExitTwoAndTouchNothing) {
  ASSERT_NO_FATAL_FAILURE(discover_demo());
  const auto m = run_cmd(gen() + " run --model " + dir_ + "/no-such.onnx --output-dir " + out());
  EXPECT_EQ(m.code, 2) << m.output;
  EXPECT_NE(m.output.find("no-such.onnx"), std::string::npos) << m.output;
  const std::string whole = slurp(report());
  { std::ofstream(report(), std::ios::binary) << whole.substr(0, whole.size() / 2); }
  const std::string truncated = slurp(report()), comp = slurp(compiler());
  const auto r = run();
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("torq_gen_config_demo.json"), std::string::npos) << r.output;
  EXPECT_EQ(slurp(report()), truncated);
  EXPECT_EQ(slurp(compiler()), comp);
}

TEST_F(RunCommand, SeedPassthroughTestsOneLayerExecutorPairAndRejectsUnknownArguments) {
  ASSERT_NO_FATAL_FAILURE(save_demo());
  // Seed case names are '<model>_layer_<OpType>_<node index>_<executor>'; `edit --list`
  // of the demo lists Relu_relu1 second (node index 1).
  const std::string disc = gen() + " discover --model " + model() + " --output-dir " + out();
  const auto r = run_cmd(disc + " -- -k \"demo_layer_Relu_1_css\" --recompute-cache");
  ASSERT_EQ(r.code, 0) << r.output;
  const json rep = read_json(report());
  ASSERT_EQ(rep["ops"]["Relu_relu1"]["_node_index"], 1);
  size_t tested = 0;
  for (const auto& [id, op] : rep["ops"].items()) {
    tested += op["executors"].size();
    if (id != "Relu_relu1") {
      EXPECT_TRUE(op["executors"].empty()) << id << ": " << op["executors"].dump();
    }
  }
  EXPECT_EQ(tested, 1u);
  const json& relu = rep["ops"]["Relu_relu1"]["executors"];
  ASSERT_TRUE(relu.contains("css")) << relu.dump();
  EXPECT_EQ(relu["css"]["status"], "success");
  const auto bad = run_cmd(disc + " -- --foo");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--foo"), std::string::npos) << bad.output;
}

// A bf16 MatMul on nss writes f32 (widened); the next layer on nss gets it
// in the model's bf16, so the chained run of all-nss layers passes.
TEST(RunWidenedOutputs, ANssMatMulFeedsTheNextNssOpInTheModelsType) {
  const std::string dir = fresh_dir("run-widened");
  save_matmul_relu_model(dir + "/mm.onnx");
  auto d = run_cmd(gen() + " discover --model " + dir + "/mm.onnx -o " + dir + "/out --auto-convert-bf16 -q");
  ASSERT_EQ(d.code, 0) << d.output;
  const json rep = read_json(dir + "/out/torq_gen_config_mm.json");
  for (auto& [id, op] : rep["ops"].items()) EXPECT_EQ(op["recommended_executor"], "nss") << id;
  auto r = run_cmd(gen() + " run --model " + dir + "/mm.onnx -o " + dir + "/out --auto-convert-bf16");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(executors_line(r.output), (std::map<std::string, int>{{"nss", 3}, {"css", 0}, {"host", 0}})) << r.output;
  EXPECT_NE(r.output.find("Result: PASSED"), std::string::npos) << r.output;
}
