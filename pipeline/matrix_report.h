// Reports of a matrix run (issue #5): JUnit XML for CI, a machine-readable
// JSON summary, and one self-contained HTML file (no network: inline CSS and
// JS) with the filterable matrix of outcomes and, per model test, the
// layer × executor grid coloured by status with the recommended executor and
// metrics on hover/click. Pure text generation: no sockets, no tensors.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/matrix.h"
#include "pipeline/types.h"

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
// ("nss:12,css:3,host:1"), wall_time, reason. XML-escaped throughout.
std::string junit_xml(const std::vector<TestResult>& results, const RunInfo& info);

// {"run": {...RunInfo}, "counts": {"passed": n, ...}, "exit_code": 0|1,
//  "tests": [{"id", "model", "variant", "target", "mode", "outcome",
//             "bringup_status", "status", "message", "ran", "failed_step",
//             "pcc", "max_abs", "max_rel" (null when unknown), "required_pcc",
//             "layers", "critical_failures", "executor_distribution",
//             "wall_s", "report"}]}
nlohmann::json summary_json(const std::vector<TestResult>& results, const RunInfo& info);

// The HTML report. `reports` maps test ID → that test's model report (the
// layer grid); tests without one show no grid.
std::string html_report(const std::vector<TestResult>& results, const std::map<std::string, ModelReport>& reports,
                        const RunInfo& info);

}  // namespace torq::pipeline::matrix
