// tt-xla's JUnit `tags` property and guidance tags (pipeline/matrix/matrix_report.h
// junit_tags, guidance_tags), and the JUnit properties that carry them.
// (Read back by Python's ElementTree and ast.literal_eval:
// tests/matrix/test_matrix_history.cc.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/matrix/matrix_report.h"

using namespace torq::pipeline::matrix;

namespace {

struct One {
  ModelEntry model{"demo", "/m/demo.onnx", "", {}};
  TestCase test;
  TestResult result;
  One(TestStatus status, Outcome outcome, Bringup bringup, double pcc, double required_pcc) {
    test.id = "demo-bf16-edge-discover";
    test.model = &model;
    test.variant.name = "bf16";
    test.target.name = "edge";
    test.config.status = status;
    test.config.required_pcc = required_pcc;
    result.test = &test;
    result.outcome = outcome;
    result.bringup = bringup;
    result.run.ran = true;
    result.run.pcc = pcc;
  }
};

std::vector<std::string> guidance(TestStatus s, Bringup b, double pcc, double required, bool assert_pcc = true) {
  One o(s, Outcome::kPassed, b, pcc, required);
  o.test.config.assert_pcc = assert_pcc;
  return guidance_tags(o.result);
}

using G = std::vector<std::string>;

}  // namespace

TEST(MatrixTags, GuidanceFollowsTtXla) {
  const auto P = Bringup::kPassed;
  const auto EP = TestStatus::kExpectedPassing;
  EXPECT_EQ(guidance(EP, P, 0.9999, 0.99), G{});
  EXPECT_EQ(guidance(EP, P, 0.985, 0.97), G{"RAISE_PCC"});  // above 0.98 + 0.004
  EXPECT_EQ(guidance(EP, P, 0.983, 0.97), G{});             // within the buffer of 0.98
  EXPECT_EQ(guidance(EP, P, 0.9945, 0.97), G{"RAISE_PCC_099"});
  EXPECT_EQ(guidance(EP, P, 0.9999, 0.99, false), G{"ENABLE_PCC_099"});
  EXPECT_EQ(guidance(EP, P, 0.96, 0.95, false), G{"ENABLE_PCC"});
  EXPECT_EQ(guidance(TestStatus::kKnownFailureXfail, P, -1, 0.99), G{"RM_XFAIL"});
  EXPECT_EQ(guidance(TestStatus::kKnownFailureXfail, Bringup::kIncorrectResult, 0.5, 0.99), G{"RM_XFAIL"});
  EXPECT_EQ(guidance(TestStatus::kKnownFailureXfail, Bringup::kFailedRuntime, -1, 0.99), G{});
  EXPECT_EQ(guidance(TestStatus::kUnspecified, P, 0.9999, 0.99), G{"ADD_CONFIG"});
}

TEST(MatrixTags, TagsAreAPythonDictLiteral) {
  One o(TestStatus::kExpectedPassing, Outcome::kFailed, Bringup::kFailedCompilation, 0.5, 0.99);
  o.result.message = "it's a \"quote\"\\ and\nline";
  o.result.run.failed_step = "compile";
  o.result.run.max_abs = 0.25;
  o.result.run.layers = 14;
  o.result.run.critical_failures = 1;
  o.result.run.executor_distribution = {{"nss", 12}, {"css", 1}, {"none", 1}};
  o.result.since_previous = "new failure; 2 layers changed";
  EXPECT_EQ(junit_tags(o.result),
            "{'test_name': 'demo-bf16-edge-discover', 'specific_test_case': 'demo-bf16-edge-discover', "
            "'model_name': 'demo', 'variant': 'bf16', 'target': 'edge', 'run_mode': 'discover', "
            "'outcome': 'failed', 'bringup_status': 'FAILED_COMPILATION', 'model_test_status': 'EXPECTED_PASSING', "
            "'pcc': 0.5, 'required_pcc': 0.99, 'pcc_threshold': 0.99, 'pcc_assertion_enabled': True, 'atol': 0.25, "
            "'executors': {'css': 1, 'none': 1, 'nss': 12}, 'layers': 14, 'critical_failures': 1, "
            "'device_time_ms': None, 'failing_reason': {'name': 'compile', 'description': "
            "'it\\'s a \"quote\"\\\\ and\\nline'}, 'since_previous': 'new failure; 2 layers changed', "
            "'guidance': []}");
}

TEST(MatrixTags, JunitHasTagsSinceAndErrorMessageProperties) {
  One failed(TestStatus::kUnspecified, Outcome::kFailed, Bringup::kFailedRuntime, -1, 0.99);
  failed.result.message = "runtime failed";
  failed.result.since_previous = "new failure";
  One passed(TestStatus::kExpectedPassing, Outcome::kPassed, Bringup::kPassed, 0.9999, 0.99);
  const std::string xml = junit_xml({failed.result, passed.result}, RunInfo{});
  EXPECT_NE(xml.find("<property name=\"since_previous\" value=\"new failure\"/>\n"
                     "      <property name=\"tags\" value=\"{&apos;test_name&apos;: "),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<property name=\"error_message\" value=\"runtime failed\"/>"), std::string::npos) << xml;
  // One error_message (the failure), two tags, one since_previous (the passed test has none).
  auto count = [&xml](const std::string& what) {
    size_t n = 0;
    for (size_t at = xml.find(what); at != std::string::npos; at = xml.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("name=\"error_message\""), 1u);
  EXPECT_EQ(count("name=\"tags\""), 2u);
  EXPECT_EQ(count("name=\"since_previous\""), 1u);
}
