// Config suggestions from a run (matrix.h, suggest): a YAML fragment with a
// `test_config:` map, one entry per test to edit, sorted by ID, each preceded
// by a "# why" comment. Rules (only for tests that ran, not placeholders or
// skipped ones):
//  - KNOWN_FAILURE_XFAIL whose run raw-passes (xpassed, or failed under
//    strict_xfail) → status EXPECTED_PASSING, reason dropped, a fixed
//    bringup_status other than PASSED set to PASSED;
//  - a test with no config entry → EXPECTED_PASSING on a raw pass, else
//    KNOWN_FAILURE_XFAIL with the failure as reason and its bringup_status;
//  - a raw pass asserting pcc whose pcc, rounded down to 3 decimals, is at
//    least 0.001 above required_pcc → required_pcc raised to it.
// Each entry holds the test's whole resolved config after the edits (fields
// at their defaults left out), so it can replace an exact entry or shadow a
// glob as it stands. The output reads back with load_configs.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "pipeline/matrix/matrix.h"
#include "pipeline/matrix/matrix_internal.h"

namespace torq::pipeline::matrix {
namespace {

struct Suggestion {
  std::string id;
  std::string why;
  TestConfig config;
};

std::string number(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// A plain YAML scalar when it is safely one, else double-quoted.
std::string scalar(const std::string& s) {
  bool plain = !s.empty() && std::isalnum(static_cast<unsigned char>(s[0]));
  for (const char c : s)
    plain = plain &&
            (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/' || c == '+');
  return plain ? s : quoted(s);
}

std::string list(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + scalar(s);
  return "[" + out + "]";
}

std::string entry_text(const Suggestion& s) {
  const TestConfig& c = s.config;
  const TestConfig d;
  std::string why = s.why;
  std::replace(why.begin(), why.end(), '\n', ' ');
  std::string out = "  # " + why + "\n  " + scalar(s.id) + ":\n";
  out += std::string("    status: ") + test_status_name(c.status) + "\n";
  if (c.bringup) out += std::string("    bringup_status: ") + bringup_name(*c.bringup) + "\n";
  if (c.required_pcc != d.required_pcc) out += "    required_pcc: " + number(c.required_pcc) + "\n";
  if (c.assert_pcc != d.assert_pcc) out += std::string("    assert_pcc: ") + (c.assert_pcc ? "true" : "false") + "\n";
  if (c.assert_allclose != d.assert_allclose)
    out += std::string("    assert_allclose: ") + (c.assert_allclose ? "true" : "false") + "\n";
  if (c.allclose_rtol != d.allclose_rtol) out += "    allclose_rtol: " + number(c.allclose_rtol) + "\n";
  if (c.allclose_atol != d.allclose_atol) out += "    allclose_atol: " + number(c.allclose_atol) + "\n";
  if (!c.markers.empty()) out += "    markers: " + list(c.markers) + "\n";
  if (!c.supported_targets.empty()) out += "    supported_targets: " + list(c.supported_targets) + "\n";
  if (!c.reason.empty()) out += "    reason: " + quoted(c.reason) + "\n";
  return out;
}

}  // namespace

std::string suggest(const std::vector<TestResult>& results) {
  std::vector<Suggestion> out;
  for (const TestResult& r : results) {
    if (r.test == nullptr || r.test->placeholder || !r.run.ran || r.outcome == Outcome::kSkipped) continue;
    Suggestion s{r.test->id, "", r.test->config};
    TestConfig& c = s.config;
    std::string failure;
    Bringup bringup = Bringup::kUnknown;
    const bool pass = detail::raw_pass(c, r.run, &failure, &bringup);
    std::vector<std::string> why;
    if (c.status == TestStatus::kKnownFailureXfail && pass) {
      why.push_back("xpassed: KNOWN_FAILURE_XFAIL but passed; promote to EXPECTED_PASSING");
      c.status = TestStatus::kExpectedPassing;
      c.reason.clear();
      if (c.bringup && *c.bringup != Bringup::kPassed) c.bringup = Bringup::kPassed;
    } else if (c.key.empty() && pass) {
      why.push_back("no config entry; passed: add as EXPECTED_PASSING");
      c.status = TestStatus::kExpectedPassing;
    } else if (c.key.empty()) {
      why.push_back("no config entry; failed: add as KNOWN_FAILURE_XFAIL");
      c.status = TestStatus::kKnownFailureXfail;
      c.reason = failure;
      if (!c.bringup) c.bringup = bringup;
    }
    if (pass && c.assert_pcc && r.run.pcc >= 0) {
      const double floor3 = std::floor(r.run.pcc * 1000 + 1e-9) / 1000;
      if (floor3 >= c.required_pcc + 0.001 - 1e-9) {
        why.push_back("pcc " + number(r.run.pcc) + " meets required_pcc " + number(c.required_pcc) +
                      " with margin: raise to " + number(floor3));
        c.required_pcc = floor3;
      }
    }
    if (why.empty()) continue;
    for (const std::string& w : why) s.why += (s.why.empty() ? "" : "; ") + w;
    if (!c.key.empty()) s.why += " (was '" + c.key + "' at " + c.source + ")";
    out.push_back(std::move(s));
  }
  if (out.empty()) return "";
  std::stable_sort(out.begin(), out.end(), [](const Suggestion& a, const Suggestion& b) { return a.id < b.id; });
  out.erase(std::unique(out.begin(), out.end(), [](const Suggestion& a, const Suggestion& b) { return a.id == b.id; }),
            out.end());
  std::string text = "# torq matrix suggest: " + std::to_string(out.size()) + " config edit" +
                     (out.size() == 1 ? "" : "s") +
                     " from a run.\n"
                     "# Each entry is the test's whole config after the edit: let it replace the\n"
                     "# exact entry its comment names, or add it to a test_config file (an exact\n"
                     "# ID beats a glob).\n"
                     "test_config:\n";
  for (const Suggestion& s : out) text += entry_text(s);
  return text;
}

}  // namespace torq::pipeline::matrix
