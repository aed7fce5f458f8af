// What a run shows to whoever watches it (issue 33): the fleet broker and
// the unit server tell a RunObserver what happens, on their serving thread,
// and the observer (coordinator/observe: progress lines, the --http status
// server) keeps what it needs. The fleet knows no observer but this
// interface; every call must return quickly (the broker loop waits on it).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/wire/codec.h"

namespace torq::coordinator {

// The fleet as the broker sees it at one moment.
struct FleetView {
  size_t queued = 0, leased = 0, held = 0;  // jobs in the broker's table now
  struct Worker {
    std::string id, target, health, reason, toolchain;
    std::vector<std::string> tags;
    size_t capacity = 0, leased = 0;
    bool connected = true;         // false: seen this run, gone now
    bool quarantined = false;
    std::string current_key;       // one job it holds: its result key, first layer and executor
    uint32_t current_layer = 0;
    std::string current_executor;
  };
  std::vector<Worker> workers;
  // Jobs each worker (by registered id) has returned a result for this run.
  const std::vector<std::pair<std::string, size_t>>* done_by_worker = nullptr;
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // A unit is planned: its result key, its label (test ID), and the run's
  // estimated jobs now that its are counted.
  virtual void unit_started(const std::string& key, const std::string& label, size_t jobs_estimate) = 0;
  // A job's result is known (committed, resumed from the store or a cache
  // hit); `jobs_done` of `jobs_estimate` so far.
  virtual void job_done(const pipeline::JobSpec& j, const pipeline::ExecResult& r, size_t jobs_done,
                        size_t jobs_estimate) = 0;
  // The fleet, at most every kFleetEvery and once at the end of the run.
  virtual void fleet(const FleetView& v) = 0;
  // One dispatch latency (JOB sent to its RESULT received).
  virtual void latency(uint32_t us) = 0;
  static constexpr std::chrono::milliseconds kFleetEvery{500};
};

}  // namespace torq::coordinator
