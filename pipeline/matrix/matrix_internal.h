// Internal helpers shared by the matrix_*.cc files (not part of the API of
// matrix.h): enum parsing by name, locations, file reading, the raw verdict
// of a run. Everything here throws PipelineError on bad input.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/base/html_escape.h"
#include "pipeline/matrix/matrix.h"
#include "pipeline/matrix/matrix_report.h"
#include "pipeline/report/op_matrix.h"

namespace torq::pipeline::matrix::detail {

// By exact (case-sensitive) name; nullopt for an unknown name.
std::optional<TestStatus> test_status_from_name(const std::string& name);
std::optional<Bringup> bringup_from_name(const std::string& name);
std::optional<Mode> mode_from_name(const std::string& name);
// Every name, in declaration order (for "expected one of" and hints).
std::vector<std::string> test_status_names();
std::vector<std::string> bringup_names();
std::vector<std::string> mode_names();

// "file:line:col" (1-based) of a YAML mark.
std::string location(const std::string& file, const YAML::Mark& mark);

// True when `key` holds a glob character (* ? [): matched with fnmatch(3).
bool is_glob(const std::string& key);

// A name usable as an ID part or marker: non-empty, no whitespace, no glob
// characters (* ? [ ]) and no parentheses. Returns why not, or "" when fine.
std::string bad_name_reason(const std::string& name);

// The whole file; PipelineError "<path>: cannot open" when unreadable.
std::string read_text(const std::string& path);

// The raw verdict of a run against a test's comparators (judge's "passed
// raw result"): true on a pass; on a fail, `why` says what failed and
// `bringup` the bring-up status it implies. Requires run.ran.
bool raw_pass(const TestConfig& config, const TestRun& run, std::string* why, Bringup* bringup);

// Shared by the reports (JUnit, JSON, HTML):
// A test's executor distribution (recommended executor -> layers) in the
// priority order of DESIGN §1, then other names ("none").
std::vector<std::pair<std::string, int>> ordered_distribution(const std::map<std::string, int>& dist);
// "nss:12<sep>css:3<sep>host:1": the same as text.
std::string distribution_text(const std::map<std::string, int>& dist, const std::string& sep);
// The model part of a test's ID: the model's name, or for a placeholder the
// ID without its "-<variant>-<target>-<mode>" suffix.
std::string model_name(const TestCase& t);
// The result's test; PipelineError for a result without one.
const TestCase& test_of(const TestResult& r);

// The HTML pages (matrix_html*.cc). Text helpers (matrix_html_text.cc):
// Escapes text for an HTML text node or a double- or single-quoted attribute.
using base::html_escape;
// A table cell of escaped text, with a class when `cls` is not empty.
inline std::string html_td(const std::string& cls, const std::string& text) {
  return (cls.empty() ? "<td>" : "<td class=\"" + cls + "\">") + html_escape(text) + "</td>";
}
// An element id: `prefix` + `id` with whitespace (which ids may not hold) replaced by '_'.
std::string element_id(const std::string& prefix, const std::string& id);
// `s` percent-encoded but for unreserved characters, for a URL fragment.
std::string url_fragment(const std::string& s);
// snprintf of one number.
std::string printf_str(const char* format, double v);
// A metric: "%.6g", or `unknown` when NaN (or negative, for figures that
// use -1 as "unknown").
std::string metric(double v, bool negative_unknown, const char* unknown = "-");
// A share (0..1) in whole percent, halves rounded up: "38%".
std::string percent(double share);

// The op-support section of report.html: the ops that block a model or fall
// back, and a link to ops.html; and the whole grid, ops.html's body
// (matrix_html_ops.cc).
std::string ops_html(const OpMatrix& m);
std::string ops_grid_html(const OpMatrix& m);

// The charts (matrix_html_charts.cc): inline SVG with a title, a
// description and a visually hidden table of the same numbers. Models and
// variants in the order the results first name them.
std::string heatmap_html(const std::vector<TestResult>& results);
std::string executor_bars_html(const std::vector<TestResult>& results);
// The trend; a sentence instead with fewer than two runs.
std::string trend_html(const std::vector<RunInfo::TrendPoint>& trend);

// What changed since the previous run, read from since_previous's text
// (run_diff.h since_text) — matrix_html_changes.cc.
enum class Change { kNone, kNewFailure, kFixed, kOutcome, kDrift, kNewTest };
Change change_of(const std::string& since_previous);
// "new-failure", "fixed", "outcome", "drift", "new-test" ("" for kNone):
// the row's class change-<name> and data-change.
const char* change_name(Change c);
// The row's badge text: "regression", "fixed", "outcome", "changed", "new".
const char* change_badge(Change c);
// "Changes since the previous run": per kind a count and a link to each
// changed row; "" when nothing changed.
std::string changes_html(const std::vector<TestResult>& results);

}  // namespace torq::pipeline::matrix::detail
