// The run history of matrix specs end to end (issue 13): torq-coordinator
// --spec with real local workers and a real RocksDB store, run after run:
// `diff` of two runs that differ by a profile edit, "since the previous
// run" in JUnit (read by Python's ElementTree + ast) and HTML,
// --last-failed, a coordinator killed mid-run, and the op-support matrix of
// two models sharing ops (ops.csv read by Python's csv module).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/fleet/fleet_harness.h"
#include "tests/matrix/matrix_helpers.h"

using namespace torq::fleet_test;
using nlohmann::json;

namespace {

const std::string kUnsupportedOp = "/usr/share/libonnx-testdata/data/node/test_mvn/model.onnx";

class MatrixHistory : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("history-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto [code, out] = run({bin("torq-sim"), "demo", "--save", dir_ + "/demo.onnx"}, dir_ + "/demo.log");
    ASSERT_EQ(code, 0) << out;
  }
  std::pair<int, std::string> coordinator(const std::string& log, std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {bin("torq-coordinator"), "--spec", dir_ + "/spec.yaml", "--export", dir_ + "/out",
                                  "--local-workers",       "2",      "--heartbeat-ms",    "200"};
    a.insert(a.end(), extra.begin(), extra.end());
    return run(a, dir_ + "/" + log + ".log");
  }
  std::pair<int, std::string> diff(const std::string& log, std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {bin("torq-coordinator"), "diff", "--export", dir_ + "/out"};
    a.insert(a.end(), extra.begin(), extra.end());
    return run(a, dir_ + "/" + log + ".log");
  }
  // A copy of a built-in profile under edge/, without `remove_op`.
  // With `clock_mhz` > 0: the profile's clock set to it (every time on it scales).
  void profile_copy(const std::string& executor, const std::string& remove_op = "", int clock_mhz = 0) const {
    YAML::Node p = YAML::LoadFile(std::string(TORQ_SOURCE_DIR) + "/configs/targets/" + executor + ".yaml");
    if (!remove_op.empty()) {
      ASSERT_TRUE(p["ops"].remove(remove_op)) << remove_op;
    }
    if (clock_mhz > 0) {
      ASSERT_TRUE(p["cost"]["clock_mhz"].IsScalar());
      p["cost"]["clock_mhz"] = clock_mhz;
    }
    YAML::Emitter e;
    e << p;
    write(dir_ + "/edge/" + executor + ".yaml", std::string(e.c_str()) + "\n");
  }
  json report(const std::string& test_id) const {
    return read_json(dir_ + "/out/reports/" + test_id + "/torq_gen_config_demo.json");
  }
  std::string dir_;
};

std::string figure(double v, const char* format) {
  char b[32];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

// "<class>: <summary>" of an executor's error in a report.
std::string error_of(const json& rep, const std::string& layer, const std::string& executor) {
  const json& x = rep["ops"][layer]["executors"][executor];
  return x["error_class"].get<std::string>() + ": " + x["failure_report"]["summary"].get<std::string>();
}

const char* kEdgeSpec =
    "models: [demo.onnx]\n"
    "variants: [bf16]\n"
    "executors: [nss, css]\n"
    "targets:\n"
    "  sim: {}\n"
    "  edge: {profiles: {nss: edge/nss.yaml, css: edge/css.yaml}}\n";

}  // namespace

TEST_F(MatrixHistory, DiffListsWhatAProfileEditChanged) {
  write(dir_ + "/spec.yaml", kEdgeSpec);
  profile_copy("nss");
  profile_copy("css");
  auto [c1, o1] = coordinator("run1");
  ASSERT_EQ(c1, 0) << o1;
  EXPECT_NE(o1.find("history   run 1 of this spec"), std::string::npos) << o1;
  const json before = report("demo-bf16-edge-discover");
  // The edit: MaxPool leaves nss (it falls back to css) and Softmax leaves css
  // (no executor of the spec runs it any more).
  profile_copy("nss", "MaxPool");
  profile_copy("css", "Softmax");
  auto [c2, o2] = coordinator("run2");
  ASSERT_EQ(c2, 1) << o2;
  const json after = report("demo-bf16-edge-discover");
  const double t_a = before["ops"]["MaxPool_pool1"]["executors"]["nss"]["timing"]["runtime_ms"].get<double>();
  const double t_b = after["ops"]["MaxPool_pool1"]["executors"]["css"]["timing"]["runtime_ms"].get<double>();

  auto [dc, text] = diff("diff");
  EXPECT_EQ(dc, 0) << text;
  const std::string edge =
      "demo-bf16-edge-discover: new failure; 2 layers changed (passed -> failed, bringup PASSED -> "
      "FAILED_COMPILATION)\n"
      "  layer MaxPool_pool1: nss success -> error (" +
      error_of(after, "MaxPool_pool1", "nss") +
      ")\n"
      "  layer MaxPool_pool1: recommended nss -> css\n"
      "  layer MaxPool_pool1: time on css " +
      figure(t_a, "%.6g") + " ms -> " + figure(t_b, "%.6g") + " ms (" + figure(100 * (t_b - t_a) / t_a, "%+.0f") +
      "%)\n"
      "  layer Softmax_probabilities: css success -> error (" +
      error_of(after, "Softmax_probabilities", "css") +
      ")\n"
      "  layer Softmax_probabilities: recommended css -> none\n"
      "summary: new failure 1, fixed 0, still failing 0, outcome 0, unchanged 1, new test 0, not run 0; "
      "with pcc drift 0, time drift 0, layer changes 1\n";
  EXPECT_NE(text.find("thresholds: pcc drift > 0.001, time drift > 20% and > 0.001 ms\n" + edge), std::string::npos)
      << text;
  EXPECT_EQ(text.find("demo-bf16-sim-discover"), std::string::npos) << text;  // unchanged: not listed

  auto [jc, jtext] = diff("diff-json", {"--json", "1", "2"});
  ASSERT_EQ(jc, 0) << jtext;
  const json j = json::parse(jtext);
  EXPECT_EQ(j["a"]["seq"], 1);
  EXPECT_EQ(j["b"]["seq"], 2);
  EXPECT_EQ(j["unchanged"], json({"demo-bf16-sim-discover"}));
  ASSERT_EQ(j["tests"].size(), 1u);
  EXPECT_EQ(j["tests"][0]["change"], "new failure");
  std::vector<std::string> kinds;
  for (const auto& l : j["tests"][0]["layers"])
    kinds.push_back(l["layer"].get<std::string>() + " " + l["kind"].get<std::string>());
  EXPECT_EQ(kinds, (std::vector<std::string>{"MaxPool_pool1 status", "MaxPool_pool1 recommended", "MaxPool_pool1 time",
                                             "Softmax_probabilities status", "Softmax_probabilities recommended"}));

  // "Since the previous run" in JUnit, as tt-xla's readers see it, and in the HTML.
  const json tags = junit_tags_via_python(dir_ + "/out/junit.xml");
  EXPECT_EQ(tags["demo-bf16-edge-discover"]["since_previous"], "new failure; 2 layers changed");
  EXPECT_EQ(tags["demo-bf16-sim-discover"]["since_previous"], "unchanged");
  EXPECT_EQ(tags["demo-bf16-edge-discover"]["tags"]["since_previous"], "new failure; 2 layers changed");
  // In the HTML: the row highlighted, listed among the changes, a trend of
  // the two runs, and each test's grid on a page of its own.
  const std::string html = slurp(dir_ + "/out/report.html");
  EXPECT_NE(html.find("<td class=\"since\"><span class=\"change-badge\">regression</span> new failure; 2 layers "
                      "changed</td>"),
            std::string::npos);
  EXPECT_NE(html.find("data-id=\"demo-bf16-edge-discover\" id=\"test-demo-bf16-edge-discover\" "
                      "data-change=\"new-failure\">"),
            std::string::npos);
  EXPECT_NE(html.find("<li class=\"change-new-failure\" data-change=\"new-failure\" data-count=\"1\">"),
            std::string::npos);
  size_t points = 0;
  for (size_t at = html.find("class=\"point point-passed\""); at != std::string::npos;
       at = html.find("class=\"point point-passed\"", at + 1))
    ++points;
  EXPECT_EQ(points, 2u);
  EXPECT_EQ(html.find("class=\"cell"), std::string::npos);  // no layer in report.html
  const std::string grid = slurp(dir_ + "/out/reports/demo-bf16-edge-discover/grid.html");
  EXPECT_NE(grid.find("data-layer=\"MaxPool_pool1\""), std::string::npos);
  EXPECT_NE(html.find("<a href=\"reports/demo-bf16-edge-discover/grid.html\">"), std::string::npos);
  // The layer records and grids the run kept in files until then are gone.
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/.report-grids"));

  // The profiles restored, --last-failed reruns the edge test alone: fixed.
  profile_copy("nss");
  profile_copy("css");
  auto [c3, o3] = coordinator("run3", {"--last-failed"});
  ASSERT_EQ(c3, 0) << o3;
  EXPECT_NE(o3.find("last-failed: rerunning 1 of 2 selected tests, those that failed at their latest run (the last is "
                    "run 2):\n  demo-bf16-edge-discover\n"),
            std::string::npos)
      << o3;
  const json sum = read_json(dir_ + "/out/summary.json");
  ASSERT_EQ(sum["tests"].size(), 1u);
  EXPECT_EQ(sum["tests"][0]["id"], "demo-bf16-edge-discover");
  EXPECT_EQ(sum["tests"][0]["since_previous"], "fixed; 2 layers changed");
  auto [fc, fixed] = diff("diff-fixed");
  EXPECT_NE(fixed.find("\ndemo-bf16-edge-discover: fixed; 2 layers changed (failed -> passed, bringup "
                       "FAILED_COMPILATION -> PASSED)\n"),
            std::string::npos)
      << fixed;
  EXPECT_NE(fixed.find("\nnot in run 3: demo-bf16-sim-discover\n"), std::string::npos) << fixed;

  // Unknown runs: exit 2 and the known ones listed.
  auto [bc, bad] = diff("diff-bad", {"7"});
  EXPECT_EQ(bc, 2) << bad;
  EXPECT_NE(bad.find("unknown run '7' of " + dir_ + "/spec.yaml; known runs:\n  1  "), std::string::npos) << bad;
  EXPECT_NE(bad.find("\n  2  "), std::string::npos) << bad;
}

// The spec's drift thresholds (options.time_drift, time_floor_ms) decide
// what "since the previous run" calls a change, between the same two runs
// that `diff` with its default thresholds shows drifted.
TEST_F(MatrixHistory, SpecDriftThresholdsDecideSinceThePreviousRun) {
  const std::string spec = "models: [demo.onnx]\nvariants: [bf16]\nexecutors: [nss, css]\n"
                           "targets:\n  edge: {profiles: {nss: edge/nss.yaml}}\n";
  write(dir_ + "/spec.yaml", spec);
  profile_copy("nss");
  auto [c1, o1] = coordinator("run1");
  ASSERT_EQ(c1, 0) << o1;
  // nss at 400 instead of 1000 MHz: every nss layer's time +150%, the
  // assigned run's +133% (its fixed costs do not scale). Default thresholds (20%): drift.
  profile_copy("nss", "", 400);
  auto [c2, o2] = coordinator("run2");
  ASSERT_EQ(c2, 0) << o2;
  const std::string id = "demo-bf16-edge-discover";
  EXPECT_EQ(tests_by_id(read_json(dir_ + "/out/summary.json"))[id]["since_previous"],
            "time drift +133%; 13 layers changed");

  // Back to 1000 MHz (layers -60%, the run -57%) with time_drift 2 (200%): unchanged, in JUnit, summary.json and HTML.
  write(dir_ + "/spec.yaml", spec + "options: {time_drift: 2}\n");
  profile_copy("nss");
  auto [c3, o3] = coordinator("run3");
  ASSERT_EQ(c3, 0) << o3;
  EXPECT_EQ(tests_by_id(read_json(dir_ + "/out/summary.json"))[id]["since_previous"], "unchanged");
  EXPECT_EQ(junit_tags_via_python(dir_ + "/out/junit.xml")[id]["since_previous"], "unchanged");
  EXPECT_NE(slurp(dir_ + "/out/report.html").find("<td class=\"since\">unchanged</td>"), std::string::npos);
  // ... though the same two runs differ by diff's default 20%.
  auto [dc, text] = diff("diff-2-3", {"2", "3"});
  ASSERT_EQ(dc, 0) << text;
  EXPECT_NE(text.find("\n" + id + ": time drift -57%; 13 layers changed (passed)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  layer Conv_conv1: time on nss "), std::string::npos) << text;

  // 400 MHz again, time_drift 0.5 but a floor of 1000 ms no layer's time reaches: unchanged.
  write(dir_ + "/spec.yaml", spec + "options: {time_drift: 0.5, time_floor_ms: 1000}\n");
  profile_copy("nss", "", 400);
  auto [c4, o4] = coordinator("run4");
  ASSERT_EQ(c4, 0) << o4;
  EXPECT_EQ(tests_by_id(read_json(dir_ + "/out/summary.json"))[id]["since_previous"], "unchanged");
  // time_drift 0.5 alone: -57% and -60% are drift again.
  write(dir_ + "/spec.yaml", spec + "options: {time_drift: 0.5}\n");
  profile_copy("nss");
  auto [c5, o5] = coordinator("run5");
  ASSERT_EQ(c5, 0) << o5;
  EXPECT_EQ(tests_by_id(read_json(dir_ + "/out/summary.json"))[id]["since_previous"],
            "time drift -57%; 13 layers changed");

  // A bad value: exit 2, file:line:col, nothing run.
  write(dir_ + "/spec.yaml", spec + "options:\n  time_drift: 20%\n");
  auto [c6, o6] = coordinator("run6");
  EXPECT_EQ(c6, 2) << o6;
  EXPECT_NE(o6.find(dir_ + "/spec.yaml:7:15: time_drift must be a finite number >= 0, got '20%'"), std::string::npos) << o6;
}

TEST_F(MatrixHistory, LastFailedRerunsExactlyTheFailedTests) {
  ASSERT_TRUE(std::filesystem::exists(kUnsupportedOp)) << "Debian package libonnx-testdata (ci/install-deps.sh)";
  std::filesystem::create_directories(dir_ + "/test_mvn");
  std::filesystem::copy_file(kUnsupportedOp, dir_ + "/test_mvn/model.onnx");
  write(dir_ + "/spec.yaml", "models: [demo.onnx, test_mvn/model.onnx]\nvariants: [fp32, bf16]\n");
  // No previous run: every test runs.
  auto [c1, o1] = coordinator("run1", {"--last-failed"});
  EXPECT_EQ(c1, 1) << o1;  // no executor runs MeanVarianceNormalization
  EXPECT_NE(o1.find("last-failed: no previous run of " + dir_ + "/spec.yaml: running every selected test (4)\n"),
            std::string::npos)
      << o1;
  EXPECT_EQ(read_json(dir_ + "/out/summary.json")["tests"].size(), 4u);
  // The two failed tests, and only they.
  auto [c2, o2] = coordinator("run2", {"--last-failed"});
  EXPECT_EQ(c2, 1) << o2;
  EXPECT_NE(o2.find("last-failed: rerunning 2 of 4 selected tests, those that failed at their latest run (the last is "
                    "run 1):\n  test_mvn-fp32-sim-discover\n  test_mvn-bf16-sim-discover\n"),
            std::string::npos)
      << o2;
  const json sum = read_json(dir_ + "/out/summary.json");
  std::set<std::string> ids;
  for (const auto& t : sum["tests"]) {
    ids.insert(t["id"].get<std::string>());
    EXPECT_EQ(t["since_previous"], "still failing") << t.dump();
  }
  EXPECT_EQ(ids, (std::set<std::string>{"test_mvn-fp32-sim-discover", "test_mvn-bf16-sim-discover"}));
  EXPECT_EQ(sum["run"]["deselected"], 2);
  // Among the demo tests none failed: nothing runs, exit 0, no run recorded.
  auto [c3, o3] = coordinator("run3", {"--last-failed", "-k", "demo"});
  EXPECT_EQ(c3, 0) << o3;
  EXPECT_EQ(o3, "last-failed: no selected test failed at its latest run (the last is run 2): nothing to run\n");

  // A coordinator killed mid-run (waiting for workers to serve a variant
  // whose results are in no store or cache) records no run and harms none:
  // the history still has runs 1 and 2, the next run is 3.
  write(dir_ + "/spec.yaml",
        "models: [demo.onnx, test_mvn/model.onnx]\n"
        "variants: [fp32, bf16, {name: r5, dtype: fp32, inputs: random, seed: 5}]\n");
  Proc killed({bin("torq-coordinator"), "--spec", dir_ + "/spec.yaml", "--export", dir_ + "/out", "--bind",
               endpoint(free_port())},
              dir_ + "/killed.log");
  ASSERT_TRUE(killed.wait_for("listening on", 60000)) << killed.output();
  killed.signal(SIGKILL);
  EXPECT_EQ(killed.wait(60000), 128 + SIGKILL);
  write(dir_ + "/spec.yaml", "models: [demo.onnx, test_mvn/model.onnx]\nvariants: [fp32, bf16]\n");
  auto [dc, d] = diff("diff", {"--json"});
  ASSERT_EQ(dc, 0) << d;
  EXPECT_EQ(json::parse(d)["a"]["seq"], 1);
  EXPECT_EQ(json::parse(d)["b"]["seq"], 2);
  EXPECT_EQ(json::parse(d)["not_run"], json({"demo-fp32-sim-discover", "demo-bf16-sim-discover"}));
  auto [c4, o4] = coordinator("run4", {"-k", "demo"});
  EXPECT_EQ(c4, 0) << o4;
  EXPECT_NE(o4.find("history   run 3 of this spec"), std::string::npos) << o4;
}

TEST_F(MatrixHistory, OpMatrixOfTwoModelsSharingOps) {
  // The demo with its Softmax replaced by LpNormalization, which no executor runs.
  onnx::ModelProto m;
  std::ifstream in(dir_ + "/demo.onnx", std::ios::binary);
  ASSERT_TRUE(m.ParseFromIstream(&in));
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == "Softmax") n.set_op_type("LpNormalization");
  std::ofstream(dir_ + "/demo_lp.onnx", std::ios::binary) << m.SerializeAsString();
  write(dir_ + "/spec.yaml", "models: [demo.onnx, demo_lp.onnx]\nvariants: [bf16]\n");
  auto [code, out] = coordinator("run");
  EXPECT_EQ(code, 1) << out;  // demo_lp fails
  const json rows = csv_via_python(dir_ + "/out/ops.csv");
  ASSERT_EQ(rows.size(), 15u) << rows.dump(1);  // 13 shared ops + Softmax + LpNormalization
  auto row = [](const json& r) {
    return r["op"].get<std::string>() + " | " + r["nss"].get<std::string>() + " " + r["css"].get<std::string>() + " " +
           r["host"].get<std::string>() + " | " + r["occurrences"].get<std::string>() + " | " +
           r["models"].get<std::string>() + " | blocks " + r["blocked_models"].get<std::string>() + " | falls back " +
           r["fallback_models"].get<std::string>();
  };
  EXPECT_EQ(row(rows[0]),
            "LpNormalization(axis=1) bf16[1,10] | error error error | 1 | demo_lp | blocks demo_lp | "
            "falls back ");
  EXPECT_EQ(row(rows[1]), "Softmax(axis=1) bf16[1,10] | error success success | 1 | demo | blocks  | falls back demo");
  std::set<std::string> shared;
  for (size_t i = 2; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["models"], "demo;demo_lp") << rows[i].dump();
    EXPECT_EQ(rows[i]["occurrences"], "2") << rows[i].dump();
    EXPECT_EQ(rows[i]["nss"], "success") << rows[i].dump();
    EXPECT_EQ(rows[i]["target"], "sim");
    shared.insert(rows[i]["op"].get<std::string>());
  }
  EXPECT_TRUE(
      shared.count("Conv(group=1, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]) bf16[1,3,64,64], "
                   "bf16[16,3,3,3], bf16[16]"));
  EXPECT_TRUE(shared.count("MaxPool(kernel_shape=[2,2], strides=[2,2]) bf16[1,16,64,64]"));
  EXPECT_NE(rows[0]["nss_error"].get<std::string>().find("LpNormalization"), std::string::npos) << rows[0].dump();
  // The same table on ops.html; report.html shows the ops that block a model (LpNormalization) or fall
  // back (Softmax, off nss) and links it.
  const auto op_rows = [](const std::string& html) {
    size_t n = 0;
    for (size_t at = html.find("<tr class=\"op\""); at != std::string::npos; at = html.find("<tr class=\"op\"", at + 1))
      ++n;
    return n;
  };
  const std::string page = slurp(dir_ + "/out/ops.html");
  EXPECT_EQ(op_rows(page), 15u);
  EXPECT_NE(page.find("<td class=\"op\">LpNormalization(axis=1) bf16[1,10]</td>"), std::string::npos);
  const std::string html = slurp(dir_ + "/out/report.html");
  EXPECT_EQ(op_rows(html), 2u);
  EXPECT_NE(html.find("<td class=\"op\">LpNormalization(axis=1) bf16[1,10]</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"op\">Softmax(axis=1) bf16[1,10]</td>"), std::string::npos);
  EXPECT_NE(html.find("all 15 ops: <a href=\"ops.html\">"), std::string::npos);
  // JUnit: the tags of the failure and of the pass, as tt-xla writes them.
  const json tags = junit_tags_via_python(dir_ + "/out/junit.xml");
  const json& lp = tags["demo_lp-bf16-sim-discover"];
  EXPECT_EQ(lp["tags"]["bringup_status"], "FAILED_COMPILATION") << lp.dump();
  EXPECT_EQ(lp["tags"]["model_test_status"], "UNSPECIFIED");
  EXPECT_EQ(lp["tags"]["since_previous"], "no previous run");
  EXPECT_EQ(lp["tags"]["guidance"], json::array());
  EXPECT_NE(lp["error_message"].get<std::string>().find("LpNormalization"), std::string::npos) << lp.dump();
  const json& demo = tags["demo-bf16-sim-discover"];
  const json sum = tests_by_id(read_json(dir_ + "/out/summary.json"))["demo-bf16-sim-discover"];
  EXPECT_EQ(demo["tags"]["pcc"], sum["pcc"]);
  EXPECT_EQ(demo["tags"]["required_pcc"], 0.99);
  EXPECT_EQ(demo["tags"]["target"], "sim");
  EXPECT_EQ(demo["tags"]["executors"], sum["executor_distribution"]);
  EXPECT_EQ(demo["tags"]["device_time_ms"], sum["device_ms"]);
  EXPECT_EQ(demo["tags"]["guidance"], json({"ADD_CONFIG"}));
  EXPECT_TRUE(demo["error_message"].is_null());
}
