// Matrix spec parsing (pipeline/matrix/matrix.h): fields, defaults, path and glob
// resolution, and the exact file:line:col errors of malformed specs.
#include <gtest/gtest.h>

#include <tuple>

#include "pipeline/matrix/matrix.h"
#include "tests/unit/matrix_fixture.h"

namespace torq::pipeline::matrix {
namespace {

using matrix_test::error_of;
using matrix_test::TempDir;

// A sim profile a spec's target may name (read at load).
const char* const kProfile =
    "name: strict\ncost: {clock_mhz: 1000, slices: 1, macs_per_cycle_per_slice: 1, eltwise_per_cycle: 1,\n"
    "       dma_bytes_per_cycle: 1, dispatch_overhead_cycles: 0}\nops:\n  Conv: {dtypes: [bf16], min_spatial: 2}\n";

TEST(MatrixSpec, ParsesEveryField) {
  TempDir d;
  d.write("models/b.onnx", "");
  d.write("models/a.onnx", "");
  d.write("models/notes.txt", "");
  d.write("shared/resnet18/model.onnx", "");
  d.write("targets/nss-strict.yaml", kProfile);
  d.write("test_config/nightly.yaml", "");
  const std::string spec = d.write("spec/../spec.yaml", R"(models:
  - models/*.onnx
  - {path: shared/resnet18/model.onnx, name: resnet18}
variants:
  - fp32
  - {name: bf16-b2, dtype: bf16, batch: 2, inputs: random, seed: 7}
executors: [host, nss]
targets:
  sim: {}
  sim-strict: {profiles: {nss: targets/nss-strict.yaml}}
  astra: {board: astra}
modes: [discover, run]
test_config: [test_config/nightly.yaml]
presets:
  push: {k: "squeezenet or demo", m: "push"}
  nightly: {m: "not slow"}
options: {dedup: true, skip_mode: true, timing_runs: 3, job_timeout_ms: 5000}
)");
  const Spec s = load_spec(spec);
  EXPECT_EQ(s.path, d.path("spec.yaml"));
  ASSERT_EQ(s.models.size(), 3u);
  EXPECT_EQ(s.models[0].name, "a");
  EXPECT_EQ(s.models[0].path, d.path("models/a.onnx"));
  EXPECT_EQ(s.models[1].name, "b");
  EXPECT_EQ(s.models[2].name, "resnet18");
  EXPECT_EQ(s.models[2].path, d.path("shared/resnet18/model.onnx"));
  ASSERT_EQ(s.variants.size(), 2u);
  EXPECT_EQ(s.variants[0].name, "fp32");
  EXPECT_FALSE(s.variants[0].bf16);
  EXPECT_EQ(s.variants[0].batch, 1);
  EXPECT_EQ(s.variants[1].name, "bf16-b2");
  EXPECT_TRUE(s.variants[1].bf16);
  EXPECT_EQ(s.variants[1].batch, 2);
  EXPECT_TRUE(s.variants[1].random_inputs);
  EXPECT_EQ(s.variants[1].seed, 7u);
  EXPECT_EQ(s.executors, (std::vector<Executor>{Executor::kHost, Executor::kNss}));
  ASSERT_EQ(s.targets.size(), 3u);
  EXPECT_EQ(s.targets[0].name, "sim");
  EXPECT_EQ(s.targets[0].board, "");
  EXPECT_TRUE(s.targets[0].profiles.empty());
  EXPECT_EQ(s.targets[1].name, "sim-strict");
  EXPECT_EQ(s.targets[1].profiles,
            (std::map<Executor, std::string>{{Executor::kNss, d.path("targets/nss-strict.yaml")}}));
  EXPECT_EQ(s.targets[2].name, "astra");
  EXPECT_EQ(s.targets[2].board, "astra");
  EXPECT_EQ(s.modes, (std::vector<Mode>{Mode::kDiscover, Mode::kRun}));
  EXPECT_EQ(s.config_files, (std::vector<std::string>{d.path("test_config/nightly.yaml")}));
  ASSERT_EQ(s.presets.size(), 2u);
  EXPECT_EQ(s.presets.at("push").k, "squeezenet or demo");
  EXPECT_EQ(s.presets.at("push").m, "push");
  EXPECT_EQ(s.presets.at("nightly").k, "");
  EXPECT_EQ(s.presets.at("nightly").m, "not slow");
  EXPECT_TRUE(s.options.dedup);
  EXPECT_TRUE(s.options.skip_mode);
  EXPECT_EQ(s.options.timing_runs, 3u);
  EXPECT_EQ(s.options.job_timeout_ms, std::optional<uint32_t>(5000u));
}

TEST(MatrixSpec, DefaultsWhenOnlyModelsAreGiven) {
  TempDir d;
  d.write("m.onnx", "");
  const Spec s = load_spec(d.write("spec.yaml", "models: [m.onnx]\n"));
  ASSERT_EQ(s.models.size(), 1u);
  EXPECT_EQ(s.models[0].name, "m");
  ASSERT_EQ(s.variants.size(), 1u);
  EXPECT_EQ(s.variants[0].name, "fp32");
  EXPECT_EQ(s.executors, (std::vector<Executor>{Executor::kNss, Executor::kCss, Executor::kHost}));
  ASSERT_EQ(s.targets.size(), 1u);
  EXPECT_EQ(s.targets[0].name, "sim");
  EXPECT_EQ(s.modes, (std::vector<Mode>{Mode::kDiscover}));
  EXPECT_TRUE(s.config_files.empty());
  EXPECT_TRUE(s.presets.empty());
  EXPECT_FALSE(s.options.dedup);
  EXPECT_EQ(s.options.timing_runs, 1u);
  EXPECT_FALSE(s.options.job_timeout_ms.has_value());  // 120 s, or a toolchain target's step budgets
}

TEST(MatrixSpec, OverlappingGlobsAreDeduplicated) {
  TempDir d;
  d.write("m/x.onnx", "");
  d.write("m/y.onnx", "");
  const Spec s = load_spec(d.write("spec.yaml", "models: [m/y.onnx, m/*.onnx]\n"));
  ASSERT_EQ(s.models.size(), 2u);
  EXPECT_EQ(s.models[0].name, "y");
  EXPECT_EQ(s.models[1].name, "x");
}

TEST(MatrixSpec, GlobMatchingNothingIsAnErrorAtItsLocation) {
  TempDir d;
  d.write("models/a.onnx", "");
  const std::string spec = d.write("spec.yaml", "models:\n  - models/a.onnx\n  - other/*.onnx\n");
  EXPECT_EQ(error_of([&] { load_spec(spec); }), spec + ":3:5: model glob 'other/*.onnx' matches no file");
}

TEST(MatrixSpec, MissingModelFileIsAnError) {
  TempDir d;
  const std::string spec = d.write("spec.yaml", "models:\n  - {path: gone.onnx, name: g}\n");
  EXPECT_EQ(error_of([&] { load_spec(spec); }),
            spec + ":2:12: model file 'gone.onnx' not found (looked for " + d.path("gone.onnx") + ")");
}

TEST(MatrixSpec, DuplicateModelNameNamesTheFirst) {
  TempDir d;
  d.write("a/net.onnx", "");
  d.write("b/net.onnx", "");
  const std::string spec = d.write("spec.yaml", "models:\n  - a/net.onnx\n  - b/net.onnx\n");
  EXPECT_EQ(error_of([&] { load_spec(spec); }),
            spec + ":3:5: duplicate model name 'net' (first at " + spec + ":2:5); give one of them a 'name'");
}

TEST(MatrixSpec, ModelOnnxFilesTakeTheirDirectoryName) {
  TempDir d;
  d.write("resnet18/model.onnx", "");
  d.write("squeezenet1.0/model.onnx", "");
  const Spec s = load_spec(d.write("spec.yaml", "models: [\"*/model.onnx\"]\n"));
  ASSERT_EQ(s.models.size(), 2u);
  EXPECT_EQ(s.models[0].name, "resnet18");
  EXPECT_EQ(s.models[1].name, "squeezenet1.0");
}

TEST(MatrixSpec, UnknownKeyHasADidYouMean) {
  TempDir d;
  const std::string spec = d.write("spec.yaml", "models: []\nmodse: [run]\n");
  EXPECT_EQ(error_of([&] { load_spec(spec); }),
            spec +
                ":2:1: unknown key 'modse' in spec (did you mean 'modes'?); allowed: executors, models, modes, "
                "options, presets, probe, targets, test_config, variants");
}

TEST(MatrixSpec, DuplicateKeyIsAnError) {
  TempDir d;
  const std::string spec = d.write("spec.yaml", "models: []\nmodes: [run]\nmodes: [discover]\n");
  EXPECT_EQ(error_of([&] { load_spec(spec); }), spec + ":3:1: duplicate key 'modes' in spec");
}

TEST(MatrixSpec, MissingModelsIsAnError) {
  TempDir d;
  const std::string spec = d.write("spec.yaml", "modes: [run]\n");
  EXPECT_EQ(error_of([&] { load_spec(spec); }), spec + ":1:1: spec: missing required key 'models' (or 'probe')");
}

TEST(MatrixSpec, Int8VariantsAreQuantizedPerTensorOrPerChannel) {
  const Spec s = parse_spec("models: []\nvariants: [int8, {dtype: int8, per_channel: true}, {dtype: int8, name: q, "
                            "seed: 3}]\n", "s.yaml");
  ASSERT_EQ(s.variants.size(), 3u);
  EXPECT_EQ(s.variants[0].name, "int8");
  EXPECT_TRUE(s.variants[0].int8);
  EXPECT_FALSE(s.variants[0].per_channel);
  EXPECT_FALSE(s.variants[0].bf16);
  EXPECT_EQ(s.variants[1].name, "int8-pc");
  EXPECT_TRUE(s.variants[1].int8);
  EXPECT_TRUE(s.variants[1].per_channel);
  EXPECT_EQ(s.variants[2].name, "q");
  EXPECT_TRUE(s.variants[2].int8);
  EXPECT_EQ(s.variants[2].seed, 3u);
}

TEST(MatrixSpec, Bf16VariantsTruncateOrRoundToNearestEven) {
  const Spec s = parse_spec("models: []\nvariants: [bf16, bf16-rne, {dtype: bf16, rounding: rne, name: r2}, "
                            "{dtype: bf16, rounding: truncate, name: t2}]\n", "s.yaml");
  ASSERT_EQ(s.variants.size(), 4u);
  EXPECT_EQ(s.variants[0].name, "bf16");
  EXPECT_TRUE(s.variants[0].bf16);
  EXPECT_FALSE(s.variants[0].bf16_rne);
  EXPECT_EQ(s.variants[1].name, "bf16-rne");
  EXPECT_TRUE(s.variants[1].bf16);
  EXPECT_TRUE(s.variants[1].bf16_rne);
  EXPECT_TRUE(s.variants[2].bf16_rne);
  EXPECT_EQ(s.variants[2].name, "r2");
  EXPECT_FALSE(s.variants[3].bf16_rne);
  EXPECT_EQ(parse_spec("models: []\nvariants: [{dtype: bf16, rounding: rne}]\n", "s.yaml").variants[0].name,
            "bf16-rne");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nvariants: [{dtype: int8, rounding: rne}]\n", "s.yaml"); }),
            "s.yaml:2:36: rounding needs dtype: bf16 (it is the bf16 conversion's rounding)");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nvariants: [{dtype: bf16, rounding: nearest}]\n", "s.yaml"); }),
            "s.yaml:2:36: bad value 'nearest' for rounding; expected one of: truncate, rne");
}

TEST(MatrixSpec, ConvertedVariantsAreJudgedAgainstTheFp32OriginalUnlessTheSpecSaysConverted) {
  EXPECT_TRUE(parse_spec("models: []\n", "s.yaml").options.compare_with_original);
  EXPECT_TRUE(parse_spec("models: []\noptions: {compare_with: fp32_original}\n", "s.yaml").options.compare_with_original);
  EXPECT_FALSE(parse_spec("models: []\noptions: {compare_with: converted}\n", "s.yaml").options.compare_with_original);
  EXPECT_EQ(error_of([] { parse_spec("models: []\noptions: {compare_with: original}\n", "s.yaml"); }),
            "s.yaml:2:25: bad value 'original' for compare_with; expected one of: fp32_original, converted");
}

TEST(MatrixSpec, BadVariants) {
  EXPECT_EQ(error_of([] { parse_spec("models: []\nvariants: [fp16]\n", "s.yaml"); }),
            "s.yaml:2:12: bad value 'fp16' for variant (did you mean 'fp32'?); expected one of: fp32, bf16, bf16-rne, "
            "int8");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nvariants: [{dtype: bf16, per_channel: true}]\n", "s.yaml"); }),
            "s.yaml:2:39: per_channel needs dtype: int8 (it is a weight-quantization option)");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nvariants: [{dtype: int8, per_chanel: true}]\n", "s.yaml"); }),
            "s.yaml:2:26: unknown key 'per_chanel' in variant (did you mean 'per_channel'?); allowed: batch, dtype, "
            "inputs, name, per_channel, rounding, seed");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nvariants: [{name: b, batch: 0}]\n", "s.yaml"); }),
            "s.yaml:2:29: batch must be an integer in [1, 4096], got 0");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nvariants: [{name: b, batch: two}]\n", "s.yaml"); }),
            "s.yaml:2:29: batch must be an integer in [1, 4096], got 'two'");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nvariants: [{name: b, inputs: zeros}]\n", "s.yaml"); }),
            "s.yaml:2:30: bad value 'zeros' for inputs; expected one of: activations, random");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nvariants: [fp32, {dtype: fp32}]\n", "s.yaml"); }),
            "s.yaml:2:18: duplicate variant name 'fp32' (first at s.yaml:2:12)");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nvariants: [{name: 'a b'}]\n", "s.yaml"); }),
            "s.yaml:2:19: variant name 'a b' must not contain whitespace");
}

TEST(MatrixSpec, BadExecutorsAndModes) {
  EXPECT_EQ(error_of([] { parse_spec("models: []\nexecutors: [nss, npu]\n", "s.yaml"); }),
            "s.yaml:2:18: bad value 'npu' for executor (did you mean 'nss'?); expected one of: nss, css, host");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nexecutors: [nss, nss]\n", "s.yaml"); }),
            "s.yaml:2:18: duplicate executor 'nss'");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nmodes: [discovr]\n", "s.yaml"); }),
            "s.yaml:2:9: bad value 'discovr' for mode (did you mean 'discover'?); expected one of: discover, run, "
            "subgraph");
  EXPECT_EQ(error_of([] { parse_spec("models: []\nmodes: []\n", "s.yaml"); }), "s.yaml:2:8: modes must not be empty");
}

TEST(MatrixSpec, BadTargets) {
  TempDir d;
  EXPECT_EQ(error_of([] { parse_spec("models: []\ntargets:\n  x: {board: a, profiles: {}}\n", "s.yaml"); }),
            "s.yaml:3:27: target 'x' is either a board class (board) or a sim profile set (profiles), not both");
  EXPECT_EQ(error_of([] { parse_spec("models: []\ntargets:\n  x: {bord: a}\n", "s.yaml"); }),
            "s.yaml:3:7: unknown key 'bord' in target 'x' (did you mean 'board'?); allowed: board, profiles, requires, toolchain");
  EXPECT_EQ(error_of([] { parse_spec("models: []\ntargets:\n  x: {profiles: {npu: p.yaml}}\n", "s.yaml"); }),
            "s.yaml:3:18: unknown key 'npu' in target 'x' profiles (did you mean 'nss'?); allowed: css, host, nss");
  const std::string spec = d.write("spec.yaml", "models: []\ntargets:\n  x: {profiles: {nss: p.yaml}}\n");
  EXPECT_EQ(error_of([&] { load_spec(spec); }),
            spec + ":3:23: profile file 'p.yaml' not found (looked for " + d.path("p.yaml") + ")");
}

// A target's profile is read with the spec: its bad values stop the spec
// at their own file:line:col, not every job of the target (issue 60).
TEST(MatrixSpec, ATargetsProfileIsCheckedAtLoad) {
  TempDir d;
  const std::string spec = d.write("spec.yaml", "models: []\ntargets:\n  x: {profiles: {nss: p.yaml}}\n");
  std::string negative = kProfile;
  negative.replace(negative.find("min_spatial: 2"), 14, "min_spatial: -5");
  const std::string p = d.write("p.yaml", negative);
  EXPECT_EQ(error_of([&] { load_spec(spec); }),
            p + ":5:39: min_spatial must be an integer in [1, 2147483647], got -5");
  d.write("p.yaml", std::string(kProfile) + "---\nname: second\n");
  EXPECT_EQ(error_of([&] { load_spec(spec); }),
            p + ":6:1: a second YAML document starts here; this file holds one document (remove the '---' and what "
                "follows, or merge it into the first)");
  d.write("p.yaml", kProfile);
  EXPECT_EQ(load_spec(spec).targets.at(0).profiles.at(Executor::kNss), p);
}

TEST(MatrixSpec, MissingTestConfigFileIsAnError) {
  TempDir d;
  const std::string spec = d.write("spec.yaml", "models: []\ntest_config:\n  - cfg/a.yaml\n");
  EXPECT_EQ(error_of([&] { load_spec(spec); }),
            spec + ":3:5: test_config file 'cfg/a.yaml' not found (looked for " + d.path("cfg/a.yaml") + ")");
}

TEST(MatrixSpec, PresetExpressionsAreValidated) {
  EXPECT_EQ(error_of([] { parse_spec("models: []\npresets:\n  push: {k: a and}\n", "s.yaml"); }),
            "s.yaml:3:13: preset 'push': -k 'a and': col 6: expected a word or '(' after 'and'");
  EXPECT_EQ(error_of([] { parse_spec("models: []\npresets:\n  push: {m: \"(x\"}\n", "s.yaml"); }),
            "s.yaml:3:13: preset 'push': -m '(x': col 3: expected ')' to close '(' at col 1");
  EXPECT_EQ(error_of([] { parse_spec("models: []\npresets:\n  push: {n: x}\n", "s.yaml"); }),
            "s.yaml:3:10: unknown key 'n' in preset 'push' (did you mean 'k'?); allowed: k, m");
}

TEST(MatrixSpec, OptionTypesAreChecked) {
  EXPECT_EQ(error_of([] { parse_spec("models: []\noptions: {timing_runs: many}\n", "s.yaml"); }),
            "s.yaml:2:24: timing_runs must be an integer in [1, 10000], got 'many'");
  EXPECT_EQ(error_of([] { parse_spec("models: []\noptions: {timing_runs: 0}\n", "s.yaml"); }),
            "s.yaml:2:24: timing_runs must be an integer in [1, 10000], got 0");
  EXPECT_EQ(error_of([] { parse_spec("models: []\noptions: {dedup: maybe}\n", "s.yaml"); }),
            "s.yaml:2:18: dedup must be true or false, got 'maybe'");
}

// Every number of a spec is range-checked at load with its range (issue 60).
TEST(MatrixSpec, EveryNumberIsRangeChecked) {
  // {the flow map's text, its bad value, the message}: "s.yaml:2:<col of the value>: message".
  const std::tuple<std::string, std::string, std::string> cases[] = {
      {"variants: [{name: b, batch: 4097}]", "4097", "batch must be an integer in [1, 4096], got 4097"},
      {"variants: [{name: b, batch: -2}]", "-2", "batch must be an integer in [1, 4096], got -2"},
      {"variants: [{name: b, seed: -1}]", "-1", "seed must be an integer in [0, 9223372036854775807], got -1"},
      {"options: {timing_runs: 10001}", "10001", "timing_runs must be an integer in [1, 10000], got 10001"},
      {"options: {job_timeout_ms: 0}", "0", "job_timeout_ms must be an integer in [1, 4294967295], got 0"},
      {"options: {job_timeout_ms: 4294967296}", "4294967296",
       "job_timeout_ms must be an integer in [1, 4294967295], got 4294967296"},
      {"options: {missing_tags_wait_s: 0}", "0", "missing_tags_wait_s must be an integer in [1, 2147483], got 0"},
      {"options: {missing_tags_wait_s: 2147484}", "2147484",
       "missing_tags_wait_s must be an integer in [1, 2147483], got 2147484"},
      {"options: {pcc_drift: 2.5}", "2.5", "pcc_drift must be a number in [0, 2], got '2.5'"},
      {"options: {time_drift: -1}", "-1", "time_drift must be a finite number >= 0, got '-1'"},
      {"options: {time_floor_ms: inf}", "inf", "time_floor_ms must be a finite number >= 0, got 'inf'"},
  };
  for (const auto& [line, value, want] : cases) {
    const size_t col = line.find(": " + value) + 3;
    EXPECT_EQ(error_of([&] { parse_spec("models: []\n" + line + "\n", "s.yaml"); }),
              "s.yaml:2:" + std::to_string(col) + ": " + want)
        << line;
  }
  TempDir d;
  const std::string probe = d.write("p.yaml", "dtypes: [bf16]\nops:\n  Conv:\n    axes: {kernel: [1, 3]}\n");
  for (const std::string v : {"1.5", "-0.1", "nan"})
    EXPECT_EQ(error_of([&] { parse_spec("probe: {spec: " + probe + ", min_explained: " + v + "}\n", d.path("s.yaml")); }),
              d.path("s.yaml") + ":1:" + std::to_string(32 + probe.size()) +
                  ": probe.min_explained must be a number in [0, 1], got '" + v + "'");
}

TEST(MatrixSpec, ASecondDocumentIsRefusedWhereItStarts) {
  EXPECT_EQ(error_of([] { parse_spec("models: []\n---\nmodels: [other.onnx]\n", "s.yaml"); }),
            "s.yaml:2:1: a second YAML document starts here; this file holds one document (remove the '---' and what "
            "follows, or merge it into the first)");
  // Even an empty one: the '---' says the author meant a second document.
  EXPECT_EQ(error_of([] { parse_spec("# a spec\nmodels: []\n---\n", "s.yaml"); }).substr(0, 50),
            "s.yaml:3:1: a second YAML document starts here; th");
  // A leading '---' and a final '...' mark one document.
  EXPECT_TRUE(parse_spec("---\nmodels: []\n...\n", "s.yaml").models.empty());
}

TEST(MatrixSpec, DriftThresholdOptions) {
  const Spec unset = parse_spec("models: []\n", "s.yaml");
  EXPECT_FALSE(unset.options.pcc_drift);
  EXPECT_FALSE(unset.options.time_drift);
  EXPECT_FALSE(unset.options.time_floor_ms);
  const Spec s = parse_spec("models: []\noptions: {pcc_drift: 0.05, time_drift: 1.5, time_floor_ms: 0}\n", "s.yaml");
  EXPECT_EQ(s.options.pcc_drift, 0.05);
  EXPECT_EQ(s.options.time_drift, 1.5);
  EXPECT_EQ(s.options.time_floor_ms, 0.0);
  EXPECT_EQ(error_of([] { parse_spec("models: []\noptions: {pcc_drift: -0.1}\n", "s.yaml"); }),
            "s.yaml:2:22: pcc_drift must be a number in [0, 2], got '-0.1'");
  EXPECT_EQ(error_of([] { parse_spec("models: []\noptions: {time_drift: 20%}\n", "s.yaml"); }),
            "s.yaml:2:23: time_drift must be a finite number >= 0, got '20%'");
  EXPECT_EQ(error_of([] { parse_spec("models: []\noptions: {time_floor_ms: nan}\n", "s.yaml"); }),
            "s.yaml:2:26: time_floor_ms must be a finite number >= 0, got 'nan'");
  EXPECT_EQ(error_of([] { parse_spec("models: []\noptions:\n  pcc_drfit: 0.01\n", "s.yaml"); }),
            "s.yaml:3:3: unknown key 'pcc_drfit' in options (did you mean 'pcc_drift'?); allowed: collect_profile, "
            "compare_with, dedup, job_timeout_ms, missing_tags, missing_tags_wait_s, pcc_drift, skip_mode, time_drift, "
            "time_floor_ms, timing_runs");
}

TEST(MatrixSpec, SyntaxErrorAndUnreadableFile) {
  EXPECT_EQ(error_of([] { parse_spec("models: [a\n", "s.yaml"); }),
            "s.yaml:2:1: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(error_of([] { load_spec("/nonexistent/spec.yaml"); }), "/nonexistent/spec.yaml: cannot open: does not exist");
}

}  // namespace
}  // namespace torq::pipeline::matrix
