// Per-test config files and collection (pipeline/matrix/matrix.h): load_configs'
// fields and exact file:line:col errors, and collect's order, resolution
// (exact beats glob, target_overrides, EXCLUDE_MODEL), placeholders and
// errors (keys matching no test, ambiguous globs, unknown targets).
#include <gtest/gtest.h>

#include "pipeline/matrix/matrix.h"
#include "tests/unit/matrix_fixture.h"

namespace torq::pipeline::matrix {
namespace {

using matrix_test::error_of;
using matrix_test::TempDir;

const char* kFullEntry = R"(test_config:
  resnet-fp32-sim-discover:
    status: KNOWN_FAILURE_XFAIL
    bringup_status: INCORRECT_RESULT
    required_pcc: 0.95
    assert_pcc: false
    assert_allclose: true
    allclose_rtol: 0.05
    allclose_atol: 0.001
    markers: [push, nightly]
    supported_targets: [sim]
    target_overrides: {astra: {status: NOT_SUPPORTED_SKIP, reason: "no board"}}
    reason: "pcc low"
placeholders:
  yolov8n-fp32-sim-discover: {reason: "not yet exported", markers: [nightly]}
)";

TEST(MatrixConfig, ReadsEveryFieldAndResolvesTargetOverrides) {
  TempDir d;
  const std::string file = d.write("c.yaml", kFullEntry);
  const ConfigSet set = load_configs({file});
  ASSERT_EQ(set.entries.size(), 2u);
  const ConfigEntry& e = set.entries[0];
  EXPECT_EQ(e.key, "resnet-fp32-sim-discover");
  EXPECT_EQ(e.file, file);
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.col, 3);
  EXPECT_FALSE(e.placeholder);
  EXPECT_EQ(e.base.status, TestStatus::kKnownFailureXfail);
  EXPECT_EQ(e.base.bringup, Bringup::kIncorrectResult);
  EXPECT_EQ(e.base.required_pcc, 0.95);
  EXPECT_FALSE(e.base.assert_pcc);
  EXPECT_TRUE(e.base.assert_allclose);
  EXPECT_EQ(e.base.allclose_rtol, 0.05);
  EXPECT_EQ(e.base.allclose_atol, 0.001);
  EXPECT_EQ(e.base.markers, (std::vector<std::string>{"push", "nightly"}));
  EXPECT_EQ(e.base.supported_targets, (std::vector<std::string>{"sim"}));
  EXPECT_EQ(e.base.reason, "pcc low");
  EXPECT_EQ(e.base.source, file + ":2:3");
  EXPECT_EQ(e.base.key, "resnet-fp32-sim-discover");
  ASSERT_EQ(e.target_overrides.size(), 1u);
  const TestConfig& astra = e.target_overrides.at("astra");
  EXPECT_EQ(astra.status, TestStatus::kNotSupportedSkip);
  EXPECT_EQ(astra.reason, "no board");
  EXPECT_EQ(astra.bringup, Bringup::kIncorrectResult);  // the rest from the entry
  EXPECT_EQ(astra.required_pcc, 0.95);
  EXPECT_EQ(astra.markers, (std::vector<std::string>{"push", "nightly"}));
  EXPECT_EQ(astra.source, file + ":2:3");
  EXPECT_EQ(e.override_sources.at("astra"), file + ":12:24");

  const ConfigEntry& p = set.entries[1];
  EXPECT_EQ(p.key, "yolov8n-fp32-sim-discover");
  EXPECT_TRUE(p.placeholder);
  EXPECT_EQ(p.line, 15);
  EXPECT_EQ(p.base.reason, "not yet exported");
  EXPECT_EQ(p.base.markers, (std::vector<std::string>{"nightly"}));
  EXPECT_EQ(p.base.status, TestStatus::kUnspecified);
}

TEST(MatrixConfig, EmptyFileAndEmptyEntry) {
  TempDir d;
  EXPECT_TRUE(load_configs({d.write("empty.yaml", "")}).entries.empty());
  const ConfigSet set = load_configs({d.write("c.yaml", "test_config:\n  a-fp32-sim-run:\n")});
  ASSERT_EQ(set.entries.size(), 1u);
  EXPECT_EQ(set.entries[0].base.status, TestStatus::kUnspecified);
  EXPECT_EQ(set.entries[0].base.required_pcc, 0.99);
}

TEST(MatrixConfig, UnknownKeyHasADidYouMean) {
  TempDir d;
  const std::string f = d.write("c.yaml", "test_config:\n  x:\n    requird_pcc: 0.9\n");
  EXPECT_EQ(error_of([&] { load_configs({f}); }),
            f + ":3:5: unknown key 'requird_pcc' in test 'x' (did you mean 'required_pcc'?); allowed: allclose_atol, "
                "allclose_rtol, assert_allclose, assert_pcc, bringup_status, markers, reason, required_pcc, status, "
                "supported_targets, target_overrides");
  const std::string top = d.write("top.yaml", "test_configs:\n  x: {}\n");
  EXPECT_EQ(error_of([&] { load_configs({top}); }),
            top +
                ":1:1: unknown key 'test_configs' in test config file (did you mean 'test_config'?); allowed: "
                "placeholders, test_config");
}

TEST(MatrixConfig, DuplicateIdInOneFile) {
  TempDir d;
  const std::string f =
      d.write("c.yaml", "test_config:\n  x:\n    status: EXPECTED_PASSING\n  y: {}\n  x:\n    status: UNSPECIFIED\n");
  EXPECT_EQ(error_of([&] { load_configs({f}); }), f + ":5:3: duplicate test ID 'x' (first at " + f + ":2:3)");
  const std::string across = d.write("p.yaml", "test_config:\n  x: {}\nplaceholders:\n  x: {}\n");
  EXPECT_EQ(error_of([&] { load_configs({across}); }),
            across + ":4:3: duplicate test ID 'x' (first at " + across + ":2:3)");
}

TEST(MatrixConfig, DuplicateIdAcrossFiles) {
  TempDir d;
  const std::string a = d.write("a.yaml", "test_config:\n  w: {}\n  'x*': {}\n");
  const std::string b = d.write("b.yaml", "placeholders:\n  z: {}\ntest_config:\n  x*: {status: EXPECTED_PASSING}\n");
  EXPECT_EQ(error_of([&] { load_configs({a, b}); }), b + ":4:3: duplicate test ID 'x*' (first at " + a + ":3:3)");
}

TEST(MatrixConfig, BadEnumValueHasADidYouMean) {
  TempDir d;
  const std::string f = d.write("c.yaml", "test_config:\n  x:\n    status: EXPECTED_PASING\n");
  EXPECT_EQ(error_of([&] { load_configs({f}); }),
            f + ":3:13: bad value 'EXPECTED_PASING' for status (did you mean 'EXPECTED_PASSING'?); expected one of: "
                "EXPECTED_PASSING, KNOWN_FAILURE_XFAIL, NOT_SUPPORTED_SKIP, UNSPECIFIED, EXCLUDE_MODEL");
  const std::string g = d.write("g.yaml", "test_config:\n  x: {bringup_status: PASS}\n");
  EXPECT_EQ(error_of([&] { load_configs({g}); }),
            g + ":2:23: bad value 'PASS' for bringup_status (did you mean 'PASSED'?); expected one of: PASSED, "
                "INCORRECT_RESULT, FAILED_FE_COMPILATION, FAILED_COMPILATION, FAILED_RUNTIME, NOT_STARTED, UNKNOWN");
}

// Every number of a test config is range-checked, nan and inf included,
// and a second YAML document is refused, not ignored (issue 60).
TEST(MatrixConfig, EveryNumberIsRangeCheckedAndOneDocumentRead) {
  TempDir d;
  const std::pair<std::string, std::string> cases[] = {
      {"required_pcc: -1.5", "required_pcc must be a number in [-1, 1], got '-1.5'"},
      {"required_pcc: nan", "required_pcc must be a number in [-1, 1], got 'nan'"},
      {"allclose_rtol: -0.5", "allclose_rtol must be a finite number >= 0, got '-0.5'"},
      {"allclose_rtol: inf", "allclose_rtol must be a finite number >= 0, got 'inf'"},
      {"allclose_atol: nan", "allclose_atol must be a finite number >= 0, got 'nan'"},
  };
  for (const auto& [field, want] : cases) {
    const std::string line = "  x: {" + field + "}";
    const std::string f = d.write("c.yaml", "test_config:\n" + line + "\n");
    const size_t col = line.find(": ", line.find(field)) + 3;
    EXPECT_EQ(error_of([&] { load_configs({f}); }), f + ":2:" + std::to_string(col) + ": " + want) << field;
  }
  // In a target override too.
  const std::string o = d.write("o.yaml", "test_config:\n  x:\n    target_overrides:\n      sim: {required_pcc: 2}\n");
  EXPECT_EQ(error_of([&] { load_configs({o}); }), o + ":4:27: required_pcc must be a number in [-1, 1], got '2'");
  const std::string two =
      d.write("two.yaml", "test_config:\n  x: {required_pcc: 0.9}\n---\ntest_config:\n  y: {required_pcc: 5}\n");
  EXPECT_EQ(error_of([&] { load_configs({two}); }),
            two + ":3:1: a second YAML document starts here; this file holds one document (remove the '---' and what "
                  "follows, or merge it into the first)");
}

TEST(MatrixConfig, WrongTypesAndRanges) {
  TempDir d;
  const std::string f = d.write("c.yaml", "test_config:\n  x:\n    required_pcc: \"high\"\n");
  EXPECT_EQ(error_of([&] { load_configs({f}); }), f + ":3:19: required_pcc must be a number in [-1, 1], got 'high'");
  const std::string g = d.write("g.yaml", "test_config:\n  x: {required_pcc: 1.5}\n");
  EXPECT_EQ(error_of([&] { load_configs({g}); }), g + ":2:21: required_pcc must be a number in [-1, 1], got '1.5'");
  const std::string h = d.write("h.yaml", "test_config:\n  x: {markers: push}\n");
  EXPECT_EQ(error_of([&] { load_configs({h}); }), h + ":2:16: markers must be a list");
  const std::string i = d.write("i.yaml", "test_config:\n  x: {assert_pcc: sometimes}\n");
  EXPECT_EQ(error_of([&] { load_configs({i}); }), i + ":2:19: assert_pcc must be true or false, got 'sometimes'");
  const std::string j = d.write("j.yaml", "test_config:\n  x: {allclose_atol: -0.1}\n");
  EXPECT_EQ(error_of([&] { load_configs({j}); }), j + ":2:22: allclose_atol must be a finite number >= 0, got '-0.1'");
  const std::string k = d.write("k.yaml", "test_config:\n  x: [status]\n");
  EXPECT_EQ(error_of([&] { load_configs({k}); }), k + ":2:6: test 'x' must be a mapping");
  const std::string m = d.write("m.yaml", "test_config:\n  x: {markers: [push, 'a b']}\n");
  EXPECT_EQ(error_of([&] { load_configs({m}); }), m + ":2:23: markers entry 'a b' must not contain whitespace");
}

TEST(MatrixConfig, OverridesCannotNestAndPlaceholdersAreIdsWithFewFields) {
  TempDir d;
  const std::string f =
      d.write("c.yaml", "test_config:\n  x:\n    target_overrides:\n      astra: {target_overrides: {}}\n");
  EXPECT_EQ(error_of([&] { load_configs({f}); }),
            f + ":4:15: test 'x' target_overrides 'astra': target_overrides cannot be nested");
  const std::string e =
      d.write("e.yaml", "test_config:\n  x:\n    target_overrides:\n      astra: {statsu: UNSPECIFIED}\n");
  EXPECT_EQ(error_of([&] { load_configs({e}); }),
            e + ":4:15: unknown key 'statsu' in test 'x' target_overrides 'astra' (did you mean 'status'?); allowed: "
                "allclose_atol, allclose_rtol, assert_allclose, assert_pcc, bringup_status, markers, reason, "
                "required_pcc, status, supported_targets");
  const std::string g = d.write("g.yaml", "placeholders:\n  yolo-*: {}\n");
  EXPECT_EQ(error_of([&] { load_configs({g}); }), g + ":2:3: placeholder 'yolo-*' must be a test ID, not a glob");
  const std::string h = d.write("h.yaml", "placeholders:\n  yolo: {status: EXPECTED_PASSING}\n");
  EXPECT_EQ(error_of([&] { load_configs({h}); }),
            h + ":2:10: unknown key 'status' in placeholder 'yolo'; allowed: markers, reason");
}

TEST(MatrixConfig, UnreadableFile) {
  EXPECT_EQ(error_of([] { load_configs({"/nonexistent/c.yaml"}); }), "/nonexistent/c.yaml: cannot open: does not exist");
}

// Two models (resnet, squeezenet) × fp32, bf16 × sim, astra × the modes.
class MatrixCollect : public ::testing::Test {
 protected:
  void SetUp() override {
    d_.write("models/resnet.onnx", "");
    d_.write("models/squeezenet.onnx", "");
  }

  // Loads the spec and the config files (name → text), then collects.
  std::vector<TestCase> run(const std::vector<std::pair<std::string, std::string>>& configs,
                            const std::string& modes = "[discover]") {
    std::string list;
    for (const auto& [name, text] : configs) {
      d_.write(name, text);
      list += (list.empty() ? "" : ", ") + name;
    }
    spec_ = load_spec(d_.write("spec.yaml",
                               "models: [models/*.onnx]\nvariants: [fp32, bf16]\n"
                               "targets: {sim: {}, astra: {board: astra}}\nmodes: " +
                                   modes + "\ntest_config: [" + list + "]\n"));
    configs_ = load_configs(spec_.config_files);
    return collect(spec_, configs_);
  }

  static const TestCase& find(const std::vector<TestCase>& tests, const std::string& id) {
    for (const TestCase& t : tests)
      if (t.id == id) return t;
    throw std::runtime_error("no test " + id);
  }

  static std::vector<std::string> ids(const std::vector<TestCase>& tests) {
    std::vector<std::string> out;
    for (const TestCase& t : tests) out.push_back(t.id);
    return out;
  }

  TempDir d_;
  Spec spec_;  // outlives the tests (TestCase::model points into it)
  ConfigSet configs_;
};

TEST_F(MatrixCollect, OrderIsModelVariantTargetModeWithDefaults) {
  const std::vector<TestCase> tests = run({}, "[discover, run]");
  EXPECT_EQ(ids(tests), (std::vector<std::string>{
                            "resnet-fp32-sim-discover", "resnet-fp32-sim-run", "resnet-fp32-astra-discover",
                            "resnet-fp32-astra-run", "resnet-bf16-sim-discover", "resnet-bf16-sim-run",
                            "resnet-bf16-astra-discover", "resnet-bf16-astra-run", "squeezenet-fp32-sim-discover",
                            "squeezenet-fp32-sim-run", "squeezenet-fp32-astra-discover", "squeezenet-fp32-astra-run",
                            "squeezenet-bf16-sim-discover", "squeezenet-bf16-sim-run", "squeezenet-bf16-astra-discover",
                            "squeezenet-bf16-astra-run"}));
  const TestCase& t = find(tests, "squeezenet-bf16-astra-run");
  ASSERT_NE(t.model, nullptr);
  EXPECT_EQ(t.model->name, "squeezenet");
  EXPECT_TRUE(t.variant.bf16);
  EXPECT_EQ(t.target.board, "astra");
  EXPECT_EQ(t.mode, Mode::kRun);
  EXPECT_FALSE(t.placeholder);
  EXPECT_EQ(t.config.status, TestStatus::kUnspecified);
  EXPECT_EQ(t.config.source, "");
  EXPECT_EQ(t.config.key, "");
}

TEST_F(MatrixCollect, ExactIdBeatsGlob) {
  const std::vector<TestCase> tests =
      run({{"a.yaml", "test_config:\n  resnet-*:\n    status: KNOWN_FAILURE_XFAIL\n    reason: glob\n"},
           {"b.yaml", "test_config:\n  resnet-fp32-sim-discover: {status: EXPECTED_PASSING}\n"}});
  const TestCase& exact = find(tests, "resnet-fp32-sim-discover");
  EXPECT_EQ(exact.config.status, TestStatus::kExpectedPassing);
  EXPECT_EQ(exact.config.reason, "");
  EXPECT_EQ(exact.config.key, "resnet-fp32-sim-discover");
  EXPECT_EQ(exact.config.source, d_.path("b.yaml") + ":2:3");
  const TestCase& glob = find(tests, "resnet-bf16-astra-discover");
  EXPECT_EQ(glob.config.status, TestStatus::kKnownFailureXfail);
  EXPECT_EQ(glob.config.reason, "glob");
  EXPECT_EQ(glob.config.key, "resnet-*");
  EXPECT_EQ(glob.config.source, d_.path("a.yaml") + ":2:3");
  EXPECT_EQ(find(tests, "squeezenet-fp32-sim-discover").config.key, "");
}

TEST_F(MatrixCollect, TargetOverridesApplyToTheirTargetOnly) {
  const std::vector<TestCase> tests =
      run({{"a.yaml",
            "test_config:\n  squeezenet-*:\n    status: EXPECTED_PASSING\n    required_pcc: 0.98\n"
            "    target_overrides:\n      astra: {status: KNOWN_FAILURE_XFAIL, reason: board bug}\n"}});
  for (const std::string variant : {"fp32", "bf16"}) {
    const TestCase& sim = find(tests, "squeezenet-" + variant + "-sim-discover");
    EXPECT_EQ(sim.config.status, TestStatus::kExpectedPassing);
    EXPECT_EQ(sim.config.reason, "");
    EXPECT_EQ(sim.config.required_pcc, 0.98);
    const TestCase& astra = find(tests, "squeezenet-" + variant + "-astra-discover");
    EXPECT_EQ(astra.config.status, TestStatus::kKnownFailureXfail);
    EXPECT_EQ(astra.config.reason, "board bug");
    EXPECT_EQ(astra.config.required_pcc, 0.98);
  }
}

TEST_F(MatrixCollect, ExcludeModelLeavesTestsOut) {
  const std::vector<TestCase> tests = run({{"a.yaml",
                                            "test_config:\n  resnet-*:\n    status: EXCLUDE_MODEL\n"
                                            "    target_overrides: {astra: {status: EXPECTED_PASSING}}\n"}});
  EXPECT_EQ(ids(tests), (std::vector<std::string>{"resnet-fp32-astra-discover", "resnet-bf16-astra-discover",
                                                  "squeezenet-fp32-sim-discover", "squeezenet-fp32-astra-discover",
                                                  "squeezenet-bf16-sim-discover", "squeezenet-bf16-astra-discover"}));
}

TEST_F(MatrixCollect, TwoGlobsMatchingOneTestNameBoth) {
  const std::string a = d_.path("a.yaml"), b = d_.path("b.yaml");
  // The exact entry settles resnet-fp32-sim-discover; resnet-fp32-sim-run
  // has none, and both globs match it.
  EXPECT_EQ(error_of([&] {
              run({{"a.yaml", "test_config:\n  resnet-fp32-*: {}\n"},
                   {"b.yaml", "test_config:\n  resnet-fp32-sim-discover: {}\n  '*-sim-*': {}\n"}},
                  "[discover, run]");
            }),
            b + ":3:3: glob '*-sim-*' and glob 'resnet-fp32-*' (at " + a +
                ":2:3) both match test 'resnet-fp32-sim-run'; add an exact entry or narrow a glob");
}

TEST_F(MatrixCollect, KeyMatchingNoTestSuggestsTheNearestId) {
  const std::string a = d_.path("a.yaml");
  EXPECT_EQ(error_of([&] {
              run({{"a.yaml", "test_config:\n  resnet-*: {}\n  resnett-bf16-sim-discover: {}\n"}});
            }),
            a + ":3:3: test_config key 'resnett-bf16-sim-discover' matches no collected test (did you mean "
                "'resnet-bf16-sim-discover'?)");
  EXPECT_EQ(error_of([&] {
              run({{"a.yaml", "test_config:\n  yolo-*:\n    status: EXPECTED_PASSING\n"}});
            }),
            a + ":2:3: test_config key 'yolo-*' matches no collected test");
}

TEST_F(MatrixCollect, PlaceholdersComeLastAndMustNotBeCollectedTests) {
  const std::vector<TestCase> tests =
      run({{"a.yaml",
            "placeholders:\n  yolov8n-bf16-astra-discover: {reason: not yet exported, markers: [nightly]}\n"
            "  odd: {}\n"}});
  ASSERT_EQ(tests.size(), 10u);
  const TestCase& p = tests[8];
  EXPECT_EQ(p.id, "yolov8n-bf16-astra-discover");
  EXPECT_TRUE(p.placeholder);
  EXPECT_EQ(p.model, nullptr);
  EXPECT_EQ(p.variant.name, "bf16");
  EXPECT_EQ(p.target.name, "astra");
  EXPECT_EQ(p.target.board, "astra");
  EXPECT_EQ(p.mode, Mode::kDiscover);
  EXPECT_EQ(p.config.reason, "not yet exported");
  EXPECT_EQ(p.config.markers, (std::vector<std::string>{"nightly"}));
  EXPECT_EQ(tests[9].id, "odd");
  EXPECT_EQ(tests[9].target.name, "sim");  // parts it does not name stay default

  const std::string b = d_.path("b.yaml");
  EXPECT_EQ(error_of([&] {
              run({{"b.yaml", "placeholders:\n  resnet-fp32-sim-discover: {}\n"}});
            }),
            b + ":2:3: placeholder 'resnet-fp32-sim-discover' is a collected test; move its entry to test_config");
}

TEST_F(MatrixCollect, UnknownTargetsInAnEntryAreErrors) {
  const std::string a = d_.path("a.yaml");
  EXPECT_EQ(
      error_of([&] {
        run({{"a.yaml", "test_config:\n  resnet-*:\n    target_overrides:\n      astro: {status: UNSPECIFIED}\n"}});
      }),
      a + ":4:7: 'resnet-*': target_overrides names unknown target 'astro' (did you mean 'astra'?); spec "
          "targets: sim, astra");
  EXPECT_EQ(error_of([&] {
              run({{"a.yaml", "test_config:\n  resnet-*: {supported_targets: [simm]}\n"}});
            }),
            a + ":2:3: 'resnet-*': supported_targets names unknown target 'simm' (did you mean 'sim'?); spec "
                "targets: sim, astra");
}

TEST_F(MatrixCollect, TwoTestsWithOneIdAreAnError) {
  d_.write("models/resnet-b.onnx", "");
  const std::string spec = d_.write("s2.yaml",
                                    "models: [models/resnet.onnx, models/resnet-b.onnx]\n"
                                    "variants: [{name: b-bf16, dtype: bf16}, bf16]\n");
  spec_ = load_spec(spec);
  EXPECT_EQ(error_of([&] { collect(spec_, ConfigSet{}); }),
            spec +
                ": test ID 'resnet-b-bf16-sim-discover' is made twice: by model 'resnet', variant 'b-bf16', "
                "target 'sim', mode 'discover' and by model 'resnet-b', variant 'bf16', target 'sim', mode "
                "'discover'; rename a model or variant");
}

}  // namespace
}  // namespace torq::pipeline::matrix
