// Internal helpers shared by the matrix_*.cc files (not part of the API of
// matrix.h): enum parsing by name, locations, file reading, the raw verdict
// of a run. Everything here throws PipelineError on bad input.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/matrix/matrix.h"
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
// "nss:12<sep>css:3<sep>host:1": the priority order of DESIGN §1, then other names.
std::string distribution_text(const std::map<std::string, int>& dist, const std::string& sep);
// The model part of a test's ID: the model's name, or for a placeholder the
// ID without its "-<variant>-<target>-<mode>" suffix.
std::string model_name(const TestCase& t);
// The result's test; PipelineError for a result without one.
const TestCase& test_of(const TestResult& r);

// Escapes text for an HTML text node or a double- or single-quoted attribute.
std::string html_escape(const std::string& s);
// The HTML report's op-support section (matrix_html_ops.cc).
std::string ops_html(const OpMatrix& m);

}  // namespace torq::pipeline::matrix::detail
