// Outcomes and exit-code rules of a matrix run (pipeline/matrix/matrix.h, judge /
// unexpected), one test per row of the rules, and the config suggestions
// (suggest) a run produces.
#include <gtest/gtest.h>

#include "pipeline/matrix/matrix.h"
#include "tests/unit/matrix_fixture.h"

namespace torq::pipeline::matrix {
namespace {

TestCase make_test(TestStatus status, const std::string& target = "sim") {
  TestCase t;
  t.id = "resnet-fp32-" + target + "-discover";
  t.target.name = target;
  t.config.status = status;
  return t;
}

TestRun passing_run(double pcc = 0.9995) {
  TestRun r;
  r.ran = true;
  r.pcc = pcc;
  r.max_abs = 0.001;
  r.max_rel = 0.002;
  r.layers = 12;
  return r;
}

TestRun failing_run(const std::string& step, const std::string& message) {
  TestRun r = passing_run();
  r.failed_step = step;
  r.message = message;
  return r;
}

// A converted variant's run has two comparisons; the comparators judge the
// one the spec selects, and their message says which.
TEST(MatrixOutcome, AConvertedRunIsJudgedAgainstTheComparisonTheSpecSelects) {
  TestCase t = make_test(TestStatus::kExpectedPassing);
  t.config.required_pcc = 0.99;
  TestRun run = passing_run(1.0);
  run.e2e = true;
  run.converted_pcc = 1.0;
  run.converted_max_abs = 0;
  run.converted_max_rel = 0;
  run.e2e_pcc = 0.976;
  run.e2e_max_abs = 0.5;
  run.e2e_max_rel = 3;
  TestRun original = run, converted = run;
  select_compared(&original, true);
  select_compared(&converted, false);
  EXPECT_EQ(original.pcc, 0.976);
  EXPECT_EQ(original.max_abs, 0.5);
  EXPECT_EQ(original.judged_against, "the fp32 original");
  EXPECT_EQ(converted.pcc, 1.0);
  EXPECT_EQ(converted.max_rel, 0.0);
  EXPECT_EQ(converted.judged_against, "the converted model");
  const TestResult a = judge(t, original, false);
  EXPECT_EQ(a.outcome, Outcome::kFailed);
  EXPECT_EQ(a.bringup, Bringup::kIncorrectResult);
  EXPECT_EQ(a.message, "pcc 0.976 against the fp32 original below required 0.99");
  EXPECT_EQ(judge(t, converted, false).outcome, Outcome::kPassed);
  // No end-to-end figure (the original could not run): unknown, and why.
  TestRun none = run;
  none.e2e_pcc = none.e2e_max_abs = none.e2e_max_rel = -1;
  none.e2e_error = "the fp32 original's run failed: boom";
  select_compared(&none, true);
  EXPECT_EQ(judge(t, none, false).message,
            "pcc against the fp32 original unknown (the fp32 original's run failed: boom)");
  // An fp32 run has one comparison: nothing to select.
  TestRun fp32 = passing_run(0.5);
  select_compared(&fp32, true);
  EXPECT_EQ(fp32.pcc, 0.5);
  EXPECT_EQ(fp32.judged_against, "");
}

TEST(MatrixOutcome, Names) {
  EXPECT_STREQ(outcome_name(Outcome::kXpassed), "xpassed");
  EXPECT_STREQ(outcome_name(Outcome::kSkipped), "skipped");
  EXPECT_STREQ(test_status_name(TestStatus::kKnownFailureXfail), "KNOWN_FAILURE_XFAIL");
  EXPECT_STREQ(bringup_name(Bringup::kFailedFeCompilation), "FAILED_FE_COMPILATION");
  EXPECT_STREQ(mode_name(Mode::kSubgraph), "subgraph");
}

TEST(MatrixOutcome, ExpectedPassingPassIsPassed) {
  const TestCase t = make_test(TestStatus::kExpectedPassing);
  const TestResult r = judge(t, passing_run(), false);
  EXPECT_EQ(r.test, &t);
  EXPECT_EQ(r.outcome, Outcome::kPassed);
  EXPECT_EQ(r.bringup, Bringup::kPassed);
  EXPECT_EQ(r.message, "");
  EXPECT_EQ(r.run.layers, 12);
  EXPECT_FALSE(unexpected(r));
}

TEST(MatrixOutcome, ExpectedPassingFailIsFailed) {
  const TestCase t = make_test(TestStatus::kExpectedPassing);
  const TestResult r = judge(t, failing_run("runtime", "segfault in conv1"), false);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.bringup, Bringup::kFailedRuntime);
  EXPECT_EQ(r.message, "runtime failed: segfault in conv1");
  EXPECT_TRUE(unexpected(r));
}

TEST(MatrixOutcome, UnspecifiedPassAndFail) {
  const TestCase t = make_test(TestStatus::kUnspecified);
  const TestResult pass = judge(t, passing_run(), false);
  EXPECT_EQ(pass.outcome, Outcome::kPassed);
  EXPECT_FALSE(unexpected(pass));
  const TestResult fail = judge(t, failing_run("compile", "no kernel"), false);
  EXPECT_EQ(fail.outcome, Outcome::kFailed);
  EXPECT_EQ(fail.bringup, Bringup::kFailedCompilation);
  EXPECT_TRUE(unexpected(fail));
}

TEST(MatrixOutcome, XfailFailIsXfailed) {
  TestCase t = make_test(TestStatus::kKnownFailureXfail);
  t.config.reason = "known bug";
  const TestResult r = judge(t, failing_run("compile", "no kernel"), false);
  EXPECT_EQ(r.outcome, Outcome::kXfailed);
  EXPECT_EQ(r.bringup, Bringup::kFailedCompilation);
  EXPECT_EQ(r.message, "compile failed: no kernel (known bug)");
  EXPECT_FALSE(unexpected(r));
}

TEST(MatrixOutcome, XfailPassIsXpassedAndUnexpected) {
  TestCase t = make_test(TestStatus::kKnownFailureXfail);
  t.config.reason = "known bug";
  const TestResult r = judge(t, passing_run(), false);
  EXPECT_EQ(r.outcome, Outcome::kXpassed);
  EXPECT_EQ(r.bringup, Bringup::kPassed);
  EXPECT_EQ(r.message, "KNOWN_FAILURE_XFAIL test passed (known bug)");
  EXPECT_TRUE(unexpected(r));
}

TEST(MatrixOutcome, StrictXfailTurnsXpassIntoFailed) {
  const TestCase t = make_test(TestStatus::kKnownFailureXfail);
  const TestResult r = judge(t, passing_run(), true);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.message, "xpassed (strict): KNOWN_FAILURE_XFAIL test passed");
  EXPECT_TRUE(unexpected(r));
  EXPECT_EQ(judge(t, failing_run("result", "bad"), true).outcome, Outcome::kXfailed);
}

TEST(MatrixOutcome, NotSupportedSkipIsSkippedWhateverTheRun) {
  TestCase t = make_test(TestStatus::kNotSupportedSkip);
  t.config.reason = "no bf16 resize";
  for (const TestRun& run : {passing_run(), failing_run("runtime", "x"), TestRun{}}) {
    const TestResult r = judge(t, run, true);
    EXPECT_EQ(r.outcome, Outcome::kSkipped);
    EXPECT_EQ(r.bringup, Bringup::kUnknown);
    EXPECT_EQ(r.message, "NOT_SUPPORTED_SKIP: no bf16 resize");
    EXPECT_FALSE(unexpected(r));
  }
}

TEST(MatrixOutcome, TargetOutsideSupportedTargetsIsSkipped) {
  TestCase astra = make_test(TestStatus::kExpectedPassing, "astra");
  astra.config.supported_targets = {"sim", "sim-strict"};
  const TestResult r = judge(astra, failing_run("runtime", "x"), false);
  EXPECT_EQ(r.outcome, Outcome::kSkipped);
  EXPECT_EQ(r.message, "target 'astra' not in supported_targets");
  EXPECT_FALSE(unexpected(r));
  TestCase sim = make_test(TestStatus::kExpectedPassing, "sim");
  sim.config.supported_targets = {"sim", "sim-strict"};
  EXPECT_EQ(judge(sim, failing_run("runtime", "x"), false).outcome, Outcome::kFailed);
}

TEST(MatrixOutcome, PlaceholderIsSkippedNotStarted) {
  TestCase t = make_test(TestStatus::kUnspecified);
  t.placeholder = true;
  t.config.reason = "not yet exported";
  t.config.bringup = Bringup::kPassed;
  const TestResult r = judge(t, TestRun{}, true);
  EXPECT_EQ(r.outcome, Outcome::kSkipped);
  EXPECT_EQ(r.bringup, Bringup::kNotStarted);
  EXPECT_EQ(r.message, "placeholder (not yet added): not yet exported");
  EXPECT_FALSE(unexpected(r));
}

TEST(MatrixOutcome, NotRunIsSkippedWithItsReason) {
  const TestCase t = make_test(TestStatus::kExpectedPassing);
  TestRun run;
  run.skip_reason = "deselected by -k";
  const TestResult r = judge(t, run, false);
  EXPECT_EQ(r.outcome, Outcome::kSkipped);
  EXPECT_EQ(r.message, "deselected by -k");
  EXPECT_EQ(judge(t, TestRun{}, false).message, "not run");
}

TEST(MatrixOutcome, BringupComesFromTheFailedStep) {
  const TestCase t = make_test(TestStatus::kUnspecified);
  EXPECT_EQ(judge(t, failing_run("import", "bad onnx"), false).bringup, Bringup::kFailedFeCompilation);
  EXPECT_EQ(judge(t, failing_run("compile", "x"), false).bringup, Bringup::kFailedCompilation);
  EXPECT_EQ(judge(t, failing_run("runtime", "x"), false).bringup, Bringup::kFailedRuntime);
  EXPECT_EQ(judge(t, failing_run("result", "x"), false).bringup, Bringup::kIncorrectResult);
  EXPECT_EQ(judge(t, failing_run("upload", "x"), false).bringup, Bringup::kUnknown);
  EXPECT_EQ(judge(t, failing_run("import", ""), false).message, "import failed");
}

TEST(MatrixOutcome, ConfigBringupIsKept) {
  TestCase t = make_test(TestStatus::kKnownFailureXfail);
  t.config.bringup = Bringup::kFailedCompilation;
  EXPECT_EQ(judge(t, failing_run("runtime", "x"), false).bringup, Bringup::kFailedCompilation);
  EXPECT_EQ(judge(t, passing_run(), false).bringup, Bringup::kFailedCompilation);
}

TEST(MatrixOutcome, PccBelowRequiredFailsWithIncorrectResult) {
  TestCase t = make_test(TestStatus::kExpectedPassing);
  const TestResult r = judge(t, passing_run(0.95), false);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.bringup, Bringup::kIncorrectResult);
  EXPECT_EQ(r.message, "pcc 0.95 below required 0.99");
  EXPECT_EQ(judge(t, passing_run(0.99), false).outcome, Outcome::kPassed);  // equal is enough
  t.config.required_pcc = 0.9;
  EXPECT_EQ(judge(t, passing_run(0.95), false).outcome, Outcome::kPassed);
  const TestResult unknown = judge(t, passing_run(-1), false);
  EXPECT_EQ(unknown.outcome, Outcome::kFailed);
  EXPECT_EQ(unknown.message, "pcc unknown (no compared result)");
}

TEST(MatrixOutcome, AssertPccFalseIgnoresPcc) {
  TestCase t = make_test(TestStatus::kExpectedPassing);
  t.config.assert_pcc = false;
  EXPECT_EQ(judge(t, passing_run(0.2), false).outcome, Outcome::kPassed);
  EXPECT_EQ(judge(t, passing_run(-1), false).outcome, Outcome::kPassed);
}

TEST(MatrixOutcome, AllcloseNeedsAbsOrRelWithinTolerance) {
  TestCase t = make_test(TestStatus::kExpectedPassing);
  t.config.assert_allclose = true;
  TestRun run = passing_run();
  run.max_abs = 0.005;  // within atol 0.01, rel far off
  run.max_rel = 3;
  EXPECT_EQ(judge(t, run, false).outcome, Outcome::kPassed);
  run.max_abs = 4;  // within rtol 0.01, abs far off
  run.max_rel = 0.009;
  EXPECT_EQ(judge(t, run, false).outcome, Outcome::kPassed);
  run.max_abs = 0.5;
  run.max_rel = 0.2;
  const TestResult r = judge(t, run, false);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.bringup, Bringup::kIncorrectResult);
  EXPECT_EQ(r.message, "not allclose: max_abs 0.5 > atol 0.01 and max_rel 0.2 > rtol 0.01");
  t.config.assert_allclose = false;
  EXPECT_EQ(judge(t, run, false).outcome, Outcome::kPassed);
}

TEST(MatrixOutcome, CriticalFailuresFail) {
  const TestCase t = make_test(TestStatus::kExpectedPassing);
  TestRun run = passing_run();
  run.critical_failures = 2;
  const TestResult r = judge(t, run, false);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.bringup, Bringup::kFailedRuntime);
  EXPECT_EQ(r.message, "2 critical failures");
}

// ---------------------------------------------------------------- suggest

const char* kSuggestHeader =
    "# Each entry is the test's whole config after the edit: let it replace the\n"
    "# exact entry its comment names, or add it to a test_config file (an exact\n"
    "# ID beats a glob).\n"
    "test_config:\n";

TEST(MatrixSuggest, NothingToSuggestIsEmpty) {
  TestCase listed = make_test(TestStatus::kExpectedPassing);
  listed.config.key = "resnet-fp32-sim-discover";
  listed.config.source = "a.yaml:2:3";
  TestCase placeholder = make_test(TestStatus::kUnspecified);
  placeholder.placeholder = true;
  const std::vector<TestResult> results = {judge(listed, passing_run(0.9905), false),
                                           judge(listed, failing_run("runtime", "x"), false),
                                           judge(placeholder, TestRun{}, false)};
  EXPECT_EQ(suggest(results), "");
  EXPECT_EQ(suggest({}), "");
}

TEST(MatrixSuggest, XpassedIsPromotedAndPccRaised) {
  TestCase t = make_test(TestStatus::kKnownFailureXfail);
  t.config.bringup = Bringup::kFailedRuntime;
  t.config.markers = {"push", "nightly"};
  t.config.reason = "known bug";
  t.config.key = "resnet-*";
  t.config.source = "a.yaml:2:3";
  EXPECT_EQ(suggest({judge(t, passing_run(0.9995), true)}),
            std::string("# torq matrix suggest: 1 config edit from a run.\n") + kSuggestHeader +
                "  # xpassed: KNOWN_FAILURE_XFAIL but passed; promote to EXPECTED_PASSING; pcc 0.9995 meets "
                "required_pcc 0.99 with margin: raise to 0.999 (was 'resnet-*' at a.yaml:2:3)\n"
                "  resnet-fp32-sim-discover:\n"
                "    status: EXPECTED_PASSING\n"
                "    bringup_status: PASSED\n"
                "    required_pcc: 0.999\n"
                "    markers: [push, nightly]\n");
}

TEST(MatrixSuggest, PccMetWithMarginIsRaised) {
  TestCase t = make_test(TestStatus::kExpectedPassing);
  t.config.key = "resnet-fp32-sim-discover";
  t.config.source = "a.yaml:2:3";
  t.config.required_pcc = 0.98;
  t.config.assert_allclose = true;
  t.config.allclose_atol = 0.05;
  EXPECT_EQ(suggest({judge(t, passing_run(0.99568), false)}),
            std::string("# torq matrix suggest: 1 config edit from a run.\n") + kSuggestHeader +
                "  # pcc 0.99568 meets required_pcc 0.98 with margin: raise to 0.995 (was 'resnet-fp32-sim-discover' "
                "at a.yaml:2:3)\n"
                "  resnet-fp32-sim-discover:\n"
                "    status: EXPECTED_PASSING\n"
                "    required_pcc: 0.995\n"
                "    assert_allclose: true\n"
                "    allclose_atol: 0.05\n");
  // Exactly 0.001 above is enough; less is not; assert_pcc false never raises.
  t.config.required_pcc = 0.994;
  EXPECT_NE(suggest({judge(t, passing_run(0.9955), false)}), "");
  t.config.required_pcc = 0.995;
  EXPECT_EQ(suggest({judge(t, passing_run(0.9959), false)}), "");
  t.config.required_pcc = 0.5;
  t.config.assert_pcc = false;
  EXPECT_EQ(suggest({judge(t, passing_run(0.9959), false)}), "");
}

TEST(MatrixSuggest, UnlistedTestsAreAddedByOutcomeInIdOrder) {
  TestCase failing = make_test(TestStatus::kUnspecified);
  failing.id = "b-fp32-sim-discover";
  TestCase passing = make_test(TestStatus::kUnspecified);
  passing.id = "a-fp32-sim-discover";
  TestCase skipped = make_test(TestStatus::kUnspecified);
  skipped.id = "c-fp32-sim-discover";
  const std::vector<TestResult> results = {judge(failing, failing_run("runtime", "segfault in \"conv1\""), false),
                                           judge(skipped, TestRun{}, false),
                                           judge(passing, passing_run(0.9905), false)};
  const std::string text = suggest(results);
  EXPECT_EQ(text, std::string("# torq matrix suggest: 2 config edits from a run.\n") + kSuggestHeader +
                      "  # no config entry; passed: add as EXPECTED_PASSING\n"
                      "  a-fp32-sim-discover:\n"
                      "    status: EXPECTED_PASSING\n"
                      "  # no config entry; failed: add as KNOWN_FAILURE_XFAIL\n"
                      "  b-fp32-sim-discover:\n"
                      "    status: KNOWN_FAILURE_XFAIL\n"
                      "    bringup_status: FAILED_RUNTIME\n"
                      "    reason: \"runtime failed: segfault in \\\"conv1\\\"\"\n");

  // The suggestion reads back as a config file.
  matrix_test::TempDir d;
  const ConfigSet set = load_configs({d.write("suggest.yaml", text)});
  ASSERT_EQ(set.entries.size(), 2u);
  EXPECT_EQ(set.entries[1].key, "b-fp32-sim-discover");
  EXPECT_EQ(set.entries[1].base.status, TestStatus::kKnownFailureXfail);
  EXPECT_EQ(set.entries[1].base.bringup, Bringup::kFailedRuntime);
  EXPECT_EQ(set.entries[1].base.reason, "runtime failed: segfault in \"conv1\"");
}

}  // namespace
}  // namespace torq::pipeline::matrix
