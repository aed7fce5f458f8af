// Model-matrix specs (DESIGN.md §8, tt-xla style): which tests exist (models
// × variants × targets × modes), what each is expected to do (per-test config
// spread over YAML files), which to run (-k / -m / presets), and how a run's
// result becomes an outcome (passed, failed, skipped, xfailed, xpassed).
// Pure logic: no sockets, no tensors, no jobs. Every malformed input is a
// PipelineError "file:line:col: message" (with a "did you mean" hint where a
// name was misspelt).
//
// Spec file (paths relative to the spec's directory):
//
//   models:                       # paths or globs (sorted, deduplicated)
//     - models/*.onnx
//     - {path: ../shared/models/resnet18.onnx, name: resnet18}   # name: ID part
//     - path: models/mobilenet.onnx
//       config: configs/torq_gen_config_mobilenet.json   # mode run: run this assignment
//       subgraphs: [{from: Conv_0, to: 12}]              # mode subgraph: these ranges
//   variants: [fp32, bf16, int8]  # or maps: {name: bf16-b2, dtype: bf16, batch: 2,
//                                 #           inputs: activations|random, seed: 0};
//                                 # {dtype: int8, per_channel: true} is named int8-pc
//   executors: [nss, css, host]
//   targets:                      # default: {sim: {}}
//     sim: {}                     # the built-in sim profile set
//     sim-strict: {profiles: {nss: targets/nss-strict.yaml}}   # a sim profile set
//     astra: {board: astra}       # a board class: served by workers --target astra
//     chip: {board: astra, requires: [sl2610]}   # only workers started with --tags sl2610,...
//     tools: {toolchain: toolchains/standin.yaml} # the Torq tools (torq-worker --backend toolchain)
//   modes: [discover]             # discover | run | subgraph (IDs <model>-<variant>-<target>-subgraph-<from>-<to>)
//   test_config: [test_config/nightly.yaml]   # per-test config files
//   presets:
//     push: {k: "squeezenet or demo", m: "push"}
//     nightly: {m: "not slow"}
//   options: {dedup: false, skip_mode: false, timing_runs: 1, job_timeout_ms: 120000 (toolchain: steps summed),
//             missing_tags: wait|fail, missing_tags_wait_s: 10,
//             pcc_drift: 0.001, time_drift: 0.2, time_floor_ms: 0.001}   # "since the previous run"
//
// Per-test config file:
//
//   test_config:
//     squeezenet1.0-bf16-sim-discover:          # a test ID, or a glob (* ?)
//       status: EXPECTED_PASSING
//       bringup_status: PASSED
//       required_pcc: 0.99
//       assert_pcc: true
//       assert_allclose: false
//       allclose_rtol: 0.01
//       allclose_atol: 0.01
//       markers: [push, nightly]
//       supported_targets: [sim]
//       target_overrides: {astra: {status: KNOWN_FAILURE_XFAIL, reason: "..."}}
//       reason: "..."
//   placeholders:                               # models not yet added
//     yolov8n-fp32-sim-discover: {reason: "not yet exported", markers: [nightly]}
//
// An exact ID beats a glob; two globs matching one test is an error naming
// both locations. Keys matching no collected test are errors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace torq::pipeline::matrix {

enum class TestStatus { kExpectedPassing, kKnownFailureXfail, kNotSupportedSkip, kUnspecified, kExcludeModel };
enum class Bringup {
  kPassed, kIncorrectResult, kFailedFeCompilation, kFailedCompilation, kFailedRuntime, kNotStarted, kUnknown
};
enum class Outcome { kPassed, kFailed, kSkipped, kXfailed, kXpassed };
enum class Mode { kDiscover, kRun, kSubgraph };

const char* test_status_name(TestStatus s);   // "EXPECTED_PASSING", ...
const char* bringup_name(Bringup b);          // "PASSED", ...
const char* outcome_name(Outcome o);          // "passed", "failed", "skipped", "xfailed", "xpassed"
const char* mode_name(Mode m);                // "discover", "run", "subgraph"

struct Variant {
  std::string name = "fp32";   // the ID part
  bool bf16 = false;           // dtype bf16: the pipeline's auto-conversion
  bool bf16_rne = false;       // with bf16: rounding rne (round to nearest even), else truncate
  bool int8 = false;           // dtype int8: static int8 QDQ (torq-gen-config quantize)
  bool per_channel = false;    // with int8: per-output-channel weight scales
  int batch = 1;
  bool random_inputs = false;  // inputs: random (seeded) instead of activations
  uint64_t seed = 0;
};

struct Target {
  std::string name = "sim";
  std::string board;                             // board class; empty: a sim profile set
  std::map<Executor, std::string> profiles;      // sim: profile files overriding built-ins (absolute paths)
  std::vector<std::string> requires_tags;        // device tags a serving worker must offer (sorted)
  std::string toolchain;                         // toolchain file (absolute): the Torq tools run the executors
};

struct SubgraphRef {
  std::string from, to;  // layer id, output name or layer index (resolved at run time)
};

struct ModelEntry {
  std::string name;   // ID part: given, else the file stem ("model.onnx": its directory name)
  std::string path;   // absolute
  // Mode run: the report or compiler JSON whose assignment is run (e.g. a
  // config the compiler team keeps in a repository); empty: the test's own
  // discover results.
  std::string config;  // absolute
  std::vector<SubgraphRef> subgraphs;  // mode subgraph: one test per range
};

struct SpecOptions {
  bool dedup = false;
  bool skip_mode = false;
  uint32_t timing_runs = 1;
  // Unset: 120000, or with a {toolchain: FILE} target the file's step
  // budgets added up, with a board class the real tool's default budgets
  // added up (pipeline/base/toolchain_budget.h).
  std::optional<uint32_t> job_timeout_ms;
  // Jobs whose required tags no registered worker offers are reported after
  // missing_tags_wait_s; then the run fails (exit 2) or keeps waiting.
  bool missing_tags_fail = false;
  uint32_t missing_tags_wait_s = 10;
  bool collect_profile = false;  // jobs return profiling CSVs; tests export trace + overview
  // Thresholds of the "since the previous run" comparison (JUnit,
  // summary.json, HTML), as `torq-coordinator diff --pcc-drift /
  // --time-drift / --time-floor-ms` takes them: a PCC change larger than
  // pcc_drift (absolute), a time change larger than time_drift (relative,
  // 0.2: 20%) and than time_floor_ms is drift. Unset: diff's defaults.
  // Not part of the run id (they judge results, they make none).
  std::optional<double> pcc_drift, time_drift, time_floor_ms;
  // What the comparators judge a converted variant's (bf16, int8) assigned
  // run of the whole model against: the fp32 original on the same input
  // (true, default: end to end, as tt-xla judges against the framework's
  // fp32 golden), or the converted model's own fp32 host reference
  // (false, `compare_with: converted`: the executors' error alone).
  bool compare_with_original = true;
};

struct Preset {
  std::string k, m;  // expressions; empty: no filter
};

// A probe run instead of models (issue 34, docs/probe.md): the probe spec's
// points on the spec's executors and targets, fanned out over the fleet.
struct ProbeSection {
  std::string spec;             // the probe spec (absolute), validated at load
  double min_explained = 0.99;  // a (target, executor, op) whose rules explain less fails its JUnit case
};

struct Spec {
  std::string path;                     // the spec file
  std::optional<ProbeSection> probe;    // set: a probe run (no models)
  std::vector<ModelEntry> models;
  std::vector<Variant> variants;        // default: [fp32]
  std::vector<Executor> executors;      // default: nss, css, host
  std::vector<Target> targets;          // default: [sim]
  std::vector<Mode> modes;              // default: [discover]
  std::vector<std::string> config_files;  // absolute
  std::map<std::string, Preset> presets;
  SpecOptions options;
};

// Parses and validates a spec (globs are expanded now; a glob matching no
// file is an error at its location).
Spec parse_spec(const std::string& text, const std::string& path);
Spec load_spec(const std::string& path);

// The comparators and expectations of one test, after target_overrides.
struct TestConfig {
  TestStatus status = TestStatus::kUnspecified;
  std::optional<Bringup> bringup;       // fixed by the config; else from the run
  double required_pcc = 0.99;
  bool assert_pcc = true;
  bool assert_allclose = false;
  double allclose_rtol = 1e-2, allclose_atol = 1e-2;
  std::vector<std::string> markers;
  std::vector<std::string> supported_targets;  // empty: every target
  std::string reason;
  std::string source;                   // "file:line:col" of the entry; empty: defaults
  std::string key;                      // the config key that matched (ID or glob)
};

struct TestCase {
  std::string id;                       // <model>-<variant>-<target>-<mode>
  const ModelEntry* model = nullptr;    // null for placeholders
  Variant variant;
  Target target;
  Mode mode = Mode::kDiscover;
  std::optional<SubgraphRef> subgraph;  // mode subgraph: the range tested
  TestConfig config;
  bool placeholder = false;             // declared in placeholders: reported NOT_STARTED
};

// One config entry as read (before resolution), for suggest and errors.
struct ConfigEntry {
  std::string key;                      // ID or glob
  std::string file;
  int line = 0, col = 0;                // 1-based
  bool placeholder = false;
  TestConfig base;                      // fields as given (defaults elsewhere)
  std::map<std::string, TestConfig> target_overrides;  // resolved per target (base + override)
  std::map<std::string, std::string> override_sources;  // target → "file:line:col" of its override key
};

struct ConfigSet {
  std::vector<ConfigEntry> entries;     // in file order
};

// Reads config files; strict: unknown keys, duplicate keys (in one file and
// across files), bad enums and types → PipelineError "file:line:col: ...".
ConfigSet load_configs(const std::vector<std::string>& files);

// Every test of the spec (model × variant × target × mode, in that order)
// with its resolved config, plus placeholders; EXCLUDE_MODEL tests are left
// out. Throws PipelineError for config keys matching no test (with a
// did-you-mean of the nearest ID) and for ambiguous globs.
std::vector<TestCase> collect(const Spec& spec, const ConfigSet& configs);

// -k: and / or / not / parentheses over case-insensitive substrings of the
// ID; -m: the same over marker names (a word is true when the test has that
// marker). Empty expression: true. Throws PipelineError
// "-k 'expr': col N: message" on a syntax error.
class Expr {
 public:
  static Expr parse(const std::string& text, const std::string& flag /* "-k" or "-m" */);
  bool match_id(const std::string& id) const;                      // -k semantics
  bool match_markers(const std::vector<std::string>& markers) const;  // -m semantics
  const std::string& text() const { return text_; }
  struct Node;
 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

// What a run of one test produced (filled by the coordinator).
struct TestRun {
  bool ran = false;                     // false: skipped before running (no result)
  std::string skip_reason;              // when !ran
  // The step that failed, if any: import | compile | runtime | result.
  std::string failed_step;
  std::string message;                  // first error / failure line
  // The comparators' figures: of the assigned full-model run when there was
  // one (full_model), else the lowest PCC / worst differences over the
  // recommended executors' layer results. -1: unknown.
  double pcc = -1;
  double max_abs = -1, max_rel = -1;
  bool full_model = false;              // pcc/max_* come from an assigned full-model run
  // A converted variant's (bf16, int8) assigned run of the whole model has
  // two comparisons: against the fp32 original on the same input (end to
  // end; e2e_error says why there is none) and against the converted
  // model's own fp32 host reference (the executors' error alone). pcc and
  // max_* hold the one options.compare_with selects, `judged_against` names
  // it ("" for an fp32 model: its reference is the original itself).
  bool e2e = false;
  double e2e_pcc = -1, e2e_max_abs = -1, e2e_max_rel = -1;
  std::string e2e_error;
  double converted_pcc = -1, converted_max_abs = -1, converted_max_rel = -1;
  std::string judged_against;           // "the fp32 original" | "the converted model" | ""
  // Auto-bisect of a failing assigned run: "a..b (id_a .. id_b): figures".
  std::string failing_range;
  // With options.collect_profile: the assigned run's "Host Profile
  // Overview" text and its Perfetto trace JSON file.
  std::string profile_overview, profile_trace;
  int layers = 0;
  int critical_failures = 0;
  std::map<std::string, int> executor_distribution;  // recommended executor -> layers
  double wall_s = 0;
  double device_ms = -1;                // the assigned full-model run's device / simulated time; -1: unknown
  std::string report_file;              // the model report JSON, if written
};

struct TestResult {
  const TestCase* test = nullptr;
  Outcome outcome = Outcome::kSkipped;
  Bringup bringup = Bringup::kUnknown;
  std::string message;                  // why (for failed, skipped, xfailed, xpassed)
  TestRun run;
  // What changed since the test's previous record in the spec's run
  // history (run_diff.h since_text: "new failure", "fixed", "unchanged",
  // "pcc drift -0.01", ...); empty when unknown (no history kept).
  std::string since_previous;
};

// The outcome rules of DESIGN §8 / issue #5:
//  - placeholder → skipped, NOT_STARTED; NOT_SUPPORTED_SKIP or a target not in
//    supported_targets or !run.ran → skipped;
//  - "passed" raw result: ran, no critical failure, no failed step, and the
//    comparators hold (assert_pcc: pcc >= required_pcc; assert_allclose:
//    max_abs <= atol + rtol (relative term on max_rel));
//  - KNOWN_FAILURE_XFAIL: raw pass → xpassed (failed with strict_xfail),
//    raw fail → xfailed; otherwise raw pass → passed, raw fail → failed;
//  - bringup: the config's when given; else PASSED on a raw pass, else from
//    failed_step (import → FAILED_FE_COMPILATION, compile → FAILED_COMPILATION,
//    runtime → FAILED_RUNTIME, result → INCORRECT_RESULT).
TestResult judge(const TestCase& test, const TestRun& run, bool strict_xfail);

// judged_against's values.
inline constexpr const char* kAgainstOriginal = "the fp32 original";
inline constexpr const char* kAgainstConverted = "the converted model";
// For a run with both comparisons (run->e2e): puts the one the comparators
// judge into pcc/max_* (options.compare_with: the fp32 original when
// `with_original`, else the converted model) and names it in
// judged_against. Nothing for a run with one.
void select_compared(TestRun* run, bool with_original);

// True for an unexpected outcome (failed, or xpassed): exit code 1.
bool unexpected(const TestResult& r);

// suggest: a YAML patch (comments say why) of config edits from a run:
// promote xpassed tests to EXPECTED_PASSING, raise required_pcc that is met
// with margin (to the PCC rounded down to 3 decimals, when that is ≥ 0.001
// above), add EXPECTED_PASSING / KNOWN_FAILURE_XFAIL entries for tests with
// no config entry (by their outcome). Empty string: nothing to suggest.
std::string suggest(const std::vector<TestResult>& results);

}  // namespace torq::pipeline::matrix
