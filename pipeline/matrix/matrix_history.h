// A matrix run's results as run-history records (run_history.h): what the
// coordinator stores after each run and what the diff, --last-failed, the
// "since the previous run" notes and the op-support matrix read.
#pragma once

#include <string>
#include <vector>

#include "pipeline/matrix/matrix.h"
#include "pipeline/matrix/matrix_report.h"
#include "pipeline/store/run_history.h"
#include "pipeline/core/types.h"

namespace torq::pipeline::matrix {

// The record of one judged test. `report`: its model report (nullptr for a
// test without one: skipped, import failure, a run of a config file);
// `op_keys`: the op key of each of the report's layers, in layer order
// (shorter or empty: the missing keys stay empty). Error messages are cut
// to 300 characters; non-finite figures become -1.
history::TestRecord test_record(const TestResult& r, const ModelReport* report,
                                const std::vector<std::string>& op_keys);
// The same in two steps: the layers of a test's record, made from its
// report as soon as it is written (a coordinator keeps these, not every
// report, until the run is judged; issue 32), then the record with them.
std::vector<history::LayerRecord> layer_records(const ModelReport& report, const std::vector<std::string>& op_keys);
history::TestRecord test_record(const TestResult& r, std::vector<history::LayerRecord> layers);

// The report's trend (RunInfo::trend) from a spec's runs as
// History::runs() lists them (oldest first): the last `last_n` of them.
std::vector<RunInfo::TrendPoint> trend_points(const std::vector<history::RunRecord>& runs, size_t last_n);

}  // namespace torq::pipeline::matrix
