#include "coordinator/matrix/run_progress.h"

#include <sstream>

#include "coordinator/fleet/fmt.h"

namespace torq::coordinator {

using namespace pipeline::matrix;  // NOLINT(google-build-using-namespace)

std::string result_line(const TestResult& r) {
  std::ostringstream out;
  std::string line = std::string(outcome_name(r.outcome));
  line.resize(8, ' ');
  out << line << " " << r.test->id << "  [" << bringup_name(r.bringup) << "]";
  if (r.run.ran && r.run.pcc >= 0) out << " pcc " << fmt(r.run.pcc, 6);
  if (r.run.ran && r.run.e2e) {
    const bool original = r.run.judged_against == kAgainstOriginal;
    const double other = original ? r.run.converted_pcc : r.run.e2e_pcc;
    out << " (against " << r.run.judged_against << "; against " << (original ? kAgainstConverted : kAgainstOriginal)
        << " " << (other >= 0 ? fmt(other, 6) : std::string("unknown")) << ")";
  }
  if (r.run.ran) out << ", " << r.run.layers << " layers";
  if (!r.message.empty()) out << ": " << r.message;
  return out.str();
}

RunProgress::RunProgress(observe::StatusBoard* board, LogFn log, bool strict_xfail)
    : board_(board), log_(std::move(log)), strict_xfail_(strict_xfail) {}

void RunProgress::start(const std::string& spec, const std::string& run_id, const std::string& started_utc,
                        const std::vector<const TestCase*>& selected, size_t units) {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const TestCase* t : selected) {
      tests_[t->id] = t;
      ids.push_back(t->id);
    }
  }
  if (!board_) return;
  board_->set_run(spec, run_id, started_utc);
  board_->set_tests(ids, units);
}

void RunProgress::phase(const std::string& name, const std::string& detail) {
  log_("phase: " + name + (detail.empty() ? "" : " (" + detail + ")"));
  if (board_) board_->set_phase(name);
}

void RunProgress::unit_tests(const std::string& label, const std::vector<std::string>& ids) {
  if (board_) board_->set_unit_tests(label, ids);
}

void RunProgress::finished(const std::string& id, const TestRun& run) {
  std::string line;
  TestResult r;
  {
    std::lock_guard<std::mutex> l(mu_);
    const auto t = tests_.find(id);
    if (t == tests_.end() || !done_.insert(id).second) return;
    r = judge(*t->second, run, strict_xfail_);
    line = "test " + std::to_string(done_.size()) + "/" + std::to_string(tests_.size()) + ": " + result_line(r);
  }
  log_(line);
  if (board_) board_->test_finished(id, outcome_name(r.outcome), r.message);
}

}  // namespace torq::coordinator
