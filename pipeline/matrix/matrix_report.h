// Reports of a matrix run (issue #5): JUnit XML for CI, a machine-readable
// JSON summary, and one self-contained HTML file (no network: inline CSS and
// JS) with the filterable matrix of outcomes and, per model test, the
// layer × executor grid coloured by status with the recommended executor and
// metrics on hover/click. Pure text generation: no sockets, no tensors.
#pragma once

#include <functional>
#include <map>
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

// The HTML report. `reports` maps test ID → that test's model report (the
// layer grid); tests without one show no grid. Each test's row says what
// changed since the previous run (TestResult::since_previous). With `ops`,
// a section "Op support" shows the op-support matrix (op_matrix.h): a row
// per op with its status on each executor (the first error on hover),
// occurrences, models, and the models it blocks or falls back in.
std::string html_report(const std::vector<TestResult>& results, const std::map<std::string, ModelReport>& reports,
                        const RunInfo& info, const OpMatrix* ops = nullptr);

// The same report written in pieces to `out`, its layer grids from
// wherever they are kept: `has_grid` says which tests have one and
// `write_grid` hands that test's grid_html() to `out` (a coordinator renders
// each as its test finishes and keeps it in a file, not every layer's
// results until the end; issue 32).
using HtmlOut = std::function<void(std::string_view)>;
void write_html_report(const HtmlOut& out, const std::vector<TestResult>& results,
                       const std::function<bool(const std::string& test_id)>& has_grid,
                       const std::function<void(const std::string& test_id, const HtmlOut& out)>& write_grid,
                       const RunInfo& info, const OpMatrix* ops = nullptr);
// One test's layer × executor grid, as report.html shows it.
std::string grid_html(const std::string& test_id, const ModelReport& r);

}  // namespace torq::pipeline::matrix
