// tt-xla's JUnit `tags` property and guidance tags (matrix_report.h): the
// test's figures as a Python dict literal, which is what pytest writes for
// record_property("tags", dict).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/matrix/matrix_internal.h"
#include "pipeline/matrix/matrix_report.h"

namespace torq::pipeline::matrix {

namespace {

constexpr double kPccBuffer = 0.004;  // tt-xla's PCC_BUFFER

bool known(double v) { return std::isfinite(v) && v != -1; }

// A Python string literal (single quotes; backslash, quote and control
// characters escaped).
std::string py_str(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\\' || c == '\'')
      out += std::string("\\") + c;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned char>(c));
      out += b;
    } else
      out += c;
  }
  return out + "'";
}

// A Python float (shortest form that reads back exactly), None when unknown.
std::string py_num(double v) {
  if (!known(v)) return "None";
  char b[64];
  const auto res = std::to_chars(b, b + sizeof b, v);
  std::string s(b, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string py_opt_str(const std::string& s) { return s.empty() ? "None" : py_str(s); }

std::string py_dict(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string s = "{";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + py_str(items[i].first) + ": " + items[i].second;
  return s + "}";
}

std::string py_str_list(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + py_str(items[i]);
  return s + "]";
}

std::vector<std::string> pcc_guidance(const TestConfig& c, double pcc) {
  std::vector<std::string> g;
  if (!known(pcc)) return g;
  if (!c.assert_pcc && pcc > c.required_pcc + kPccBuffer)
    g.push_back(c.required_pcc >= 0.99 ? "ENABLE_PCC_099" : "ENABLE_PCC");
  if (c.required_pcc < 0.99) {
    const double next = std::min(0.99, (std::floor(c.required_pcc * 100) + 1) / 100.0);
    if (pcc > 0.99 + kPccBuffer)
      g.push_back("RAISE_PCC_099");
    else if (pcc > next + kPccBuffer)
      g.push_back("RAISE_PCC");
  }
  return g;
}

}  // namespace

std::vector<std::string> guidance_tags(const TestResult& r) {
  const TestConfig& c = detail::test_of(r).config;
  std::vector<std::string> g = pcc_guidance(c, r.run.pcc);
  const bool runs = r.bringup == Bringup::kPassed || r.bringup == Bringup::kIncorrectResult;
  if (runs && c.status == TestStatus::kKnownFailureXfail) g.push_back("RM_XFAIL");
  if (runs && c.status == TestStatus::kUnspecified) g.push_back("ADD_CONFIG");
  return g;
}

std::string junit_tags(const TestResult& r) {
  const TestCase& t = detail::test_of(r);
  std::vector<std::pair<std::string, std::string>> executors;
  for (const auto& [name, n] : r.run.executor_distribution) executors.emplace_back(name, std::to_string(n));
  const bool failing = !r.run.failed_step.empty() || r.outcome == Outcome::kFailed || r.outcome == Outcome::kXfailed;
  const std::string failing_reason =
      py_dict({{"name", failing ? py_opt_str(r.run.failed_step.empty() ? "result" : r.run.failed_step) : "None"},
               {"description", failing ? py_opt_str(r.message) : "None"}});
  return py_dict({{"test_name", py_str(t.id)},
                  {"specific_test_case", py_str(t.id)},
                  {"model_name", py_str(detail::model_name(t))},
                  {"variant", py_str(t.variant.name)},
                  {"target", py_str(t.target.name)},
                  {"run_mode", py_str(mode_name(t.mode))},
                  {"outcome", py_str(outcome_name(r.outcome))},
                  {"bringup_status", py_str(bringup_name(r.bringup))},
                  {"model_test_status", py_str(test_status_name(t.config.status))},
                  {"pcc", py_num(r.run.pcc)},
                  {"required_pcc", py_num(t.config.required_pcc)},
                  {"pcc_threshold", py_num(t.config.required_pcc)},
                  {"pcc_assertion_enabled", t.config.assert_pcc ? "True" : "False"},
                  {"atol", py_num(r.run.max_abs)},
                  {"executors", py_dict(executors)},
                  {"layers", std::to_string(r.run.layers)},
                  {"critical_failures", std::to_string(r.run.critical_failures)},
                  {"device_time_ms", py_num(r.run.device_ms)},
                  {"failing_reason", failing_reason},
                  {"since_previous", py_opt_str(r.since_previous)},
                  {"guidance", py_str_list(guidance_tags(r))}});
}

}  // namespace torq::pipeline::matrix
