// One `torq-coordinator` run: import the spec's models into the store, plan
// their layer jobs (dedup, skip mode, the content-addressed cache, resume
// from the store), serve them to the fleet through a FleetBroker, then build
// and export per model the report JSON and compiler JSON and print a
// one-screen summary (DESIGN.md §3–§6).
//
// A run is named by a hash of its models and options: running the same
// spec again on the same --db resumes it (finished jobs are not recomputed).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "coordinator/fleet_broker.h"
#include "coordinator/fleet_spec.h"
#include "pipeline/types.h"

namespace torq::coordinator {

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

}  // namespace torq::coordinator
