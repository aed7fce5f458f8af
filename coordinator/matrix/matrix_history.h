// The run history side of a matrix run (issue 13; the records:
// pipeline/store/run_history.h): `--last-failed` chooses the tests to rerun from
// it, and after every completed run the run is recorded there and each
// result learns what changed since the test's previous record. Knows jobs,
// results and reports, never tensors or sockets.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/fleet/unit_run.h"
#include "pipeline/matrix/matrix.h"
#include "pipeline/store/run_diff.h"
#include "pipeline/store/run_history.h"

namespace torq::coordinator {

// --last-failed (pytest's --lf): of `selected`, the tests whose latest
// record in the history of `spec` failed (a run that did not select a test
// keeps its earlier outcome). Says on `out` what it does: no previous run
// (or `history` null: no store yet) → every selected test (returned
// unchanged); none failed → nothing (empty, and `*nothing_failed` set);
// else the tests it reruns.
std::vector<const pipeline::matrix::TestCase*> last_failed_tests(
    const std::string& spec, const pipeline::history::History* history,
    const std::vector<const pipeline::matrix::TestCase*>& selected, std::ostream& out, bool* nothing_failed);

// The op key of each layer unit `u` covers (its range's, for a subgraph),
// in layer order: what a test's history record names its layers by.
std::vector<std::string> unit_op_keys(const RunUnit& u);

// The drift thresholds of "since the previous run": diff's defaults, with
// those the spec's options set (pcc_drift, time_drift, time_floor_ms).
pipeline::history::DiffThresholds since_thresholds(const pipeline::matrix::SpecOptions& options);

// Appends `run` to the history with a record per result: result i's made
// by record_at(i), one at a time (a coordinator keeps no test's layers in
// memory until the end of its run), and compared as it is made with the
// test's latest record to set results[i].since_previous ("no previous run"
// when the spec has none), judged by `thresholds`. Durable (synced batches,
// the run's record last) before this returns its seq. Throws PipelineError
// on a store error.
int record_run(pipeline::history::History& history, pipeline::history::RunRecord run,
               const std::function<pipeline::history::TestRecord(size_t)>& record_at,
               const pipeline::history::DiffThresholds& thresholds,
               std::vector<pipeline::matrix::TestResult>* results);

}  // namespace torq::coordinator
