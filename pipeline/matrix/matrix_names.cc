// Names of the matrix enums (matrix.h) and their parsing, plus the small
// shared helpers of matrix_internal.h (locations, globs, names, file reading).
#include <optional>
#include <sstream>

#include "pipeline/base/file_bytes.h"
#include "pipeline/matrix/matrix.h"
#include "pipeline/matrix/matrix_internal.h"

namespace torq::pipeline::matrix {

const char* test_status_name(TestStatus s) {
  switch (s) {
    case TestStatus::kExpectedPassing: return "EXPECTED_PASSING";
    case TestStatus::kKnownFailureXfail: return "KNOWN_FAILURE_XFAIL";
    case TestStatus::kNotSupportedSkip: return "NOT_SUPPORTED_SKIP";
    case TestStatus::kUnspecified: return "UNSPECIFIED";
    case TestStatus::kExcludeModel: return "EXCLUDE_MODEL";
  }
  return "UNSPECIFIED";
}

const char* bringup_name(Bringup b) {
  switch (b) {
    case Bringup::kPassed: return "PASSED";
    case Bringup::kIncorrectResult: return "INCORRECT_RESULT";
    case Bringup::kFailedFeCompilation: return "FAILED_FE_COMPILATION";
    case Bringup::kFailedCompilation: return "FAILED_COMPILATION";
    case Bringup::kFailedRuntime: return "FAILED_RUNTIME";
    case Bringup::kNotStarted: return "NOT_STARTED";
    case Bringup::kUnknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPassed: return "passed";
    case Outcome::kFailed: return "failed";
    case Outcome::kSkipped: return "skipped";
    case Outcome::kXfailed: return "xfailed";
    case Outcome::kXpassed: return "xpassed";
  }
  return "failed";
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kDiscover: return "discover";
    case Mode::kRun: return "run";
    case Mode::kSubgraph: return "subgraph";
  }
  return "discover";
}

namespace detail {
namespace {

constexpr TestStatus kStatuses[] = {TestStatus::kExpectedPassing, TestStatus::kKnownFailureXfail,
                                    TestStatus::kNotSupportedSkip, TestStatus::kUnspecified, TestStatus::kExcludeModel};
constexpr Bringup kBringups[] = {Bringup::kPassed,
                                 Bringup::kIncorrectResult,
                                 Bringup::kFailedFeCompilation,
                                 Bringup::kFailedCompilation,
                                 Bringup::kFailedRuntime,
                                 Bringup::kNotStarted,
                                 Bringup::kUnknown};
constexpr Mode kModes[] = {Mode::kDiscover, Mode::kRun, Mode::kSubgraph};

template <class E, size_t N, class NameFn>
std::optional<E> from_name(const E (&all)[N], NameFn name_of, const std::string& name) {
  for (E e : all)
    if (name == name_of(e)) return e;
  return std::nullopt;
}

template <class E, size_t N, class NameFn>
std::vector<std::string> names(const E (&all)[N], NameFn name_of) {
  std::vector<std::string> out;
  for (E e : all) out.push_back(name_of(e));
  return out;
}

}  // namespace

std::optional<TestStatus> test_status_from_name(const std::string& name) {
  return from_name(kStatuses, test_status_name, name);
}
std::optional<Bringup> bringup_from_name(const std::string& name) { return from_name(kBringups, bringup_name, name); }
std::optional<Mode> mode_from_name(const std::string& name) { return from_name(kModes, mode_name, name); }
std::vector<std::string> test_status_names() { return names(kStatuses, test_status_name); }
std::vector<std::string> bringup_names() { return names(kBringups, bringup_name); }
std::vector<std::string> mode_names() { return names(kModes, mode_name); }

std::string location(const std::string& file, const YAML::Mark& mark) {
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

bool is_glob(const std::string& key) { return key.find_first_of("*?[") != std::string::npos; }

std::string bad_name_reason(const std::string& name) {
  if (name.empty()) return "must not be empty";
  for (const char c : name) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return "must not contain whitespace";
    if (c == '*' || c == '?' || c == '[' || c == ']') return "must not contain glob characters (* ? [ ])";
    if (c == '(' || c == ')') return "must not contain parentheses";
  }
  return "";
}

std::string read_text(const std::string& path) {
  std::string why;
  std::optional<std::string> text = base::read_file_bytes(path, &why);
  if (!text) throw PipelineError(path + ": cannot open: " + why);
  return std::move(*text);
}

std::vector<std::pair<std::string, int>> ordered_distribution(const std::map<std::string, int>& dist) {
  std::vector<std::pair<std::string, int>> out;
  for (const Executor e : kExecutorPriority)
    if (const auto it = dist.find(executor_name(e)); it != dist.end()) out.emplace_back(*it);
  for (const auto& [name, n] : dist)
    if (!executor_from_name(name)) out.emplace_back(name, n);
  return out;
}

std::string distribution_text(const std::map<std::string, int>& dist, const std::string& sep) {
  std::string out;
  for (const auto& [name, n] : ordered_distribution(dist))
    out += (out.empty() ? "" : sep) + name + ':' + std::to_string(n);
  return out;
}

std::string model_name(const TestCase& t) {
  if (t.model != nullptr) return t.model->name;
  const std::string suffix = "-" + t.variant.name + "-" + t.target.name + "-" + mode_name(t.mode);
  if (t.id.size() > suffix.size() && t.id.compare(t.id.size() - suffix.size(), suffix.size(), suffix) == 0)
    return t.id.substr(0, t.id.size() - suffix.size());
  return t.id;
}

const TestCase& test_of(const TestResult& r) {
  if (r.test == nullptr) throw PipelineError("matrix report: a result without its test");
  return *r.test;
}

}  // namespace detail
}  // namespace torq::pipeline::matrix
