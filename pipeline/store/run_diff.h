// What changed between two runs of a matrix spec (issue 13, `torq-coordinator
// diff`), and per test "since the previous run" (JUnit, HTML): from the run
// history's records (run_history.h). Pure logic, no I/O.
//
// Per test (B the later run, A the earlier):
//   new failure    B failed, A did not          fixed          A failed, B passed or xpassed
//   still failing  both failed                  outcome        another outcome change (e.g. passed -> skipped)
//   unchanged      same outcome                 new test       not in A            not run   not in B
// plus PCC drift (both PCCs known, |pcc_B - pcc_A| > pcc threshold), timing
// drift of the assigned full-model run's device time (|dt| > floor and
// |dt| / t_A > time threshold), and per layer (matched by layer id):
//   status       an executor's status changed (an executor tested in one run only: "-")
//   recommended  the recommended executor changed ("none": no executor)
//   pcc          the recommended executor's PCC drifted (same executor in both)
//   time         the layer's time on its recommended executor drifted (thresholds as above)
//   added / removed  a layer in one run only
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/store/run_history.h"

namespace torq::pipeline::history {

struct DiffThresholds {
  double pcc = 0.001;            // absolute PCC change
  double time = 0.2;             // relative time change (0.2: 20%)
  double time_floor_ms = 0.001;  // ... and at least this many ms
};

struct LayerChange {
  std::string layer;
  std::string kind;      // status | recommended | pcc | time | added | removed
  std::string executor;  // status: its executor; pcc, time: the recommended executor in B
  std::string from, to;  // "success" / "error" / "-", "nss" / "none", "0.999", "0.00456 ms"
  std::string detail;    // status to error: the error; time: "+318%"
  bool operator==(const LayerChange&) const = default;
};

struct TestChange {
  std::string id;
  std::string change;  // new failure | fixed | still failing | outcome | unchanged | new test | not run
  std::string outcome_a, outcome_b, bringup_a, bringup_b;  // "" where the test is absent
  double pcc_a = -1, pcc_b = -1, ms_a = -1, ms_b = -1;     // -1: unknown
  bool pcc_drift = false, time_drift = false;
  std::vector<LayerChange> layers;
  // Anything to report: an outcome change (not "still failing", not "not
  // run"), a drift or a layer change.
  bool changed() const;
};

// The change of one test from `a` (nullptr: not in the earlier run) to `b`.
TestChange diff_test(const TestRecord* a, const TestRecord& b, const DiffThresholds& th);

// One line for the reports: "new failure", "fixed", "still failing",
// "passed -> skipped", "unchanged", "new test", each followed by
// "; pcc drift -0.0123", "; time drift +40%", "; 2 layers changed" as they
// apply ("unchanged" gives way to them).
std::string since_text(const TestChange& c);

struct RunDiff {
  RunRecord a, b;  // with their tests
  DiffThresholds thresholds;
  std::vector<TestChange> tests;  // B's tests in run order, then those only in A ("not run")
};

RunDiff diff_runs(const RunRecord& a, const RunRecord& b, const DiffThresholds& th);

// Human-readable: a header naming the runs and thresholds, each changed
// test with its changed layers, and a summary line of counts.
std::string diff_text(const RunDiff& d);
// {"spec", "a": {seq, run_id, started_utc, tests}, "b": {...}, "thresholds":
//  {pcc, time, time_floor_ms}, "summary": {"new failure": n, "fixed": n,
//  "still failing": n, "outcome": n, "unchanged": n, "new test": n,
//  "not run": n, "pcc drift": n, "time drift": n, "layer changes": n},
//  "tests": [{id, change, since, outcome: [a, b], bringup: [a, b], pcc: [a, b],
//  pcc_drift, device_ms: [a, b], time_drift, layers: [{layer, kind,
//  executor, from, to, detail}]}] (changed tests only), "unchanged": [ids]
//  (the others of B), "not_run": [ids] (A's tests B did not run)}.
// Unknown figures and absent sides are null.
nlohmann::json diff_json(const RunDiff& d);

}  // namespace torq::pipeline::history
