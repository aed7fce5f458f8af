// A matrix run and its history (matrix_history.h).
#include "coordinator/matrix/matrix_history.h"

#include <algorithm>

#include "pipeline/matrix/matrix_history.h"
#include "pipeline/model/op_key.h"
#include "pipeline/store/run_diff.h"

namespace torq::coordinator {

using namespace pipeline;
using pipeline::matrix::TestCase;
using pipeline::matrix::TestResult;

std::vector<const TestCase*> last_failed_tests(const std::string& spec, const history::History* h,
                                               const std::vector<const TestCase*>& selected, std::ostream& out,
                                               bool* nothing_failed) {
  *nothing_failed = false;
  const auto runs = h ? h->runs() : std::vector<history::RunRecord>{};
  if (runs.empty()) {
    out << "last-failed: no previous run of " << spec << ": running every selected test (" << selected.size() << ")\n";
    return selected;
  }
  std::vector<const TestCase*> failed;
  std::string ids;
  for (const TestCase* t : selected) {
    const std::optional<history::TestRecord> latest = h->latest_of(t->id);
    if (!latest || latest->outcome != "failed") continue;
    failed.push_back(t);
    ids += "\n  " + t->id;
  }
  const std::string last = "run " + std::to_string(runs.back().seq);
  if (failed.empty()) {
    *nothing_failed = true;
    out << "last-failed: no selected test failed at its latest run (the last is " << last << "): nothing to run\n";
  } else {
    out << "last-failed: rerunning " << failed.size() << " of " << selected.size()
        << " selected tests, those that failed at their latest run (the last is " << last << "):" << ids << "\n";
  }
  return failed;
}

std::vector<std::string> unit_op_keys(const RunUnit& u) {
  std::vector<std::string> all = layer_op_keys(*u.model);
  const LayerRange r = u.layers();
  if (r.last + 1 < all.size()) all.resize(r.last + 1);
  all.erase(all.begin(), all.begin() + std::min<size_t>(r.first, all.size()));
  return all;
}

history::DiffThresholds since_thresholds(const matrix::SpecOptions& options) {
  history::DiffThresholds th;
  th.pcc = options.pcc_drift.value_or(th.pcc);
  th.time = options.time_drift.value_or(th.time);
  th.time_floor_ms = options.time_floor_ms.value_or(th.time_floor_ms);
  return th;
}

int record_run(history::History& h, history::RunRecord run,
               const std::function<history::TestRecord(size_t)>& record_at, const history::DiffThresholds& thresholds,
               std::vector<TestResult>* results) {
  const bool any = !h.runs().empty();
  return h.append(std::move(run), results->size(), [&](size_t i) {
    history::TestRecord t = record_at(i);
    TestResult& r = (*results)[i];
    if (!any) {
      r.since_previous = "no previous run";
    } else {
      // Its previous record read now, not all of them at once. The run's
      // own "latest" pointers are written after its last test.
      const std::optional<history::TestRecord> prev = h.latest_of(t.id);
      r.since_previous = history::since_text(history::diff_test(prev ? &*prev : nullptr, t, thresholds));
    }
    return t;
  });
}

}  // namespace torq::coordinator
