// Reports of a matrix run (issue #5): JUnit XML for CI, a machine-readable
// JSON summary, and self-contained HTML (no network: inline CSS, JS and
// SVG): report.html, read at a glance (issue 33) — charts of nss coverage,
// executors and the trend over the run history, what changed since the
// previous run, the filterable matrix of outcomes, the op-support grid —
// and beside it one page per model test with its layer × executor grid
// coloured by status, the recommended executor and metrics on hover/click.
// Pure text generation: no sockets, no tensors.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/matrix/matrix.h"
#include "pipeline/report/op_matrix.h"
#include "pipeline/core/types.h"

namespace torq::pipeline::matrix {

struct RunInfo {
  std::string spec;            // spec file
  std::string run_id;
  std::string started_utc;     // ISO 8601
  double wall_s = 0;
  size_t jobs = 0;             // jobs finished (fleet + resumed + cache)
  size_t fleet_jobs = 0;       // jobs run on workers
  size_t cache_hits = 0;
  double jobs_per_s = 0;
  std::string k, m, preset;    // selection used
  bool strict_xfail = false;
  size_t deselected = 0;       // tests collected but not selected
  // The workers (boards) that served the run, with their device health.
  struct Board {
    std::string worker, target, tags, health, reason, since;
  };
  std::vector<Board> boards;
  // One run of the spec in the store's history: the report's trend.
  struct TrendPoint {
    int seq = 0;
    std::string started_utc;
    int passed = 0, failed = 0, total = 0;  // tests by outcome
    double nss_coverage = -1;  // mean over tests with layers of their share on nss; -1: unknown
  };
  std::vector<TrendPoint> trend;  // oldest first, this run last; empty: no history kept
};

// "w1 Good (sl2610,astra-machina): health check passed" — one line per board.
std::string board_line(const RunInfo::Board& b);

// JUnit XML: one <testsuite name="torq-matrix"> with one <testcase
// classname="<model>" name="<ID>" time="wall_s"> per result; failed →
// <failure>, xpassed → <failure> (type="xpass") when strict else a passed
// case with property outcome=xpassed, skipped/xfailed → <skipped>. Each
// testcase has <properties>: outcome, bringup_status, status, pcc,
// required_pcc, layers, critical_failures, executor_distribution
// ("nss:12,css:3,host:1"), wall_time, reason, since_previous (when known),
// tags (junit_tags) and, for a failed, xfailed or skipped test with a
// message, error_message. XML-escaped throughout.
std::string junit_xml(const std::vector<TestResult>& results, const RunInfo& info);

// The testcase's `tags` property as tt-xla writes it (pytest's
// record_property("tags", dict): the dict's Python repr, which
// ast.literal_eval reads back): test_name, specific_test_case, model_name,
// variant, target, run_mode, outcome, bringup_status, model_test_status,
// pcc, required_pcc, pcc_threshold, pcc_assertion_enabled, atol (max |diff|),
// executors ({'nss': 12, 'css': 3}: recommended executor -> layers),
// layers, critical_failures, device_time_ms, failing_reason {name,
// description}, since_previous and guidance. Unknown figures are None.
std::string junit_tags(const TestResult& r);

// tt-xla's guidance tags (tests/runner/test_utils.py): ENABLE_PCC /
// ENABLE_PCC_099 (PCC not asserted but above required_pcc + 0.004),
// RAISE_PCC (required_pcc < 0.99 and the PCC above its next hundredth +
// 0.004) or RAISE_PCC_099 (the PCC above 0.994), RM_XFAIL (a
// KNOWN_FAILURE_XFAIL test whose bring-up is PASSED or INCORRECT_RESULT: it
// runs), ADD_CONFIG (the same for an UNSPECIFIED test).
std::vector<std::string> guidance_tags(const TestResult& r);

// {"run": {...RunInfo}, "counts": {"passed": n, ...}, "exit_code": 0|1,
//  "tests": [{"id", "model", "variant", "target", "mode", "outcome",
//             "bringup_status", "status", "message", "ran", "failed_step",
//             "pcc", "max_abs", "max_rel" (null when unknown), "required_pcc",
//             "layers", "critical_failures", "executor_distribution",
//             "wall_s", "device_ms" (the assigned run's device time, null when
//             unknown), "since_previous", "report"}]}
nlohmann::json summary_json(const std::vector<TestResult>& results, const RunInfo& info);

// The directory of test `id`'s files in an export, under reports/: the ID
// with every character but a letter, digit, '-', '_' or '.' replaced by '_'.
std::string test_dir_name(const std::string& id);
// Test `id`'s layer grid page, relative to report.html:
// "reports/<test_dir_name(id)>/grid.html".
std::string grid_page_path(const std::string& id);

// report.html: the run's figures and outcome counts; "Changes since the
// previous run" (TestResult::since_previous: new failures, fixes, other
// outcome changes, drift, new tests, each linking its row) when there are
// any; inline SVG charts, each with a title, a description and a hidden
// table of its numbers — a heatmap of nss coverage per model × variant
// (the mean over the tests of that pair with layers), the layers of each
// model by recommended executor as a 100% stacked bar (summed over its
// tests), and with two or more runs in `info.trend` the share of tests
// passed and the nss coverage per run; the filterable matrix of outcomes,
// a row per test (a changed one highlighted) fitting a 1,400-pixel window,
// its ID linking grid_page_path() when `grid_pages` holds it; with `ops`,
// the op-support matrix (op_matrix.h) as a grid of ops × executors coloured
// by status (the text and first error on hover): the ops that block a model
// or fall back (at most 100), and a link to the whole grid, kOpsPage. Its
// size grows with tests and models × variants, never with layers or the
// run's thousands of ops. PipelineError for a result without its test.
std::string html_report(const std::vector<TestResult>& results, const std::set<std::string>& grid_pages,
                        const RunInfo& info, const OpMatrix* ops = nullptr);

// The whole op-support grid, a page beside report.html (self-contained,
// linking back to it): a row per op of `ops`, a cell per executor.
inline constexpr const char* kOpsPage = "ops.html";
std::string ops_page(const OpMatrix& ops, const RunInfo& info);

// Test `r`'s page, grid_page_path() beside report.html: self-contained (its
// own inline CSS and script), a link back to ../../report.html, the test's
// figures (outcome, since the previous run, bring-up, PCCs, layers,
// executors, message, its report file) and its layer grid, which
// `write_grid` hands to `out` (grid_html() of its report: a coordinator
// renders each as its test finishes and keeps it in a file until the run
// is judged; issue 32).
using HtmlOut = std::function<void(std::string_view)>;
void write_grid_page(const HtmlOut& out, const TestResult& r, const std::function<void(const HtmlOut&)>& write_grid);
// The same page in memory, from the test's report.
std::string grid_page(const TestResult& r, const ModelReport& report);
// One test's layer × executor grid (the body of its page): a row per layer,
// a cell per executor tested in any layer.
std::string grid_html(const std::string& test_id, const ModelReport& r);

}  // namespace torq::pipeline::matrix
