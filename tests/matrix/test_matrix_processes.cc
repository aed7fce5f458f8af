// Matrix specs end to end (issue #5): torq-coordinator --spec with real
// worker processes, real ONNX files (the demo CNN the build makes, a
// single-op model from Debian's libonnx-testdata that no executor runs, a
// corrupt file), a real RocksDB store; outcomes, exit codes, JUnit read back
// by an independent XML parser (Python's ElementTree), summary.json,
// suggest, validate, collect-only with -k / -m / presets.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tests/fleet/fleet_harness.h"
#include "tests/matrix/matrix_helpers.h"

using namespace torq::fleet_test;
using nlohmann::json;

namespace {

const std::string kUnsupportedOp = "/usr/share/libonnx-testdata/data/node/test_mvn/model.onnx";

class MatrixRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("matrix-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ + "/models");
    auto [code, out] = run({bin("torq-sim"), "demo", "--save", dir_ + "/models/demo.onnx"}, dir_ + "/demo.log");
    ASSERT_EQ(code, 0) << out;
    ASSERT_TRUE(std::filesystem::exists(kUnsupportedOp)) << "Debian package libonnx-testdata (ci/install-deps.sh)";
    std::filesystem::create_directories(dir_ + "/models/test_mvn");
    std::filesystem::copy_file(kUnsupportedOp, dir_ + "/models/test_mvn/model.onnx");
    write(dir_ + "/models/broken.onnx", "this is not a protobuf, and not an ONNX model\n");
    write(dir_ + "/spec.yaml",
          "models:\n"
          "  - models/demo.onnx\n"
          "  - models/test_mvn/model.onnx\n"
          "  - {path: models/broken.onnx, name: broken}\n"
          "variants: [fp32, bf16]\n"
          "modes: [discover, run]\n"
          "test_config: [cfg/a.yaml, cfg/b.yaml]\n"
          "presets:\n"
          "  push: {m: push, k: \"not broken\"}\n");
    write(dir_ + "/cfg/a.yaml",
          "test_config:\n"
          "  demo-fp32-sim-discover: {status: EXPECTED_PASSING, markers: [push]}\n"
          "  demo-bf16-sim-discover:\n"
          "    status: KNOWN_FAILURE_XFAIL\n"
          "    reason: \"stale: MaxPool used to have no bf16 executor\"\n"
          "    markers: [push]\n"
          "  test_mvn-*-sim-discover: {status: KNOWN_FAILURE_XFAIL, reason: no MeanVarianceNormalization kernel, markers: [push]}\n"
          "  \"*-sim-run\": {status: NOT_SUPPORTED_SKIP, reason: run mode later}\n");
    write(dir_ + "/cfg/b.yaml",
          "test_config:\n"
          "  broken-fp32-sim-discover: {status: KNOWN_FAILURE_XFAIL, bringup_status: FAILED_FE_COMPILATION}\n"
          "placeholders:\n"
          "  yolov8n-fp32-sim-discover: {reason: not exported yet, markers: [nightly]}\n");
  }
  std::vector<std::string> coordinator(const std::string& out, std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {bin("torq-coordinator"), "--spec", dir_ + "/spec.yaml", "--export", dir_ + "/" + out,
                                  "--local-workers", "2", "--heartbeat-ms", "200"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::string dir_;
};

}  // namespace

TEST_F(MatrixRun, EveryOutcomeAndTheExitCodeComeFromTheRun) {
  auto [code, out] = run(coordinator("out"), dir_ + "/run.log");
  // broken-bf16 (UNSPECIFIED, import fails) failed and demo-bf16 xpassed:
  // both unexpected.
  EXPECT_EQ(code, 1) << out;
  const json sum = read_json(dir_ + "/out/summary.json");
  EXPECT_EQ(sum["counts"], json({{"passed", 1}, {"failed", 1}, {"skipped", 7}, {"xfailed", 3}, {"xpassed", 1}}))
      << sum.dump(2);
  EXPECT_EQ(sum["exit_code"], 1);
  auto t = tests_by_id(sum);
  ASSERT_EQ(t.size(), 13u);  // 3 models x 2 variants x 2 modes + 1 placeholder
  EXPECT_EQ(t["demo-fp32-sim-discover"]["outcome"], "passed");
  EXPECT_EQ(t["demo-fp32-sim-discover"]["bringup_status"], "PASSED");
  EXPECT_EQ(t["demo-fp32-sim-discover"]["layers"], 14);
  EXPECT_EQ(t["demo-fp32-sim-discover"]["executor_distribution"], json({{"css", 14}}));
  EXPECT_GE(t["demo-fp32-sim-discover"]["pcc"].get<double>(), 0.999);
  EXPECT_EQ(t["demo-bf16-sim-discover"]["outcome"], "xpassed");
  // bf16: nss runs most layers, Softmax goes to css.
  EXPECT_GT(t["demo-bf16-sim-discover"]["executor_distribution"]["nss"].get<int>(), 0);
  EXPECT_GT(t["demo-bf16-sim-discover"]["executor_distribution"]["nss"].get<int>(),
            t["demo-bf16-sim-discover"]["executor_distribution"]["css"].get<int>());
  EXPECT_GE(t["demo-bf16-sim-discover"]["executor_distribution"]["css"].get<int>(), 1);
  // No executor runs MeanVarianceNormalization: a critical failure at compile time.
  for (const char* id : {"test_mvn-fp32-sim-discover", "test_mvn-bf16-sim-discover"}) {
    EXPECT_EQ(t[id]["outcome"], "xfailed") << id;
    EXPECT_EQ(t[id]["bringup_status"], "FAILED_COMPILATION") << id;
    EXPECT_EQ(t[id]["critical_failures"], 1) << id;
    EXPECT_NE(t[id]["message"].get<std::string>().find("MeanVarianceNormalization"), std::string::npos) << t[id].dump();
  }
  EXPECT_EQ(t["broken-fp32-sim-discover"]["outcome"], "xfailed");
  EXPECT_EQ(t["broken-bf16-sim-discover"]["outcome"], "failed");
  EXPECT_EQ(t["broken-bf16-sim-discover"]["bringup_status"], "FAILED_FE_COMPILATION");
  EXPECT_EQ(t["broken-bf16-sim-discover"]["failed_step"], "import");
  EXPECT_EQ(t["demo-fp32-sim-run"]["outcome"], "skipped");
  EXPECT_EQ(t["yolov8n-fp32-sim-discover"]["outcome"], "skipped");
  EXPECT_EQ(t["yolov8n-fp32-sim-discover"]["bringup_status"], "NOT_STARTED");
  // Per-test report JSONs for view/edit, readable as reports.
  const json rep = read_json(dir_ + "/out/reports/demo-bf16-sim-discover/torq_gen_config_demo.json");
  EXPECT_EQ(rep["ops"].size(), 14u);
  EXPECT_EQ(rep["ops"]["Softmax_probabilities"]["recommended_executor"], "css");  // no Softmax on nss
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/out/reports/demo-bf16-sim-discover/torq_gen_config_demo_compiler.json"));
  // JUnit, read back by an independent parser.
  const std::string junit = junit_via_python(dir_ + "/out/junit.xml");
  EXPECT_EQ(junit.substr(0, junit.find('\n')), "13 1 10") << junit;  // failures: failed; skipped: skipped + xfailed
  EXPECT_NE(junit.find("demo-fp32-sim-discover|-|passed|PASSED"), std::string::npos) << junit;
  EXPECT_NE(junit.find("broken-bf16-sim-discover|failure|failed|FAILED_FE_COMPILATION"), std::string::npos) << junit;
  EXPECT_NE(junit.find("test_mvn-bf16-sim-discover|skipped|xfailed|FAILED_COMPILATION"), std::string::npos) << junit;
  EXPECT_NE(junit.find("demo-bf16-sim-discover|-|xpassed|PASSED"), std::string::npos) << junit;
  // The HTML report is one file with no external reference.
  const std::string html = slurp(dir_ + "/out/report.html");
  EXPECT_NE(html.find("demo-bf16-sim-discover"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  // The suggested edits: promote the xpass; the unlisted failing test added as xfail.
  const std::string patch = slurp(dir_ + "/out/suggested.yaml");
  EXPECT_NE(patch.find("  demo-bf16-sim-discover:\n    status: EXPECTED_PASSING\n"), std::string::npos) << patch;
  EXPECT_NE(patch.find("  broken-bf16-sim-discover:\n    status: KNOWN_FAILURE_XFAIL\n    bringup_status: "
                       "FAILED_FE_COMPILATION\n"),
            std::string::npos)
      << patch;
}

TEST_F(MatrixRun, StrictXfailPresetsAndResumeFromTheStore) {
  // The push preset (markers push, not broken): demo and test_mvn only.
  auto [code, out] = run(coordinator("push", {"--preset", "push"}), dir_ + "/push.log");
  EXPECT_EQ(code, 1) << out;  // the demo-bf16 xpass
  json sum = read_json(dir_ + "/push/summary.json");
  EXPECT_EQ(sum["counts"], json({{"passed", 1}, {"failed", 0}, {"skipped", 0}, {"xfailed", 2}, {"xpassed", 1}}));
  EXPECT_EQ(sum["run"]["deselected"], 9);
  // The same selection on the same store: the run resumes, nothing is
  // recomputed, the outcomes are the same.
  auto [code1, out1] = run(coordinator("push", {"--preset", "push"}), dir_ + "/push1.log");
  EXPECT_EQ(code1, 1) << out1;
  EXPECT_NE(out1.find("finished: 0 run on the fleet, "), std::string::npos) << out1;
  EXPECT_EQ(read_json(dir_ + "/push/summary.json")["counts"], sum["counts"]);
  // -k excluding the xpass: every outcome expected, exit 0.
  auto [code2, out2] = run(coordinator("push", {"--preset", "push", "-k", "not (demo and bf16)"}), dir_ + "/push2.log");
  EXPECT_EQ(code2, 0) << out2;
  // --strict-xfail: the xpass is a failure.
  auto [code3, out3] = run(coordinator("strict", {"-k", "demo-bf16-sim-discover", "--strict-xfail"}),
                           dir_ + "/strict.log");
  EXPECT_EQ(code3, 1) << out3;
  sum = read_json(dir_ + "/strict/summary.json");
  EXPECT_EQ(sum["counts"]["failed"], 1);
  EXPECT_EQ(sum["counts"]["xpassed"], 0);
  EXPECT_EQ(sum["tests"][0]["outcome"], "failed");
  EXPECT_NE(sum["tests"][0]["message"].get<std::string>().find("xpassed (strict)"), std::string::npos);
}

TEST_F(MatrixRun, CollectOnlyListsTheSelectedIds) {
  auto [code, out] = run({bin("torq-coordinator"), "--spec", dir_ + "/spec.yaml", "--collect-only", "-k",
                          "(demo or mvn) and not run", "-m", "push and not nightly"},
                         dir_ + "/collect.log");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out,
            "demo-fp32-sim-discover  EXPECTED_PASSING  [push]\n"
            "demo-bf16-sim-discover  KNOWN_FAILURE_XFAIL  [push]\n"
            "test_mvn-fp32-sim-discover  KNOWN_FAILURE_XFAIL  [push]\n"
            "test_mvn-bf16-sim-discover  KNOWN_FAILURE_XFAIL  [push]\n"
            "4 tests collected, 9 deselected\n");
  auto [bad, bout] = run({bin("torq-coordinator"), "--spec", dir_ + "/spec.yaml", "--collect-only", "-k", "demo and ("},
                         dir_ + "/collect-bad.log");
  EXPECT_EQ(bad, 2);
  EXPECT_NE(bout.find("-k 'demo and (': col"), std::string::npos) << bout;
  auto [np, nout] = run({bin("torq-coordinator"), "--spec", dir_ + "/spec.yaml", "--preset", "nightyl"},
                        dir_ + "/preset-bad.log");
  EXPECT_EQ(np, 2);
  EXPECT_NE(nout.find("--preset 'nightyl': no such preset"), std::string::npos) << nout;
  EXPECT_NE(nout.find("(it defines: push)"), std::string::npos) << nout;
}

TEST_F(MatrixRun, ValidateAndSuggestCommands) {
  auto [ok, okout] = run({bin("torq-coordinator"), "validate", dir_ + "/spec.yaml"}, dir_ + "/v1.log");
  EXPECT_EQ(ok, 0) << okout;
  EXPECT_NE(okout.find("13 tests (1 placeholders), 6 config entries in 2 files, 1 presets"), std::string::npos)
      << okout;
  // A typo in a third file given on the command line: its exact place.
  write(dir_ + "/cfg/c.yaml", "test_config:\n  demo-fp32-sim-run:\n    stauts: EXPECTED_PASSING\n");
  auto [bad, badout] = run({bin("torq-coordinator"), "validate", dir_ + "/spec.yaml", dir_ + "/cfg/c.yaml"},
                           dir_ + "/v2.log");
  EXPECT_EQ(bad, 1);
  EXPECT_NE(badout.find(dir_ + "/cfg/c.yaml:3:5: unknown key 'stauts'"), std::string::npos) << badout;
  EXPECT_NE(badout.find("did you mean 'status'"), std::string::npos) << badout;
  // An ID matching no test, and the same ID in two files.
  write(dir_ + "/cfg/c.yaml", "test_config:\n  demo-fp16-sim-discover: {status: EXPECTED_PASSING}\n");
  auto [nomatch, nmout] = run({bin("torq-coordinator"), "validate", dir_ + "/spec.yaml", dir_ + "/cfg/c.yaml"},
                              dir_ + "/v3.log");
  EXPECT_EQ(nomatch, 1);
  EXPECT_NE(nmout.find(dir_ + "/cfg/c.yaml:2:3:"), std::string::npos) << nmout;
  EXPECT_NE(nmout.find("did you mean 'demo-fp32-sim-discover'"), std::string::npos) << nmout;
  write(dir_ + "/cfg/c.yaml", "test_config:\n  broken-fp32-sim-discover: {status: EXPECTED_PASSING}\n");
  auto [dup, dupout] = run({bin("torq-coordinator"), "validate", dir_ + "/spec.yaml", dir_ + "/cfg/c.yaml"},
                           dir_ + "/v4.log");
  EXPECT_EQ(dup, 1);
  EXPECT_NE(dupout.find(dir_ + "/cfg/c.yaml:2:3: duplicate test ID 'broken-fp32-sim-discover' (first at " + dir_ +
                        "/cfg/b.yaml:2:3)"),
            std::string::npos)
      << dupout;

  // suggest from a run's summary: the patch a human applies, itself a valid config file.
  auto [code, out] = run(coordinator("out", {"-k", "demo and discover"}), dir_ + "/run.log");
  EXPECT_EQ(code, 1) << out;
  auto [sg, sgout] = run({bin("torq-coordinator"), "suggest", "--spec", dir_ + "/spec.yaml", "--summary",
                          dir_ + "/out/summary.json", "-o", dir_ + "/patch.yaml"},
                         dir_ + "/suggest.log");
  EXPECT_EQ(sg, 0) << sgout;
  const std::string patch = slurp(dir_ + "/patch.yaml");
  EXPECT_NE(patch.find("# xpassed: KNOWN_FAILURE_XFAIL but passed; promote to EXPECTED_PASSING"), std::string::npos)
      << patch;
  EXPECT_NE(patch.find("  demo-bf16-sim-discover:\n    status: EXPECTED_PASSING\n"), std::string::npos) << patch;
  EXPECT_EQ(patch.find("reason:"), std::string::npos) << patch;  // the stale reason is dropped
  auto [pv, pvout] = run({bin("torq-coordinator"), "validate", dir_ + "/patch.yaml"}, dir_ + "/v5.log");
  EXPECT_EQ(pv, 0) << pvout;
  // Applied (replacing the xfail entry), the config matches the run.
  write(dir_ + "/cfg/a.yaml",
        "test_config:\n" + patch.substr(patch.find("test_config:\n") + 13) +
            "  test_mvn-*-sim-discover: {status: KNOWN_FAILURE_XFAIL, reason: no MeanVarianceNormalization kernel, markers: [push]}\n"
            "  \"*-sim-run\": {status: NOT_SUPPORTED_SKIP, reason: run mode later}\n");
  auto [code2, out2] = run(coordinator("out2", {"-k", "demo and discover"}), dir_ + "/run2.log");
  EXPECT_EQ(code2, 0) << slurp(dir_ + "/cfg/a.yaml") << out2;
}

// Two model entries whose files hold the same bytes test one model: their
// discover and run tests share one unit (prepared and run once), and every
// one of the four tests has its run and its own report files.
TEST(MatrixConfigs, TwoEntriesOfTheSameBytesShareOneUnitAndEveryTestReports) {
  const std::string dir = fresh_dir("matrix-same-bytes");
  std::filesystem::create_directories(dir + "/models");
  auto [dc, dout] = run({bin("torq-sim"), "demo", "--save", dir + "/models/a.onnx"}, dir + "/demo.log");
  ASSERT_EQ(dc, 0) << dout;
  std::filesystem::copy_file(dir + "/models/a.onnx", dir + "/models/b.onnx");
  write(dir + "/spec.yaml", "models: [models/a.onnx, models/b.onnx]\nvariants: [fp32]\nmodes: [discover, run]\n");
  auto [code, out] = run({bin("torq-coordinator"), "--spec", dir + "/spec.yaml", "--local-workers", "2", "--export",
                          dir + "/out"},
                         dir + "/run.log");
  ASSERT_EQ(code, 0) << out;
  size_t prepared = 0;
  for (size_t at = 0; (at = out.find("] prepared unit ", at)) != std::string::npos; ++at) ++prepared;
  EXPECT_EQ(prepared, 1u) << out;
  auto t = tests_by_id(read_json(dir + "/out/summary.json"));
  for (const char* id : {"a-fp32-sim-discover", "a-fp32-sim-run", "b-fp32-sim-discover", "b-fp32-sim-run"}) {
    ASSERT_TRUE(t.count(id)) << id << out;
    EXPECT_EQ(t[id]["outcome"], "passed") << id << t[id];
    EXPECT_EQ(t[id]["ran"], true) << id;
    EXPECT_EQ(t[id]["layers"], 14) << id;
    ASSERT_TRUE(t[id]["report"].is_string()) << id << t[id];
    const std::string report = t[id]["report"].get<std::string>();
    EXPECT_NE(report.find(std::string("/reports/") + id + "/"), std::string::npos) << report;
    EXPECT_EQ(read_json(report)["ops"].size(), 14u) << report;
  }
}

TEST(MatrixConfigs, QuickstartRunsOnTheBuiltDemoModel) {
  const std::string dir = fresh_dir("matrix-quickstart");
  const std::string spec = std::string(TORQ_SOURCE_DIR) + "/configs/quickstart.yaml";
  auto [code, out] = run({bin("torq-coordinator"), "--spec", spec, "--local-workers", "2", "--export", dir + "/out"},
                         dir + "/run.log");
  // The spec names ../build/models/demo.onnx (the build of ci/build.sh).
  ASSERT_EQ(code, 0) << out;
  const json sum = read_json(dir + "/out/summary.json");
  EXPECT_EQ(sum["counts"], json({{"passed", 2}, {"failed", 0}, {"skipped", 0}, {"xfailed", 0}, {"xpassed", 0}}));
  EXPECT_EQ(junit_via_python(dir + "/out/junit.xml").substr(0, 6), "2 0 0\n");
}

// A long run says where it is (issue 31): "[progress] torq-coordinator:
// <step> (N s)" on stderr at the interval ($TORQ_PROGRESS_MS here, 5 s by
// default, so the quick start above prints none): the tests it prepares,
// then the jobs done of the estimate.
TEST(MatrixConfigs, ASpecRunSaysWhereItIsAtTheProgressInterval) {
  const std::string dir = fresh_dir("matrix-progress");
  const std::string spec = std::string(TORQ_SOURCE_DIR) + "/configs/quickstart.yaml";
  setenv("TORQ_PROGRESS_MS", "5", 1);
  auto [code, out] = run({bin("torq-coordinator"), "--spec", spec, "--local-workers", "2", "--export", dir + "/out"},
                         dir + "/run.log");
  unsetenv("TORQ_PROGRESS_MS");
  ASSERT_EQ(code, 0) << out;
  // The phase, then the figures (issue 33): tests and jobs done, the rate, the ETA.
  const std::regex line(R"(\[progress\] torq-coordinator: (starting \(reading the spec, opening the store\)|)"
                        R"((preparing|running|exporting|done) \| tests [0-2]/2 \| jobs \d+/~?\d+( \(\d+%\))? \| )"
                        R"([0-9.]+ jobs/s \| ETA \S+) \(\d+ s\))");
  std::istringstream lines(out);
  int progress = 0, jobs = 0;
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind("[progress]", 0) != 0) continue;
    ++progress;
    EXPECT_TRUE(std::regex_match(l, line)) << l;
    if (l.find(": running | ") != std::string::npos) ++jobs;
  }
  // Starting two worker processes alone takes well over 5 ms.
  EXPECT_GE(jobs, 1) << out;
  EXPECT_GE(progress, jobs);
  auto [code2, out2] = run({bin("torq-coordinator"), "--spec", spec, "--local-workers", "2", "--export",
                            dir + "/out2"}, dir + "/run2.log");
  ASSERT_EQ(code2, 0) << out2;
  EXPECT_EQ(out2.find("[progress]"), std::string::npos) << out2;  // 5 s: a sub-second run says nothing
}

// One model on two targets of one run: the sim profile set whose nss is the
// css profile (fp32, general) keeps its own results, apart from sim's.
TEST_F(MatrixRun, ASimProfileSetTargetRunsItsProfilesAndKeepsItsOwnResults) {
  std::filesystem::copy_file(std::string(TORQ_SOURCE_DIR) + "/configs/targets/css.yaml",
                             dir_ + "/css-as-nss.yaml");
  write(dir_ + "/targets.yaml",
        "models: [models/demo.onnx]\n"
        "targets:\n"
        "  sim: {}\n"
        "  widenss: {profiles: {nss: css-as-nss.yaml}}\n");
  auto [code, out] = run({bin("torq-coordinator"), "--spec", dir_ + "/targets.yaml", "--export", dir_ + "/out",
                          "--local-workers", "2"},
                         dir_ + "/run.log");
  ASSERT_EQ(code, 0) << out;
  auto t = tests_by_id(read_json(dir_ + "/out/summary.json"));
  ASSERT_EQ(t.size(), 2u);
  // sim: the bf16-only NSS takes no fp32 layer; widenss: its nss runs all 14.
  EXPECT_EQ(t["demo-fp32-sim-discover"]["executor_distribution"], json({{"css", 14}}));
  EXPECT_EQ(t["demo-fp32-widenss-discover"]["executor_distribution"], json({{"nss", 14}}));
  const json sim = read_json(dir_ + "/out/reports/demo-fp32-sim-discover/torq_gen_config_demo.json");
  const json wide = read_json(dir_ + "/out/reports/demo-fp32-widenss-discover/torq_gen_config_demo.json");
  EXPECT_EQ(sim["ops"]["Conv_conv1"]["executors"]["nss"]["status"], "error");
  EXPECT_EQ(wide["ops"]["Conv_conv1"]["executors"]["nss"]["status"], "success");
}

TEST_F(MatrixRun, LocalWorkersThatAllExitAreAnErrorAndStaleOutputsAreGone) {
  write(dir_ + "/out/summary.json", "{\"stale\": true}\n");
  std::filesystem::remove(dir_ + "/gone.log");
  Proc p(coordinator("out", {"-k", "demo and discover"}), dir_ + "/gone.log", {"TORQ_WORKER_BIN=/bin/false"});
  auto code = p.wait(60000);
  ASSERT_TRUE(code) << p.output();
  EXPECT_EQ(*code, 2) << p.output();
  EXPECT_NE(p.output().find("every local worker exited before the run completed"), std::string::npos) << p.output();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/summary.json"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/junit.xml"));
}

// kill -9 of the coordinator in the middle of a matrix run: the restart
// with the same store finishes it without recomputing a finished job.
TEST_F(MatrixRun, CoordinatorKilledMidRunResumesWithoutRecomputing) {
  write(dir_ + "/slow.yaml", "models: [models/demo.onnx]\nvariants: [fp32, bf16]\ntest_config: [slow-cfg.yaml]\n");
  // The sleep executor compares nothing: these tests assert no pcc.
  write(dir_ + "/slow-cfg.yaml", "test_config:\n  demo-*-sim-discover: {assert_pcc: false}\n");
  const std::string ep = endpoint(free_port());
  auto coord_args = [&] {
    return std::vector<std::string>{bin("torq-coordinator"), "--spec", dir_ + "/slow.yaml", "--bind", ep,
                                    "--export", dir_ + "/out", "--heartbeat-ms", "200"};
  };
  Proc worker({bin("torq-worker"), "--connect", ep, "--id", "w0", "--cache", dir_ + "/cache", "--heartbeat-ms", "200",
               "--bench-executor", "sleep:40"},
              dir_ + "/worker.log");
  {
    Proc first(coord_args(), dir_ + "/first.log");
    ASSERT_TRUE(first.wait_for("jobs 25/86", 60000)) << first.output();
    first.signal(SIGKILL);
    EXPECT_EQ(first.wait(10000), 128 + SIGKILL);
  }
  Proc second(coord_args(), dir_ + "/second.log");
  auto code = second.wait(120000);
  ASSERT_TRUE(code) << second.output();
  EXPECT_EQ(*code, 0) << second.output();
  const std::string out = second.output();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("jobs +86 finished: (\\d+) run on the fleet, (\\d+) resumed")))
      << out;
  const int fleet = std::stoi(m[1]), resumed = std::stoi(m[2]);
  EXPECT_GE(resumed, 25) << out;
  EXPECT_EQ(fleet + resumed, 86) << out;  // 84 layer jobs + 2 assigned full-model runs
  EXPECT_EQ(read_json(dir_ + "/out/summary.json")["counts"]["passed"], 2);
  worker.signal(SIGTERM);
  EXPECT_EQ(worker.wait(30000), 0) << worker.output();
}

// SIGTERM in the middle of a matrix run: it stops, says STOPPED EARLY, writes
// no outcomes and exits 3, never 0: a CI job that was stopped is not green
// (issue 29).
TEST_F(MatrixRun, AStoppedRunExitsThreeAndWritesNoOutcomes) {
  write(dir_ + "/slow.yaml", "models: [models/demo.onnx]\nvariants: [fp32, bf16]\ntest_config: [slow-cfg.yaml]\n");
  write(dir_ + "/slow-cfg.yaml", "test_config:\n  demo-*-sim-discover: {assert_pcc: false}\n");
  const std::string ep = endpoint(free_port());
  Proc worker({bin("torq-worker"), "--connect", ep, "--id", "w0", "--cache", dir_ + "/cache", "--heartbeat-ms", "200",
               "--bench-executor", "sleep:400"},
              dir_ + "/worker.log");
  Proc coord({bin("torq-coordinator"), "--spec", dir_ + "/slow.yaml", "--bind", ep, "--export", dir_ + "/out",
              "--heartbeat-ms", "200", "--grace-s", "2"},
             dir_ + "/coord.log");
  ASSERT_TRUE(coord.wait_for("jobs 25/86", 60000)) << coord.output();
  coord.signal(SIGTERM);
  EXPECT_EQ(coord.wait(30000), 3) << coord.output();
  EXPECT_NE(coord.output().find("STOPPED EARLY"), std::string::npos) << coord.output();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/summary.json"));
  worker.signal(SIGTERM);
  EXPECT_EQ(worker.wait(30000), 0) << worker.output();
}

// The comparators judge the assigned full-model run: every layer on its
// recommended executor, chained, against the fp32 host reference. fp32 on
// css reproduces the reference exactly; bf16 on an nss that rounds to
// nearest (the reference truncates) does not (so a 1e-7 allclose fails it),
// and a crash of that run is a runtime failure.
TEST_F(MatrixRun, TheAssignedFullModelRunIsWhatTheComparatorsJudge) {
  std::string profile = slurp(std::string(TORQ_SOURCE_DIR) + "/configs/targets/nss.yaml");
  profile = std::regex_replace(profile, std::regex("rounding: truncate"), "rounding: rne");
  write(dir_ + "/nss-rne.yaml", profile);
  write(dir_ + "/full.yaml",
        "models: [models/demo.onnx]\nvariants: [fp32, bf16]\ntargets: {sim: {profiles: {nss: nss-rne.yaml}}}\n"
        "test_config: [full-cfg.yaml]\n");
  write(dir_ + "/full-cfg.yaml",
        "test_config:\n"
        "  demo-*-sim-discover: {assert_allclose: true, allclose_atol: 1.0e-7, allclose_rtol: 1.0e-7}\n");
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{bin("torq-coordinator"), "--spec", dir_ + "/full.yaml", "--export", dir_ + "/" + out,
                                    "--local-workers", "2"};
  };
  auto [code, out] = run(args("out"), dir_ + "/full.log");
  EXPECT_EQ(code, 1) << out;
  auto t = tests_by_id(read_json(dir_ + "/out/summary.json"));
  const json& fp32 = t["demo-fp32-sim-discover"];
  const json& bf16 = t["demo-bf16-sim-discover"];
  EXPECT_EQ(fp32["full_model"], true);
  EXPECT_EQ(fp32["outcome"], "passed") << fp32.dump();
  EXPECT_EQ(fp32["max_abs"], 0.0);
  EXPECT_EQ(bf16["full_model"], true);
  EXPECT_EQ(bf16["outcome"], "failed") << bf16.dump();
  EXPECT_EQ(bf16["bringup_status"], "INCORRECT_RESULT");
  EXPECT_GT(bf16["max_abs"].get<double>(), 1e-7);
  EXPECT_NE(bf16["message"].get<std::string>().find("not allclose"), std::string::npos) << bf16.dump();

  // The assigned run crashes (fault injection on its job id): FAILED_RUNTIME.
  std::filesystem::remove(dir_ + "/crash.log");
  Proc p(args("crash"), dir_ + "/crash.log", {"TORQ_WORKER_FAULT=crash:-full/"});
  auto c = p.wait(120000);
  ASSERT_TRUE(c) << p.output();
  EXPECT_EQ(*c, 1) << p.output();
  t = tests_by_id(read_json(dir_ + "/crash/summary.json"));
  for (const char* id : {"demo-fp32-sim-discover", "demo-bf16-sim-discover"}) {
    EXPECT_EQ(t[id]["outcome"], "failed") << t[id].dump();
    EXPECT_EQ(t[id]["bringup_status"], "FAILED_RUNTIME") << t[id].dump();
    EXPECT_EQ(t[id]["critical_failures"], 0);
    EXPECT_NE(t[id]["message"].get<std::string>().find("assigned full-model run: crash"), std::string::npos)
        << t[id].dump();
  }
}

// The shipped specs against the zoo they run on: configs/push.yaml and
// nightly.yaml name build/zoo/<model>/model.onnx, and every test_config
// entry must match a test (an entry for a model the zoo lost is an error).
// validate reads no model, so a copy of configs/ beside a tree of empty
// model files named by `ci/make-zoo.sh --list` (which imports no torch)
// checks them without building the zoo.
TEST(MatrixConfigs, ShippedSpecsAndConfigsValidate) {
  const std::string dir = fresh_dir("matrix-validate-configs");
  const std::string src = std::string(TORQ_SOURCE_DIR);
  auto [lc, list] = run({src + "/ci/make-zoo.sh", dir + "/build/zoo", "--list"}, dir + "/zoo-list.log");
  ASSERT_EQ(lc, 0) << list;
  std::vector<std::string> zoo;
  std::istringstream lines(list);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) zoo.push_back(line.substr(0, line.find(' ')));
  ASSERT_EQ(zoo.size(), 16u) << list;
  for (const auto& m : zoo) write(dir + "/build/zoo/" + m + "/model.onnx", "");
  write(dir + "/build/models/demo.onnx", "");
  std::filesystem::copy(src + "/configs", dir + "/configs", std::filesystem::copy_options::recursive);
  const std::string c = dir + "/configs/";
  std::vector<std::string> args = {bin("torq-coordinator"), "validate", c + "quickstart.yaml", c + "push.yaml",
                                   c + "nightly.yaml"};
#ifdef TORQ_SHARED_MODELS  // the spec over ../shared/models the nightly test runs
  args.push_back(src + "/tests/models/specs/shared_nightly.yaml");
#endif
  auto [code, out] = run(args, dir + "/validate.log");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("quickstart.yaml: 2 tests (0 placeholders)"), std::string::npos) << out;
  // demo + squeezenet1_1 + resnet18 x {fp32, bf16, int8} x {discover, run}.
  EXPECT_NE(out.find("push.yaml: 18 tests (0 placeholders)"), std::string::npos) << out;
  // 16 zoo models x 3 variants x 2 modes, and 1 placeholder (yolov8n).
  EXPECT_NE(out.find("nightly.yaml: 129 tests (1 placeholders)"), std::string::npos) << out;
#ifdef TORQ_SHARED_MODELS
  EXPECT_NE(out.find("shared_nightly.yaml: 14 tests (2 placeholders)"), std::string::npos) << out;
#endif
  // A zoo model without its files: the nightly's config names a test no
  // longer collected, which validate reports.
  std::filesystem::remove_all(dir + "/build/zoo/" + zoo.back());
  auto [code2, out2] = run({bin("torq-coordinator"), "validate", c + "nightly.yaml"}, dir + "/validate2.log");
  EXPECT_NE(code2, 0) << out2;
  EXPECT_NE(out2.find(zoo.back()), std::string::npos) << out2;
}

#ifdef TORQ_ZOO_EXPORTS
// The push spec on the zoo: ci/make-zoo.sh builds its two models into
// build/zoo (the spec names ../build/zoo; cached by stamp, so usually
// instant), then demo + squeezenet1_1 + resnet18 x {fp32, bf16, int8} x
// {discover, run} all pass, judged on the assigned full-model run.
TEST(MatrixConfigs, PushSpecOnTheZooPassesWithLocalWorkers) {
  const std::string dir = fresh_dir("matrix-push");
  const std::string src = std::string(TORQ_SOURCE_DIR);
  auto [zc, zout] = run({src + "/ci/make-zoo.sh", src + "/build/zoo", "--only", "squeezenet1_1", "resnet18"},
                        dir + "/zoo.log");
  ASSERT_EQ(zc, 0) << zout;
  auto [code, out] = run({bin("torq-coordinator"), "--spec", src + "/configs/push.yaml", "--local-workers", "2",
                          "--export", dir + "/out"},
                         dir + "/run.log");
  ASSERT_EQ(code, 0) << out;
  const json sum = read_json(dir + "/out/summary.json");
  EXPECT_EQ(sum["counts"], json({{"passed", 18}, {"failed", 0}, {"skipped", 0}, {"xfailed", 0}, {"xpassed", 0}}));
  auto t = tests_by_id(sum);
  for (const char* m : {"squeezenet1_1", "resnet18"})
    for (const std::string v : {"fp32", "bf16", "int8"})
      for (const std::string mode : {"discover", "run"}) {
        const std::string id = std::string(m) + "-" + v + "-sim-" + mode;
        ASSERT_TRUE(t.count(id)) << id;
        EXPECT_EQ(t[id]["status"], "EXPECTED_PASSING") << id;
        EXPECT_EQ(t[id]["full_model"], true) << id;
        EXPECT_GT(t[id]["layers"].get<int>(), 40) << id;
        // Against the model's own reference, fp32 on css and int8 (integer
        // semantics) are exact; bf16 on nss within bf16 rounding of the
        // logits. A converted variant is judged end to end, against its
        // fp32 original, where the conversion's loss shows (issue 29).
        const json& own = v == "fp32" ? t[id] : t[id]["converted"];
        if (v != "bf16") EXPECT_EQ(own["max_abs"], 0.0) << id;
        else EXPECT_LT(own["max_abs"].get<double>(), 0.05) << id;
        const json& dist = t[id]["executor_distribution"];
        if (v == "fp32") EXPECT_FALSE(dist.contains("nss")) << id << dist;
        else EXPECT_GT(dist["nss"].get<int>(), t[id]["layers"].get<int>() / 2) << id << dist;
        if (v == "fp32") {
          EXPECT_TRUE(t[id]["end_to_end"].is_null()) << id;
          EXPECT_TRUE(t[id]["pcc_against"].is_null()) << id;
          continue;
        }
        EXPECT_EQ(t[id]["pcc_against"], "the fp32 original") << id;
        const json& e2e = t[id]["end_to_end"];
        EXPECT_EQ(e2e["error"], "") << id;
        EXPECT_EQ(t[id]["pcc"], e2e["pcc"]) << id;
        EXPECT_LT(e2e["pcc"].get<double>(), 1.0) << id;
        EXPECT_GT(e2e["max_abs"].get<double>(), own["max_abs"].get<double>()) << id;
      }
}
#endif

#ifdef TORQ_SHARED_MODELS
// The nightly as CI runs it: ci/nightly.sh starts a coordinator and two
// torq-worker processes on loopback and runs a spec, here the one over the
// four shared CNNs x {fp32, bf16, int8} (tests/models/specs: the zoo's
// configs/nightly.yaml takes minutes and is not a ctest; its push subset
// is PushSpecOnTheZooPassesWithLocalWorkers).
TEST(MatrixConfigs, NightlyOverTheSharedModelsThroughCiNightlySh) {
  const std::string dir = fresh_dir("matrix-nightly");
  const std::string build = std::filesystem::path(TORQ_BIN_DIR).parent_path().string();
  Proc p({"/usr/bin/env", "BUILD_DIR=" + build, "WORKERS=2", "bash", std::string(TORQ_SOURCE_DIR) + "/ci/nightly.sh",
          dir + "/out", std::string(TORQ_SOURCE_DIR) + "/tests/models/specs/shared_nightly.yaml"},
         dir + "/nightly.log");
  auto code = p.wait(900000);
  ASSERT_TRUE(code) << p.output();
  ASSERT_EQ(*code, 0) << p.output() << slurp(dir + "/out/coordinator.log");
  const json sum = read_json(dir + "/out/summary.json");
  EXPECT_EQ(sum["counts"], json({{"passed", 12}, {"failed", 0}, {"skipped", 2}, {"xfailed", 0}, {"xpassed", 0}}));
  auto t = tests_by_id(sum);
  for (const char* m : {"squeezenet1.0", "mobilenetv2", "resnet18", "efficientnet_b1"})
    for (const std::string v : {"fp32", "bf16", "int8"}) {
      const std::string id = std::string(m) + "-" + v + "-sim-discover";
      ASSERT_TRUE(t.count(id)) << id;
      EXPECT_EQ(t[id]["outcome"], "passed") << id;
      EXPECT_GT(t[id]["layers"].get<int>(), 40) << id;
      // Judged on the assigned full-model run. Against the model's own
      // reference: exact in fp32 (css runs the host kernels) and int8 (every
      // executor reproduces the integer semantics), close in bf16. bf16 and
      // int8 are judged end to end, against the fp32 original, where the
      // conversion's loss shows.
      EXPECT_EQ(t[id]["full_model"], true) << id;
      EXPECT_GE(t[id]["pcc"].get<double>(), 0.999) << id;
      const json& own = v == "fp32" ? t[id] : t[id]["converted"];
      if (v != "bf16") EXPECT_EQ(own["max_abs"], 0.0) << id;
      else EXPECT_LT(own["max_abs"].get<double>(), 0.1) << id;
      if (v != "fp32") {
        EXPECT_EQ(t[id]["pcc_against"], "the fp32 original") << id;
        EXPECT_EQ(t[id]["pcc"], t[id]["end_to_end"]["pcc"]) << id;
        EXPECT_GT(t[id]["end_to_end"]["max_abs"].get<double>(), 1e-3) << id;
      }
      // fp32: the bf16/int NSS runs nothing; bf16 and int8: most layers.
      const json& dist = t[id]["executor_distribution"];
      if (v == "fp32") EXPECT_FALSE(dist.contains("nss")) << id << dist;
      else EXPECT_GT(dist["nss"].get<int>(), t[id]["layers"].get<int>() / 2) << id << dist;
      const std::string name = std::string(m) + (v == "int8" ? "_quant" : "");
      const json rep = read_json(dir + "/out/reports/" + id + "/torq_gen_config_" + name + ".json");
      EXPECT_EQ(rep["ops"].size(), t[id]["layers"].get<size_t>()) << id;
    }
  EXPECT_EQ(t["yolov8n-fp32-sim-discover"]["bringup_status"], "NOT_STARTED");
  EXPECT_EQ(junit_via_python(dir + "/out/junit.xml").substr(0, 7), "14 0 2\n");
  // Workers never wait for preparation (issue 32): the models are prepared
  // (four int8 quantizations with their calibration runs among them) on a
  // thread of their own while the fleet runs the jobs of those already
  // prepared, and a unit whose last job is in has its reports written and
  // its model released while later ones are still being prepared.
  const std::string log = slurp(dir + "/out/coordinator.log");
  const size_t prepared_all = log.find("[coordinator] prepared 12 units in ");
  const size_t first_result = log.find("[coordinator] jobs 25/");
  const size_t first_released = log.find(") done: reports written, model released");
  ASSERT_NE(prepared_all, std::string::npos) << log;
  EXPECT_LT(first_result, prepared_all) << log;
  EXPECT_LT(first_released, prepared_all) << log;
  size_t released = 0;
  for (size_t at = 0; (at = log.find("model released", at)) != std::string::npos; ++at) ++released;
  EXPECT_EQ(released, 12u) << log;  // every unit, once
  // Each release line gives the coordinator's RSS, its heap in use (at most
  // the RSS), with tcmalloc what its thread caches hold and their limit (8
  // MiB, not tcmalloc's 32: they filled over a long spec, issue 32), and
  // the store's memory then.
  std::smatch rel;
  ASSERT_TRUE(std::regex_search(log, rel,
                                std::regex(R"(model released; RSS (\d+) MB \(heap (\d+) MB in use(, (\d+) MB in )"
                                           R"(thread caches of at most (\d+))?\), store (\d+) MB in memory)")))
      << log;
  EXPECT_GT(std::stoi(rel[1]), 0);
  EXPECT_LT(std::stoi(rel[1]), 4096);
  EXPECT_GT(std::stoi(rel[2]), 0);
  EXPECT_LE(std::stoi(rel[2]), std::stoi(rel[1]));
#ifndef TORQ_TEST_SANITIZE
  ASSERT_TRUE(rel[3].matched) << "no thread caches in: " << rel[0];
  EXPECT_EQ(rel[5], "8");
  EXPECT_LE(std::stoi(rel[4]), std::stoi(rel[1]));
#endif
  // The summary says when each phase ended and the coordinator's peak RSS.
  const std::string out_text = slurp(dir + "/out/coordinator.log") + p.output();
  std::smatch m;
  const std::regex phases(R"(phases    12 units prepared by ([\d.]+) s, first job sent at ([\d.]+) s, job phase )"
                          R"(([\d.]+) s, wall ([\d.]+) s; coordinator peak RSS (\d+) MB)");
  ASSERT_TRUE(std::regex_search(out_text, m, phases)) << out_text;
  EXPECT_LT(std::stod(m[2]), std::stod(m[1]));   // the first job went out before the last model was ready
  EXPECT_GT(std::stod(m[3]), 0.0);
  EXPECT_LE(std::stod(m[3]), std::stod(m[4]));
  EXPECT_GT(std::stoi(m[5]), 0);
  // And what the coordinator's side cost in CPU: its own, and its child
  // processes' (here the four int8 quantizations; the workers are not its).
  const std::regex cpu(R"(cpu       coordinator ([\d.]+) s, its child processes \(int8 quantization, local workers\) )"
                       R"(([\d.]+) s, over a wall of ([\d.]+) s)");
  ASSERT_TRUE(std::regex_search(out_text, m, cpu)) << out_text;
  EXPECT_GT(std::stod(m[1]), 0.0);
  EXPECT_GT(std::stod(m[2]), 0.0);
  EXPECT_GT(std::stod(m[3]), 0.0);
  // And its own CPU by thread, largest first: the broker (main), the
  // preparer (12 imports), the exporter (24 tests' reports), the rest.
  const std::regex threads_line(R"(\nthreads  ( [^\n]*) others ([\d.]+) s \(the coordinator's CPU by thread\)\n)");
  ASSERT_TRUE(std::regex_search(out_text, m, threads_line)) << out_text;
  const std::string threads = m[1];
  for (const char* name : {"main", "torq-prepare", "torq-export"}) {
    std::smatch t;
    ASSERT_TRUE(std::regex_search(threads, t, std::regex(std::string(" ") + name + " ([\\d.]+) s,"))) << threads;
    EXPECT_GT(std::stod(t[1]), 0.0) << name;
  }
  // The HTML report as a browser shows it: headless Chromium's DOM against
  // the summary; the screenshot stays in out/report.png.
  auto [hc, hout] = run({"/usr/bin/bash", std::string(TORQ_SOURCE_DIR) + "/tests/html/check_real_report.sh",
                         dir + "/out", "3"},
                        dir + "/html.log", 180000);
  EXPECT_EQ(hc, 0) << hout;
  EXPECT_NE(hout.find("real " + dir + "/out/report.dom.html: ok"), std::string::npos) << hout;
}
#endif
