// `torq-coordinator --spec FILE`: a model-matrix run (DESIGN.md §8, issue
// #5). The spec and its test_config files are loaded and validated
// (pipeline/matrix/matrix.h), tests are collected and selected (-k, -m, --preset),
// every runnable discover test becomes a unit served to the fleet
// (unit_run.h) in one broker run, and each test is judged (passed, failed,
// skipped, xfailed, xpassed). Written to the export directory:
//
//   junit.xml, summary.json, report.html     the matrix (matrix_report.h), each test with
//                                            what changed since its previous run
//   ops.csv                                  the op-support matrix (pipeline/report/op_matrix.h)
//   suggested.yaml                           config edits (matrix::suggest), when any
//   reports/<test-id>/torq_gen_config_<model>.json, ..._compiler.json, <model>.torch.mlir
//   reports/<test-id>/grid.html              the test's layer grid page, linked from report.html
//
// Every completed run is recorded in the store's run history (one synced
// batch, before the exports are written: pipeline/store/run_history.h), which
// `torq-coordinator diff` and --last-failed read.
//
// Modes `run` and `subgraph` are collected but reported skipped as not
// implemented (NOT_SUPPORTED). A discover test passes when no layer is a
// critical failure and the assigned full-model run (every layer on its
// recommended executor, each fed the previous layers' outputs from there,
// the graph outputs compared with the fp32 host reference) meets the
// test's comparators (required_pcc, allclose).
//
// Exit codes: 0 every selected test has an expected outcome (or the run
// stopped early on SIGTERM: the store keeps the progress, and no
// junit.xml / summary.json / report.html is left in the export directory),
// 1 an unexpected outcome (failed, xpassed), 2 bad input (spec, config,
// flags), a store or bind error, or every local worker exited early.
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/fleet/fleet_broker.h"
#include "coordinator/observe/status_board.h"
#include "pipeline/core/types.h"

namespace torq::coordinator {

struct MatrixRunOptions {
  std::string spec_file;
  std::string k, m, preset;     // selection (all three combine with "and")
  bool collect_only = false;    // list the selected IDs and exit
  bool strict_xfail = false;    // an xpass is a failure
  // Rerun only the selected tests that failed at their latest run in the
  // spec's history (matrix_history.h); none failed: run nothing (exit 0).
  bool last_failed = false;
  std::string db;               // store; default <export>/.torq-store
  std::string export_dir = "torq-results";
  BrokerOptions broker;         // bind, heartbeats, CURVE, stop flag
  int local_workers = 0;        // >0: start this many torq-worker processes here
  const std::atomic<bool>* stop = nullptr;  // set by SIGTERM / SIGINT
  pipeline::Tolerance tolerance;
  // Told of the run's phases, tests and outcomes as they come (and, as the
  // broker's observer, of its jobs and fleet): the progress line and the
  // --http status (issue 33). May be null.
  observe::StatusBoard* status = nullptr;
};

int run_matrix(const MatrixRunOptions& opts, std::ostream& out, std::ostream& err);

// `torq-coordinator validate FILE...`: each file is a spec (it has
// `models`) or a test_config file. A spec is validated with its own
// test_config files plus the config files given (IDs must match collected
// tests); config files alone are checked for keys, types, enums and
// duplicates. Prints "ok" lines or the first error "file:line:col: ...".
// Returns 0 valid, 1 invalid, 2 unreadable or misuse.
int validate_files(const std::vector<std::string>& files, std::ostream& out, std::ostream& err);

// `torq-coordinator suggest --spec FILE --summary summary.json [-o OUT]`:
// re-judges a run's summary against the spec's current config and writes
// matrix::suggest's YAML patch to OUT (or stdout). Returns 0 (also when
// nothing is suggested: says so), 2 on bad input.
int suggest_from_summary(const std::string& spec_file, const std::string& summary_file, const std::string& out_file,
                         std::ostream& out, std::ostream& err);

}  // namespace torq::coordinator
