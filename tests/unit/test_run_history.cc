// The run history of matrix specs (pipeline/store/run_history.h) on a real
// RocksDB in a temp dir: append, list, load, latest, reopen, two specs,
// bad records; and what is read from it: run diffs and "since the previous
// run" (pipeline/store/run_diff.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "pipeline/core/sha256.h"
#include "pipeline/store/run_diff.h"
#include "pipeline/store/run_history.h"
#include "pipeline/store/store.h"
#include "tests/unit/matrix_fixture.h"

using namespace torq::pipeline;
using namespace torq::pipeline::history;
using torq::matrix_test::error_of;
using torq::matrix_test::TempDir;

namespace {

ExecRecord ok(double pcc, double ms) { return ExecRecord{Status::kSuccess, "", pcc, ms}; }
ExecRecord err(const std::string& why) { return ExecRecord{Status::kError, why, -1, -1}; }

LayerRecord layer(const std::string& id, std::optional<Executor> rec, std::map<Executor, ExecRecord> ex) {
  return LayerRecord{id, "Op() f32[1]", rec, std::move(ex)};
}

TestRecord test(const std::string& id, const std::string& outcome, double pcc = 0.999, double ms = 1.0) {
  TestRecord t;
  t.id = id;
  t.model = "demo";
  t.variant = "bf16";
  t.target = "sim";
  t.mode = "discover";
  t.outcome = outcome;
  t.bringup = outcome == "failed" ? "FAILED_RUNTIME" : "PASSED";
  t.status = "UNSPECIFIED";
  t.ran = true;
  t.pcc = pcc;
  t.device_ms = ms;
  t.layers = {layer("Conv_c1", Executor::kNss, {{Executor::kNss, ok(0.9999, 0.5)}, {Executor::kCss, ok(1, 2)}})};
  return t;
}

RunRecord run_of(std::vector<TestRecord> tests) {
  RunRecord r;
  r.started_utc = "2026-01-01T00:00:00Z";
  r.run_id = "abc";
  r.tests = std::move(tests);
  return r;
}

}  // namespace

TEST(RunHistory, AppendsNumberedRunsThatSurviveAReopen) {
  TempDir dir;
  const std::string spec = dir.write("spec.yaml", "models: []\n");
  {
    auto store = Store::open(dir.path("db"));
    History h(*store, spec);
    EXPECT_TRUE(h.runs().empty());
    EXPECT_EQ(h.append(run_of({test("a", "passed"), test("b", "failed")})), 1);
    EXPECT_EQ(h.append(run_of({test("b", "passed")})), 2);
  }
  auto store = Store::open(dir.path("db"));
  const History h(*store, dir.path("./spec.yaml"));  // the same spec, another spelling
  const auto runs = h.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].seq, 1);
  EXPECT_EQ(runs[0].test_ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(runs[0].counts, (std::map<std::string, int>{{"failed", 1}, {"passed", 1}}));
  EXPECT_EQ(runs[1].spec, spec);
  const auto one = h.load(1);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->tests.size(), 2u);
  EXPECT_EQ(one->tests[1], test("b", "failed"));
  EXPECT_FALSE(h.load(3));
  // The latest record of each test: b from run 2, a from run 1.
  const auto latest = h.latest();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest.at("a").outcome, "passed");
  EXPECT_EQ(latest.at("b").outcome, "passed");
  EXPECT_EQ(History::specs(*store), std::vector<std::string>{spec});
}

// A run larger than one batch (8 MB of records): every test is read back,
// latest_of agrees with latest(), and records of a seq whose run record was
// never written (a coordinator stopped while appending) are invisible and
// written over by the next append.
TEST(RunHistory, LargeRunsGoInBatchesAndAnUnfinishedAppendIsInvisible) {
  TempDir dir;
  const std::string spec = dir.write("spec.yaml", "models: []\n");
  auto store = Store::open(dir.path("db"));
  History h(*store, spec);
  std::vector<TestRecord> tests;
  for (int i = 0; i < 40; ++i) {
    TestRecord t = test("t" + std::to_string(i), i % 3 ? "passed" : "failed");
    for (int l = 0; l < 2000; ++l)
      t.layers.push_back(layer("Relu_" + std::to_string(l) + std::string(40, 'x'), Executor::kCss,
                               {{Executor::kNss, err("unsupported " + std::to_string(l))}, {Executor::kCss, ok(1, 0.1)}}));
    tests.push_back(std::move(t));
  }
  EXPECT_EQ(h.append(run_of({}), tests), 1);
  const auto loaded = h.load(1);
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->tests.size(), tests.size());
  EXPECT_EQ(loaded->tests, tests);
  EXPECT_EQ(loaded->counts.at("failed"), 14);
  const auto latest = h.latest();
  ASSERT_EQ(latest.size(), tests.size());
  for (const auto& t : tests) {
    const auto one = h.latest_of(t.id);
    ASSERT_TRUE(one);
    EXPECT_EQ(*one, latest.at(t.id));
    EXPECT_EQ(*one, t);
  }
  EXPECT_FALSE(h.latest_of("no-such-test"));

  // Run 2's test record written, its run record not: still one run.
  TestRecord orphan = test("t0", "passed", 0.5);
  store->put_run_records({{"history/" + sha256_hex(h.spec()).substr(0, 16) + "/tests/00000002/t0", to_json(orphan).dump()}});
  EXPECT_EQ(h.runs().size(), 1u);
  EXPECT_EQ(h.latest_of("t0")->pcc, tests[0].pcc);
  TestRecord again = test("t0", "passed", 0.75);
  EXPECT_EQ(h.append(run_of({again})), 2);
  EXPECT_EQ(h.latest_of("t0")->pcc, 0.75);
  EXPECT_EQ(h.load(2)->tests.size(), 1u);
}

// Each run keeps the mean over its tests with layers of their share on nss
// (the report's trend); a run record from before it was kept reads -1.
TEST(RunHistory, ARunKeepsItsNssCoverage) {
  TempDir dir;
  const std::string spec = dir.write("spec.yaml", "models: []\n");
  auto store = Store::open(dir.path("db"));
  History h(*store, spec);
  TestRecord half = test("a", "passed");  // Conv_c1 on nss, plus one on css: 0.5
  half.layers.push_back(layer("Relu_r1", Executor::kCss, {{Executor::kCss, ok(1, 1)}}));
  TestRecord none = test("b", "failed");  // no layer on nss: 0
  none.layers[0].recommended = std::nullopt;
  TestRecord skipped = test("c", "skipped");  // without layers: not counted
  skipped.layers.clear();
  h.append(run_of({half, none, skipped}));
  h.append(run_of({skipped}));
  const auto runs = h.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_DOUBLE_EQ(runs[0].nss_coverage, 0.25);
  EXPECT_EQ(runs[1].nss_coverage, -1);
  nlohmann::json old = to_json(runs[0]);
  old.erase("nss_coverage");
  EXPECT_EQ(run_from_json(old).nss_coverage, -1);
}

TEST(RunHistory, SpecsKeepSeparateHistories) {
  TempDir dir;
  auto store = Store::open(dir.path("db"));
  History a(*store, dir.write("a.yaml", ""));
  History b(*store, dir.write("b.yaml", ""));
  a.append(run_of({test("x", "passed")}));
  EXPECT_EQ(b.append(run_of({test("y", "failed")})), 1);
  EXPECT_EQ(a.runs().size(), 1u);
  EXPECT_EQ(b.latest().count("x"), 0u);
  EXPECT_EQ(History::specs(*store), (std::vector<std::string>{dir.path("a.yaml"), dir.path("b.yaml")}));
}

TEST(RunHistory, BadRecordsAreErrorsNamingTheKey) {
  TempDir dir;
  auto store = Store::open(dir.path("db"));
  EXPECT_NE(error_of([&] { store->put_run_records({{"nokey", "{}"}}); }).find("must contain '/'"), std::string::npos);
  EXPECT_NE(error_of([&] { store->put_run_records({{"a/b", "{"}}); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of([&] { store->run_records("a"); }).find("must end in '/'"), std::string::npos);
  History h(*store, dir.path("s.yaml"));
  h.append(run_of({test("a", "passed")}));
  // Overwrite run 1's test record with a record of the wrong shape.
  const auto keys = store->run_records("history/");
  std::string test_key;
  for (const auto& [k, v] : keys)
    if (k.find("/tests/") != std::string::npos) test_key = k;
  ASSERT_FALSE(test_key.empty());
  store->put_run_records({{test_key, "{\"id\": \"a\", \"pcc\": \"high\"}"}});
  const std::string e = error_of([&] { h.load(1); });
  EXPECT_NE(e.find(test_key), std::string::npos) << e;
  EXPECT_NE(e.find("field 'pcc' is not a number"), std::string::npos) << e;
}

TEST(RunDiff, OutcomeChangesAreNamed) {
  const DiffThresholds th;
  auto change = [&](const std::string& a, const std::string& b) {
    const TestRecord ta = test("t", a), tb = test("t", b);
    return diff_test(&ta, tb, th).change;
  };
  EXPECT_EQ(change("passed", "failed"), "new failure");
  EXPECT_EQ(change("xfailed", "failed"), "new failure");
  EXPECT_EQ(change("failed", "passed"), "fixed");
  EXPECT_EQ(change("failed", "xpassed"), "fixed");
  EXPECT_EQ(change("failed", "failed"), "still failing");
  EXPECT_EQ(change("failed", "skipped"), "outcome");
  EXPECT_EQ(change("passed", "passed"), "unchanged");
  EXPECT_EQ(diff_test(nullptr, test("t", "passed"), th).change, "new test");
}

TEST(RunDiff, LayerChangesAndDriftBeyondTheThresholds) {
  TestRecord a = test("t", "passed", 0.999, 1.0), b = test("t", "passed", 0.990, 1.5);
  b.layers = {layer("Conv_c1", Executor::kCss, {{Executor::kNss, err("unsupported: no")}, {Executor::kCss, ok(1, 2)}}),
              layer("Relu_r1", Executor::kNss, {{Executor::kNss, ok(1, 1)}})};
  a.layers.push_back(layer("Gemm_g", std::nullopt, {}));
  const TestChange c = diff_test(&a, b, DiffThresholds{});
  EXPECT_EQ(c.change, "unchanged");
  EXPECT_TRUE(c.pcc_drift);
  EXPECT_TRUE(c.time_drift);
  const std::vector<LayerChange> want = {{"Conv_c1", "status", "nss", "success", "error", "unsupported: no"},
                                         {"Conv_c1", "recommended", "", "nss", "css", ""},
                                         {"Conv_c1", "time", "css", "0.5 ms", "2 ms", "+300%"},
                                         {"Relu_r1", "added", "", "", "", "Op() f32[1]"},
                                         {"Gemm_g", "removed", "", "", "", "Op() f32[1]"}};
  EXPECT_EQ(c.layers, want);
  EXPECT_EQ(since_text(c), "pcc drift -0.009; time drift +50%; 3 layers changed");
  // Looser thresholds: no drift; a PCC change on the same executor is a layer change.
  b = test("t", "passed", 0.998, 1.1);
  b.layers[0].executors[Executor::kNss].pcc = 0.98;
  const TestChange loose = diff_test(&a, b, DiffThresholds{0.01, 0.5, 0.001});
  EXPECT_FALSE(loose.pcc_drift);
  EXPECT_FALSE(loose.time_drift);
  ASSERT_EQ(loose.layers.size(), 2u);
  EXPECT_EQ(loose.layers[0], (LayerChange{"Conv_c1", "pcc", "nss", "0.9999", "0.98", ""}));
  EXPECT_EQ(since_text(loose), "2 layers changed");
  EXPECT_EQ(since_text(diff_test(&a, a, DiffThresholds{})), "unchanged");
}

TEST(RunDiff, TextAndJsonListTheChangedTests) {
  RunRecord a = run_of({test("x", "passed"), test("y", "passed"), test("z", "failed")});
  RunRecord b = run_of({test("x", "failed"), test("y", "passed"), test("w", "passed")});
  a.seq = 1;
  b.seq = 2;
  b.spec = "/s/spec.yaml";
  b.last_failed = true;
  const RunDiff d = diff_runs(a, b, DiffThresholds{});
  EXPECT_EQ(diff_text(d),
            "diff of /s/spec.yaml: run 1 (2026-01-01T00:00:00Z, tests 3) -> run 2 (2026-01-01T00:00:00Z, tests 3, "
            "--last-failed)\n"
            "thresholds: pcc drift > 0.001, time drift > 20% and > 0.001 ms\n"
            "x: new failure (passed -> failed, bringup PASSED -> FAILED_RUNTIME)\n"
            "w: new test (passed)\n"
            "not in run 2: z\n"
            "summary: new failure 1, fixed 0, still failing 0, outcome 0, unchanged 1, new test 1, not run 1; "
            "with pcc drift 0, time drift 0, layer changes 0\n");
  const nlohmann::json j = diff_json(d);
  EXPECT_EQ(j["tests"].size(), 2u);
  EXPECT_EQ(j["tests"][0]["id"], "x");
  EXPECT_EQ(j["tests"][0]["outcome"], nlohmann::json({"passed", "failed"}));
  EXPECT_EQ(j["tests"][1]["outcome"], nlohmann::json({nullptr, "passed"}));
  EXPECT_EQ(j["unchanged"], nlohmann::json({"y"}));
  EXPECT_EQ(j["not_run"], nlohmann::json({"z"}));
  EXPECT_EQ(j["summary"]["new failure"], 1);
  EXPECT_EQ(j["b"]["last_failed"], true);
}
