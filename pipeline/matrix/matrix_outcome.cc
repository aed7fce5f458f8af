// Outcomes of a matrix run (matrix.h, judge / unexpected), DESIGN §8:
//   placeholder                         → skipped, bringup NOT_STARTED
//   NOT_SUPPORTED_SKIP, a target not in
//   supported_targets, or !run.ran      → skipped (bringup: config's, else UNKNOWN)
//   raw pass + KNOWN_FAILURE_XFAIL      → xpassed (failed when strict_xfail)
//   raw fail + KNOWN_FAILURE_XFAIL      → xfailed
//   raw pass / raw fail otherwise       → passed / failed
// Raw pass: the run has no failed step, no critical failure, and its
// comparators hold. assert_pcc: pcc >= required_pcc (an unknown pcc, -1,
// fails). assert_allclose: max_abs <= atol OR max_rel <= rtol — the worst
// absolute and worst relative differences each bound every element, so
// either one within its tolerance implies torch-style allclose
// (|a-b| <= atol + rtol*|b|) element-wise; it is the conservative check the
// aggregate figures allow (unknown, -1, fails).
// Bringup: the config's when given; else PASSED on a raw pass; else by
// failed_step (import → FAILED_FE_COMPILATION, compile → FAILED_COMPILATION,
// runtime → FAILED_RUNTIME, result → INCORRECT_RESULT, other → UNKNOWN); a
// critical failure (a layer every executor errored on) → FAILED_RUNTIME; a
// comparator failing → INCORRECT_RESULT.
#include <cstdio>

#include "pipeline/matrix/matrix.h"
#include "pipeline/matrix/matrix_internal.h"

namespace torq::pipeline::matrix {
namespace {

std::string figure(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

Bringup bringup_of_step(const std::string& step) {
  if (step == "import") return Bringup::kFailedFeCompilation;
  if (step == "compile") return Bringup::kFailedCompilation;
  if (step == "runtime") return Bringup::kFailedRuntime;
  if (step == "result") return Bringup::kIncorrectResult;
  return Bringup::kUnknown;
}

bool in(const std::vector<std::string>& list, const std::string& s) {
  for (const std::string& x : list)
    if (x == s) return true;
  return false;
}

}  // namespace

void select_compared(TestRun* run, bool with_original) {
  if (!run->e2e) return;
  if (with_original) {
    run->pcc = run->e2e_pcc;
    run->max_abs = run->e2e_max_abs;
    run->max_rel = run->e2e_max_rel;
    run->judged_against = kAgainstOriginal;
  } else {
    run->pcc = run->converted_pcc;
    run->max_abs = run->converted_max_abs;
    run->max_rel = run->converted_max_rel;
    run->judged_against = kAgainstConverted;
  }
}

namespace detail {

bool raw_pass(const TestConfig& c, const TestRun& run, std::string* why, Bringup* bringup) {
  auto fail = [&](Bringup b, const std::string& msg) {
    *bringup = b;
    *why = msg + (run.failing_range.empty() ? "" : "; first failing range: " + run.failing_range);
    return false;
  };
  if (!run.failed_step.empty())
    return fail(bringup_of_step(run.failed_step),
                run.failed_step + " failed" + (run.message.empty() ? "" : ": " + run.message));
  if (run.critical_failures > 0)
    return fail(Bringup::kFailedRuntime, std::to_string(run.critical_failures) + " critical failure" +
                                             (run.critical_failures == 1 ? "" : "s") +
                                             (run.message.empty() ? "" : ": " + run.message));
  // What the figures were measured against, when a converted variant has two.
  const std::string against = run.judged_against.empty() ? "" : " against " + run.judged_against;
  const std::string unknown =
      run.e2e_error.empty() || run.judged_against != kAgainstOriginal ? "no compared result" : run.e2e_error;
  if (c.assert_pcc && run.pcc == -1) return fail(Bringup::kIncorrectResult, "pcc" + against + " unknown (" + unknown + ")");
  if (c.assert_pcc && !(run.pcc >= c.required_pcc))
    return fail(Bringup::kIncorrectResult,
                "pcc " + figure(run.pcc) + against + " below required " + figure(c.required_pcc));
  if (c.assert_allclose) {
    if (run.max_abs < 0 && run.max_rel < 0)
      return fail(Bringup::kIncorrectResult, "allclose" + against + " unknown (" + unknown + ")");
    const bool abs_ok = run.max_abs >= 0 && run.max_abs <= c.allclose_atol;
    const bool rel_ok = run.max_rel >= 0 && run.max_rel <= c.allclose_rtol;
    if (!abs_ok && !rel_ok)
      return fail(Bringup::kIncorrectResult, "not allclose" + against + ": max_abs " + figure(run.max_abs) +
                                                 " > atol " + figure(c.allclose_atol) + " and max_rel " +
                                                 figure(run.max_rel) + " > rtol " + figure(c.allclose_rtol));
  }
  *bringup = Bringup::kPassed;
  why->clear();
  return true;
}

}  // namespace detail

TestResult judge(const TestCase& test, const TestRun& run, bool strict_xfail) {
  const TestConfig& c = test.config;
  TestResult r;
  r.test = &test;
  r.run = run;
  r.bringup = c.bringup.value_or(Bringup::kUnknown);
  auto skip = [&](const std::string& why) {
    r.outcome = Outcome::kSkipped;
    r.message = c.reason.empty() ? why : why + ": " + c.reason;
    return r;
  };
  if (test.placeholder) {
    r.bringup = Bringup::kNotStarted;
    return skip("placeholder (not yet added)");
  }
  if (c.status == TestStatus::kNotSupportedSkip) return skip("NOT_SUPPORTED_SKIP");
  if (c.status == TestStatus::kExcludeModel) return skip("EXCLUDE_MODEL");
  if (!c.supported_targets.empty() && !in(c.supported_targets, test.target.name))
    return skip("target '" + test.target.name + "' not in supported_targets");
  if (!run.ran) {
    r.outcome = Outcome::kSkipped;
    r.message = run.skip_reason.empty() ? "not run" : run.skip_reason;
    return r;
  }

  std::string why;
  Bringup raw_bringup = Bringup::kUnknown;
  const bool pass = detail::raw_pass(c, run, &why, &raw_bringup);
  r.bringup = c.bringup.value_or(raw_bringup);
  const std::string reason = c.reason.empty() ? "" : " (" + c.reason + ")";
  if (c.status == TestStatus::kKnownFailureXfail) {
    if (pass) {
      r.outcome = strict_xfail ? Outcome::kFailed : Outcome::kXpassed;
      r.message = std::string(strict_xfail ? "xpassed (strict): " : "") + "KNOWN_FAILURE_XFAIL test passed" + reason;
    } else {
      r.outcome = Outcome::kXfailed;
      r.message = why + reason;
    }
    return r;
  }
  r.outcome = pass ? Outcome::kPassed : Outcome::kFailed;
  r.message = why;
  return r;
}

bool unexpected(const TestResult& r) { return r.outcome == Outcome::kFailed || r.outcome == Outcome::kXpassed; }

}  // namespace torq::pipeline::matrix
