// Matrix reports (pipeline/matrix/matrix_report.h): JUnit XML structure, counts and
// escaping, the JSON summary's fields, counts and exit code, and the HTML
// report's escaping and grid markup. (The HTML in a browser:
// tests/html/check_html_report.sh.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/matrix/matrix_history.h"
#include "pipeline/matrix/matrix_report.h"

using namespace torq::pipeline;
using namespace torq::pipeline::matrix;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

struct Sample {
  ModelEntry resnet{"resnet18", "/m/resnet18.onnx", "", {}};
  std::vector<TestCase> cases;
  std::vector<TestResult> results;

  // One test per outcome, in the order given, IDs resnet18-v<i>-sim-discover.
  explicit Sample(const std::vector<Outcome>& outcomes) {
    cases.resize(outcomes.size());
    results.resize(outcomes.size());
    for (size_t i = 0; i < outcomes.size(); ++i) {
      cases[i].variant.name = "v" + std::to_string(i);
      cases[i].id = "resnet18-v" + std::to_string(i) + "-sim-discover";
      cases[i].model = &resnet;
      results[i].test = &cases[i];
      results[i].outcome = outcomes[i];
    }
  }
};

}  // namespace

TEST(MatrixReport, JunitTestcaseHasEveryPropertyAndEscapes) {
  Sample s({Outcome::kFailed});
  s.cases[0].id = "a<b&\"c'>-fp32-sim-run";
  s.cases[0].config.status = TestStatus::kExpectedPassing;
  s.cases[0].config.required_pcc = 0.995;
  TestResult& r = s.results[0];
  r.bringup = Bringup::kIncorrectResult;
  r.message = "x < y & \"z\" 'w'";
  r.run.ran = true;
  r.run.failed_step = "result";
  r.run.message = "pcc low\nsecond";
  r.run.pcc = 0.9875;
  r.run.layers = 12;
  r.run.critical_failures = 2;
  r.run.executor_distribution = {{"host", 1}, {"css", 3}, {"nss", 8}};
  r.run.wall_s = 1.23456;
  RunInfo info;
  info.run_id = "r1";
  const std::string xml = junit_xml(s.results, info);
  const std::string expected =
      "  <testcase classname=\"resnet18\" name=\"a&lt;b&amp;&quot;c&apos;&gt;-fp32-sim-run\" time=\"1.235\">\n"
      "    <properties>\n"
      "      <property name=\"outcome\" value=\"failed\"/>\n"
      "      <property name=\"bringup_status\" value=\"INCORRECT_RESULT\"/>\n"
      "      <property name=\"status\" value=\"EXPECTED_PASSING\"/>\n"
      "      <property name=\"pcc\" value=\"0.9875\"/>\n"
      "      <property name=\"required_pcc\" value=\"0.995\"/>\n"
      "      <property name=\"layers\" value=\"12\"/>\n"
      "      <property name=\"critical_failures\" value=\"2\"/>\n"
      "      <property name=\"executor_distribution\" value=\"nss:8,css:3,host:1\"/>\n"
      "      <property name=\"wall_time\" value=\"1.235\"/>\n"
      "      <property name=\"reason\" value=\"x &lt; y &amp; &quot;z&quot; &apos;w&apos;\"/>\n"
      "      <property name=\"tags\" value=\"{&apos;test_name&apos;: ";
  // The tags' content: tests/unit/test_matrix_tags.cc.
  const std::string expected_end =
      "&apos;guidance&apos;: []}\"/>\n"
      "      <property name=\"error_message\" value=\"x &lt; y &amp; &quot;z&quot; &apos;w&apos;\"/>\n"
      "    </properties>\n"
      "    <failure message=\"x &lt; y &amp; &quot;z&quot; &apos;w&apos;\" type=\"result\">"
      "x &lt; y &amp; &quot;z&quot; &apos;w&apos;&#10;pcc low&#10;second&#10;failed step: result</failure>\n"
      "  </testcase>\n";
  EXPECT_NE(xml.find(expected), std::string::npos) << xml;
  EXPECT_NE(xml.find(expected_end, xml.find(expected)), std::string::npos) << xml;
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"torq-matrix\" tests=\"1\" "
                      "failures=\"1\" errors=\"0\" skipped=\"0\" time=\"0.000\">\n",
                      0),
            0u)
      << xml;
  EXPECT_NE(xml.find("    <property name=\"run_id\" value=\"r1\"/>\n"), std::string::npos);
}

TEST(MatrixReport, JunitControlCharactersCannotBreakTheXml) {
  Sample s({Outcome::kSkipped});
  s.results[0].message = std::string("bell\x07 tab\t cr\r");
  const std::string xml = junit_xml(s.results, RunInfo{});
  EXPECT_NE(xml.find("<skipped message=\"bell\xEF\xBF\xBD tab&#9; cr&#13;\"/>"), std::string::npos) << xml;
}

TEST(MatrixReport, JunitCountsFailuresAndSkips) {
  Sample s({Outcome::kPassed, Outcome::kFailed, Outcome::kSkipped, Outcome::kXfailed, Outcome::kXpassed});
  s.results[3].message = "known";
  const std::string lax = junit_xml(s.results, RunInfo{});
  EXPECT_NE(lax.find("tests=\"5\" failures=\"1\" errors=\"0\" skipped=\"2\""), std::string::npos) << lax;
  EXPECT_EQ(count(lax, "<failure "), 1u);
  EXPECT_EQ(count(lax, "<skipped "), 2u);
  EXPECT_NE(lax.find("<skipped message=\"xfail: known\" type=\"xfail\"/>"), std::string::npos);
  EXPECT_NE(lax.find("<property name=\"outcome\" value=\"xpassed\"/>"), std::string::npos);

  RunInfo strict;
  strict.strict_xfail = true;
  s.results[4].message = "expected to fail but passed";
  const std::string xml = junit_xml(s.results, strict);
  EXPECT_NE(xml.find("tests=\"5\" failures=\"2\" errors=\"0\" skipped=\"2\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"expected to fail but passed\" type=\"xpass\">expected to fail but "
                     "passed</failure>"),
            std::string::npos)
      << xml;
}

TEST(MatrixReport, JunitPlaceholderClassnameIsTheModelPartOfItsId) {
  Sample s({Outcome::kSkipped});
  s.cases[0].model = nullptr;
  s.cases[0].placeholder = true;
  s.cases[0].variant.name = "bf16-b2";
  s.cases[0].id = "yolo-v8n-bf16-b2-sim-discover";
  const std::string xml = junit_xml(s.results, RunInfo{});
  EXPECT_NE(xml.find("<testcase classname=\"yolo-v8n\" name=\"yolo-v8n-bf16-b2-sim-discover\""), std::string::npos)
      << xml;
}

TEST(MatrixReport, SummaryCountsEveryOutcomeAndExitCode) {
  Sample ok({Outcome::kPassed, Outcome::kXfailed, Outcome::kSkipped, Outcome::kPassed});
  const nlohmann::json a = summary_json(ok.results, RunInfo{});
  EXPECT_EQ(a["counts"], nlohmann::json({{"passed", 2}, {"failed", 0}, {"skipped", 1}, {"xfailed", 1}, {"xpassed", 0}}));
  EXPECT_EQ(a["exit_code"], 0);
  EXPECT_EQ(a["tests"].size(), 4u);
  EXPECT_EQ(a["run"]["selected"], 4);

  Sample failed({Outcome::kPassed, Outcome::kFailed});
  EXPECT_EQ(summary_json(failed.results, RunInfo{})["exit_code"], 1);
  Sample xpassed({Outcome::kXpassed});
  EXPECT_EQ(summary_json(xpassed.results, RunInfo{})["exit_code"], 1);
}

TEST(MatrixReport, SummaryTestFields) {
  Sample s({Outcome::kPassed, Outcome::kSkipped});
  s.cases[0].mode = Mode::kRun;
  s.cases[0].target.name = "astra";
  s.cases[0].config.status = TestStatus::kExpectedPassing;
  s.results[0].bringup = Bringup::kPassed;
  s.results[0].run.ran = true;
  s.results[0].run.pcc = 0.999;
  s.results[0].run.max_abs = 0.25;
  s.results[0].run.layers = 3;
  s.results[0].run.executor_distribution = {{"nss", 2}, {"host", 1}};
  s.results[0].run.wall_s = 2.5;
  s.results[0].run.report_file = "out/r.json";
  s.results[0].run.device_ms = 0.125;
  s.results[0].since_previous = "fixed";
  s.results[1].message = "<not> supported & \"skipped\"";
  RunInfo info;
  info.spec = "m.yaml";
  info.run_id = "r9";
  info.jobs = 7;
  info.deselected = 3;
  info.strict_xfail = true;
  const nlohmann::json j = summary_json(s.results, info);
  EXPECT_EQ(j["tests"][0], nlohmann::json({{"id", "resnet18-v0-sim-discover"},
                                           {"model", "resnet18"},
                                           {"variant", "v0"},
                                           {"target", "astra"},
                                           {"mode", "run"},
                                           {"outcome", "passed"},
                                           {"bringup_status", "PASSED"},
                                           {"status", "EXPECTED_PASSING"},
                                           {"message", ""},
                                           {"ran", true},
                                           {"failed_step", ""},
                                           {"pcc", 0.999},
                                           {"max_abs", 0.25},
                                           {"max_rel", nullptr},
                                           {"full_model", false},
                                           {"pcc_against", nullptr},
                                           {"end_to_end", nullptr},
                                           {"converted", nullptr},
                                           {"first_failing_range", ""},
                                           {"required_pcc", 0.99},
                                           {"layers", 3},
                                           {"critical_failures", 0},
                                           {"executor_distribution", {{"host", 1}, {"nss", 2}}},
                                           {"wall_s", 2.5},
                                           {"device_ms", 0.125},
                                           {"since_previous", "fixed"},
                                           {"report", "out/r.json"}}));
  EXPECT_EQ(j["tests"][1]["pcc"], nullptr);
  EXPECT_EQ(j["tests"][1]["report"], nullptr);
  // A converted variant: both comparisons, and which one was judged.
  TestRun& c = s.results[0].run;
  c.e2e = true;
  c.e2e_pcc = 0.976;
  c.e2e_max_abs = 0.5;
  c.converted_pcc = 1;
  c.converted_max_abs = 0;
  c.converted_max_rel = 0;
  select_compared(&c, true);
  const nlohmann::json jc = summary_json(s.results, info);
  EXPECT_EQ(jc["tests"][0]["pcc"], 0.976);
  EXPECT_EQ(jc["tests"][0]["pcc_against"], "the fp32 original");
  EXPECT_EQ(jc["tests"][0]["end_to_end"], nlohmann::json({{"against", "the fp32 original"}, {"pcc", 0.976},
                                                          {"max_abs", 0.5}, {"max_rel", nullptr}, {"error", ""}}));
  EXPECT_EQ(jc["tests"][0]["converted"], nlohmann::json({{"against", "the converted model"}, {"pcc", 1.0},
                                                         {"max_abs", 0.0}, {"max_rel", 0.0}}));
  const std::string xml = junit_xml(s.results, info);
  for (const char* p : {"<property name=\"pcc\" value=\"0.976\"/>",
                        "<property name=\"pcc_against\" value=\"the fp32 original\"/>",
                        "<property name=\"e2e_pcc\" value=\"0.976\"/>",
                        "<property name=\"converted_pcc\" value=\"1\"/>"})
    EXPECT_NE(xml.find(p), std::string::npos) << p << "\n" << xml;
  const std::string html = html_report(s.results, {}, info);
  // Both comparisons on the PCC's hover (the table fits a 1,400-pixel window).
  EXPECT_NE(html.find("<td class=\"num below\" title=\"vs the fp32 original 0.976, vs the converted model 1 "
                      "(judged: the fp32 original)\">0.976</td>"),
            std::string::npos)
      << html;
  EXPECT_EQ(j["tests"][1]["message"], "<not> supported & \"skipped\"");
  EXPECT_EQ(j["tests"][1]["bringup_status"], "UNKNOWN");
  EXPECT_EQ(j["run"]["spec"], "m.yaml");
  EXPECT_EQ(j["run"]["jobs"], 7);
  EXPECT_EQ(j["run"]["deselected"], 3);
  EXPECT_EQ(j["run"]["strict_xfail"], true);
  // Text survives a round trip through the JSON text unchanged.
  EXPECT_EQ(nlohmann::json::parse(j.dump())["tests"][1]["message"], "<not> supported & \"skipped\"");
}

TEST(MatrixReport, AResultWithoutItsTestIsAnError) {
  std::vector<TestResult> results(1);
  try {
    junit_xml(results, RunInfo{});
    FAIL() << "no error";
  } catch (const PipelineError& e) {
    EXPECT_STREQ(e.what(), "matrix report: a result without its test");
  }
  EXPECT_THROW(summary_json(results, RunInfo{}), PipelineError);
  EXPECT_THROW(html_report(results, {}, RunInfo{}), PipelineError);
}

TEST(MatrixReport, HtmlEscapesEveryTextAndHasOneScript) {
  Sample s({Outcome::kFailed});
  s.cases[0].id = "a<b&\"c'>-fp32-sim-run";
  s.results[0].message = "<script>alert(1)</script>";
  RunInfo info;
  info.run_id = "<r&1>";
  info.k = "x' or \"y\"";
  const std::string html = html_report(s.results, {}, info);
  EXPECT_EQ(count(html, "<script>"), 1u);
  EXPECT_EQ(count(html, "http://") + count(html, "https://"), 0u);
  EXPECT_NE(html.find("<tr class=\"test outcome-failed\" data-outcome=\"failed\" "
                      "data-id=\"a&lt;b&amp;&quot;c&#39;&gt;-fp32-sim-run\" id=\"test-a&lt;b&amp;&quot;c&#39;&gt;-fp32-sim-run\">"
                      "<td class=\"id\">a&lt;b&amp;&quot;c&#39;&gt;-fp32-sim-run</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td class=\"msg\">&lt;script&gt;alert(1)&lt;/script&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<title>torq matrix &lt;r&amp;1&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("-k &#39;x&#39; or &quot;y&quot;&#39;"), std::string::npos);
  EXPECT_NE(html.find("<li class=\"outcome-failed\" data-outcome=\"failed\">failed <span class=\"count\">1</span></li>"),
            std::string::npos);
  EXPECT_EQ(count(html, "grid.html"), 0u);  // no grid page: no link
}

TEST(MatrixReport, HtmlGridMarksStatusRecommendationAndMetrics) {
  Sample s({Outcome::kPassed});
  ModelReport m;
  m.model_name = "resnet18";
  LayerReport l;
  l.info = {0, "Conv_<c1>", "Conv", "3:4"};
  ExecResult nss;
  nss.executor = Executor::kNss;
  nss.status = Status::kSuccess;
  nss.pcc = 0.9999;
  nss.max_abs = 0.25;
  nss.max_rel = 0.5;
  nss.runtime_ms = 0.125;
  nss.timing_runs = 2;
  nss.host_ms = 3;
  nss.worker_id = "w&1";
  ExecResult host;
  host.executor = Executor::kHost;
  host.status = Status::kError;
  host.error_class = "FAILED_RUNTIME";
  host.error_message = "bad \"thing\"";
  l.results = {{Executor::kNss, nss}, {Executor::kHost, host}};
  l.recommended = Executor::kNss;
  m.layers.push_back(l);
  // The grid is on the test's own page, which links back to its row.
  const std::string html = grid_page(s.results[0], m);
  EXPECT_EQ(count(html, "<script>"), 1u);
  EXPECT_NE(html.find("<a id=\"back\" href=\"../../report.html#test-resnet18-v0-sim-discover\">"), std::string::npos);
  EXPECT_NE(html.find("<section class=\"grid\" id=\"grid-resnet18-v0-sim-discover\" "
                      "data-id=\"resnet18-v0-sim-discover\">\n<p class=\"grid-summary\">resnet18: 1 layers; recommended nss 1; 0 critical failures</p>"),
            std::string::npos)
      << html;
  // Only the executors present get a column.
  EXPECT_NE(html.find("<th>nss</th><th>host</th><th>recommended</th>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"cell status-success recommended\" data-executor=\"nss\" "
                      "data-test=\"resnet18-v0-sim-discover\" data-layer=\"Conv_&lt;c1&gt;\" "
                      "title=\"nss: success (recommended)\npcc: 0.9999\nmax_abs: 0.25\nmax_rel: 0.5\n"
                      "runtime_ms: 0.125 (2 runs)\nhost_ms: 3\nworker: w&amp;1\">"
                      "<span class=\"star\">★</span> success</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td class=\"cell status-error\" data-executor=\"host\" data-test=\"resnet18-v0-sim-discover\" "
                      "data-layer=\"Conv_&lt;c1&gt;\" title=\"host: error\nerror_class: FAILED_RUNTIME\n"
                      "error: bad &quot;thing&quot;\nruntime_ms: unknown\nhost_ms: 0\nworker: -\">error</td>"),
            std::string::npos)
      << html;
  // report.html links the page and holds no layer.
  const std::string report = html_report(s.results, {"resnet18-v0-sim-discover"}, RunInfo{});
  EXPECT_NE(report.find("<td class=\"id\"><a href=\"reports/resnet18-v0-sim-discover/grid.html\">"), std::string::npos);
  EXPECT_EQ(count(report, "Conv_&lt;c1&gt;"), 0u);
  EXPECT_EQ(grid_page_path("a<b>/c d"), "reports/a_b__c_d/grid.html");
}

// A row is highlighted by what its since_previous text (run_diff.h
// since_text) says changed; "still failing" or "unchanged" alone is no change.
TEST(MatrixReport, HtmlHighlightsWhatChangedSinceThePreviousRun) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"new failure; 2 layers changed", "new-failure"}, {"fixed", "fixed"},
      {"passed -> skipped", "outcome"},                 {"still failing", ""},
      {"still failing; pcc drift -0.01", "drift"},      {"time drift +40%", "drift"},
      {"unchanged", ""},                                {"no previous run", ""},
      {"new test", "new-test"},                         {"", ""}};
  Sample s(std::vector<Outcome>(cases.size(), Outcome::kPassed));
  for (size_t i = 0; i < cases.size(); ++i) s.results[i].since_previous = cases[i].first;
  const std::string html = html_report(s.results, {}, RunInfo{});
  for (size_t i = 0; i < cases.size(); ++i) {
    const size_t row = html.find("data-id=\"" + s.cases[i].id + "\"");
    ASSERT_NE(row, std::string::npos);
    const std::string tag = html.substr(row, html.find('>', row) - row);
    const std::string& kind = cases[i].second;
    EXPECT_EQ(tag.find("data-change=\"" + kind + "\"") != std::string::npos, !kind.empty()) << cases[i].first << tag;
    EXPECT_EQ(tag.find("data-change") != std::string::npos, !kind.empty()) << cases[i].first << tag;
  }
  EXPECT_EQ(count(html, "<li class=\"change-drift\" data-change=\"drift\" data-count=\"2\">"), 1u) << html;
  EXPECT_EQ(count(html, "<span class=\"change-badge\">"), 6u + 5u);  // the rows' and the summary's
  Sample quiet({Outcome::kPassed});
  quiet.results[0].since_previous = "unchanged";
  EXPECT_EQ(html_report(quiet.results, {}, RunInfo{}).find("id=\"changes\""), std::string::npos);
}

// The trend: the spec's last runs from its history, drawn from two runs on.
TEST(MatrixReport, HtmlTrendFromTheRunHistoryNeedsTwoRuns) {
  std::vector<history::RunRecord> runs(3);
  for (int i = 0; i < 3; ++i) {
    runs[i].seq = i + 1;
    runs[i].counts = {{"passed", i + 1}, {"failed", 1}, {"skipped", 2}};
    runs[i].nss_coverage = i == 0 ? -1 : 0.5;
  }
  RunInfo info;
  info.trend = trend_points(runs, 2);
  ASSERT_EQ(info.trend.size(), 2u);
  EXPECT_EQ(info.trend[0].seq, 2);
  EXPECT_EQ(info.trend[1].passed, 3);
  EXPECT_EQ(info.trend[1].failed, 1);
  EXPECT_EQ(info.trend[1].total, 6);
  EXPECT_EQ(info.trend[1].nss_coverage, 0.5);
  Sample s({Outcome::kPassed});
  std::string html = html_report(s.results, {}, info);
  EXPECT_NE(html.find("<svg id=\"trend\" class=\"chart\" role=\"img\""), std::string::npos);
  EXPECT_EQ(count(html, "class=\"point point-passed\""), 2u);
  EXPECT_EQ(count(html, "class=\"point point-coverage\""), 2u);
  EXPECT_NE(html.find("<title>run 3 (): 3 of 6 tests passed, 1 failed</title>"), std::string::npos) << html;
  info.trend = trend_points(runs, 1);
  html = html_report(s.results, {}, info);
  EXPECT_EQ(html.find("<svg id=\"trend\""), std::string::npos);
  EXPECT_NE(html.find("No history yet (first run of this spec)"), std::string::npos);
}
