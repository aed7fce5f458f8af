// A running coordinator's status (issue 33): what the fleet, the unit
// server and the matrix run tell it (RunObserver and the run's own calls),
// kept under one lock and read as a snapshot by the progress line, the
// --http server and `status`. Knows jobs, results and tests; no sockets, no
// tensors.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator/fleet/run_observer.h"
#include "pipeline/store/store.h"

namespace torq::coordinator::observe {

struct WorkerStatus {
  std::string id, target, health, reason, toolchain;
  std::vector<std::string> tags;
  size_t capacity = 0, leased = 0, done = 0;
  bool connected = true, quarantined = false;
  std::string current;  // "<test> layer N on <executor>" of one job it holds, "" when idle
};

struct TestStatus {
  std::string id;
  std::string state = "queued";  // queued | running | an outcome (passed, failed, skipped, xfailed, xpassed)
  std::string detail;            // the outcome's message
  size_t jobs_done = 0;
};

struct FailureStatus {
  std::string test, executor, status, message;
  uint32_t layer = 0;
  double at_s = 0;  // since the run started
};

// The dispatch latency histogram's upper bounds, in seconds (Prometheus "le").
inline const std::vector<double> kLatencyBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                   0.25,  0.5,    1,     2.5,  5,     10,  30, 60};

struct RunStatus {
  std::string tool = "torq-coordinator", spec, run_id, started_utc;
  std::string phase = "starting";  // starting, preparing, running, exporting, done, stopped
  double elapsed_s = 0;
  size_t tests_total = 0, tests_done = 0, units_total = 0, units_started = 0;
  // jobs_estimate: the jobs of the units planned so far; jobs_expected: the
  // whole run's, the units not planned yet counted as the average planned one.
  size_t jobs_done = 0, jobs_estimate = 0, jobs_expected = 0, jobs_queued = 0, jobs_leased = 0;
  double jobs_per_s = 0;  // over the last kRateWindow
  double eta_s = -1;      // -1: unknown yet
  std::map<std::string, std::map<std::string, size_t>> results;  // status -> executor -> results
  std::map<std::string, size_t> outcomes;                         // outcome -> tests
  std::vector<WorkerStatus> workers;
  std::vector<TestStatus> tests;
  std::deque<FailureStatus> failures;  // the latest kFailuresKept, oldest first
  std::vector<uint64_t> latency_buckets = std::vector<uint64_t>(kLatencyBounds.size() + 1);  // last: +Inf
  double latency_sum_s = 0;
  uint64_t latency_count = 0;
  uint64_t store_disk_bytes = 0, store_memory_bytes = 0, rss_bytes = 0, peak_rss_bytes = 0;
};

class StatusBoard final : public RunObserver {
 public:
  static constexpr size_t kFailuresKept = 20;
  static constexpr std::chrono::seconds kRateWindow{20};

  StatusBoard();

  // The matrix run's side.
  void set_run(const std::string& spec, const std::string& run_id, const std::string& started_utc);
  void set_phase(const std::string& phase);
  // The tests of the run in order, and how many units (models to prepare) they make.
  void set_tests(const std::vector<std::string>& ids, size_t units_total);
  // A test's outcome is known (a line per test as it finishes).
  void test_finished(const std::string& id, const std::string& outcome, const std::string& detail);
  // The units a unit key's jobs belong to, for the tests' job counts.
  void set_unit_tests(const std::string& unit_label, const std::vector<std::string>& test_ids);

  // RunObserver (the serving thread).
  void unit_started(const std::string& key, const std::string& label, size_t jobs_estimate) override;
  void job_done(const pipeline::JobSpec& j, const pipeline::ExecResult& r, size_t jobs_done,
                size_t jobs_estimate) override;
  void fleet(const FleetView& v) override;
  void latency(uint32_t us) override;

  // The run's store, measured by snapshot() (it must outlive the board's
  // readers, or be unset before it goes).
  void set_store(const pipeline::Store* store);

  // A copy of the status now, with the time-dependent figures (elapsed,
  // rate, ETA, RSS, the store's size on disk and in memory) computed at the call.
  RunStatus snapshot() const;

 private:
  void estimate_eta(RunStatus* s, std::chrono::steady_clock::time_point now) const;

  mutable std::mutex mu_;
  RunStatus s_;
  mutable std::mutex store_mu_;  // set_store against a snapshot measuring it
  const pipeline::Store* store_ = nullptr;
  const std::chrono::steady_clock::time_point started_;
  std::unordered_map<std::string, std::string> label_of_key_;  // result key -> unit label
  std::unordered_map<std::string, std::vector<size_t>> tests_of_label_;  // unit label -> test indexes
  std::map<std::string, size_t> test_index_;
  // (time, jobs done) at each fleet report: the rate over kRateWindow.
  std::deque<std::pair<std::chrono::steady_clock::time_point, size_t>> samples_;
};

// The status as JSON (GET /api/status) and back (`status --http`); from_json
// throws nlohmann::json::exception on a document that is not one.
nlohmann::json to_json(const RunStatus& s);
RunStatus status_from_json(const nlohmann::json& j);
// The Prometheus text exposition format, version 0.0.4 (GET /metrics).
std::string metrics_text(const RunStatus& s);
// The live page (GET /): the status for a person, refreshing itself every `refresh_s`.
std::string live_page(const RunStatus& s, int refresh_s);
// The status for a terminal (`status --http`).
std::string status_text(const RunStatus& s);
// "tests 3/128 | jobs 12000/~69113 (17%) | 290 jobs/s | ETA 3m20s": the progress line's figures.
std::string progress_figures(const RunStatus& s);
// "3m20s", "45s", "1h02m".
std::string duration_text(double secs);

}  // namespace torq::coordinator::observe
