// One `torq-coordinator --model M...` run: import the models into the store,
// serve their layer jobs to the fleet (unit_run.h: plan, resume from the
// store, the content-addressed cache, one FleetBroker), then build and export
// per model the report JSON and compiler JSON and print a one-screen summary
// (DESIGN.md §3–§6). Matrix specs (`--spec`) run through matrix_run.h.
//
// A run is named by a hash of its models and options: running the same
// models again on the same --db resumes it (finished jobs are not recomputed).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/fleet/fleet_broker.h"
#include "pipeline/core/types.h"

namespace torq::coordinator {

// The exit code of a run stopped before it finished (SIGTERM/SIGINT, or
// workers gone with jobs left): nothing was judged, the store resumes it.
inline constexpr int kExitStoppedEarly = 3;

// What to discover: models, executors, target and options.
struct FleetSpec {
  std::vector<std::string> models;  // paths
  std::vector<pipeline::Executor> executors{pipeline::Executor::kNss, pipeline::Executor::kCss,
                                            pipeline::Executor::kHost};
  std::string target = "sim";
  bool auto_convert_bf16 = false;
  bool dedup = false;
  bool skip_mode = false;
  uint32_t timing_runs = 1;
};

struct FleetRunOptions {
  FleetSpec spec;
  std::string db;              // the store directory (created when missing)
  std::string export_dir;      // where reports go; empty: no files written
  BrokerOptions broker;        // bind, heartbeats, attempts, CURVE, stop flag
  uint32_t job_timeout_ms = 120000;
  pipeline::Tolerance tolerance;
};

// Exit codes: 0 complete (or stopped early by the stop flag: the store keeps
// the progress), 1 complete with critical failures, 2 bad input, a refused
// bind or a store error. Log lines go to `err`, the summary to `out`.
int run_fleet(const FleetRunOptions& opts, std::ostream& out, std::ostream& err);

// The summary lines shared by fleet and matrix runs ("jobs", "results",
// "fleet", "time", "dispatch").
struct ServeTotals;
void print_serve_totals(const ServeTotals& t, double wall_s, std::ostream& out);

}  // namespace torq::coordinator
