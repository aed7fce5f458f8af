// A matrix run as it goes (issue 33): a line when it enters a phase
// (preparing, running, exporting, done), a line per test as soon as its
// outcome is known ("test 12/128: passed  <id>  [PASSED] pcc ..."), and the
// same on the status board (the progress line, `--http`). Thread-safe: the
// preparing, serving and exporting threads all finish tests.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "coordinator/fleet/unit_run.h"
#include "coordinator/observe/status_board.h"
#include "pipeline/matrix/matrix.h"

namespace torq::coordinator {

// "passed   <id>  [PASSED] pcc 0.999, 51 layers: <message>": a test's outcome on one line.
std::string result_line(const pipeline::matrix::TestResult& r);

class RunProgress {
 public:
  // `board` may be null (lines only).
  RunProgress(observe::StatusBoard* board, LogFn log, bool strict_xfail);

  // The run's selected tests, and the units (models to prepare) they make.
  void start(const std::string& spec, const std::string& run_id, const std::string& started_utc,
             const std::vector<const pipeline::matrix::TestCase*>& selected, size_t units);
  void phase(const std::string& name, const std::string& detail = "");
  // The tests a unit (by its label) serves.
  void unit_tests(const std::string& label, const std::vector<std::string>& ids);
  // Test `id`'s run is complete: judged, said and shown (once per test).
  void finished(const std::string& id, const pipeline::matrix::TestRun& run);

 private:
  observe::StatusBoard* const board_;
  const LogFn log_;
  const bool strict_xfail_;
  std::mutex mu_;
  std::map<std::string, const pipeline::matrix::TestCase*> tests_;
  std::set<std::string> done_;
};

}  // namespace torq::coordinator
