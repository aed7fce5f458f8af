// Matrix results to run-history records (matrix_history.h).
#include "pipeline/matrix/matrix_history.h"

#include <cmath>

#include "pipeline/matrix/matrix_internal.h"

namespace torq::pipeline::matrix {

namespace {

double known(double v) { return std::isfinite(v) ? v : -1; }

history::LayerRecord layer_record(const LayerReport& l, const std::string& op) {
  history::LayerRecord out;
  out.id = l.info.id;
  out.op = op;
  out.recommended = l.recommended;
  for (const auto& [e, r] : l.results) {
    history::ExecRecord x;
    x.status = r.status;
    if (r.status == Status::kError)
      x.error = (r.error_class + ": " + r.error_message).substr(0, 300);
    else
      x.pcc = known(r.pcc);
    x.ms = known(r.runtime_ms);
    out.executors[e] = x;
  }
  return out;
}

}  // namespace

std::vector<history::LayerRecord> layer_records(const ModelReport& report, const std::vector<std::string>& op_keys) {
  std::vector<history::LayerRecord> out;
  out.reserve(report.layers.size());
  for (size_t i = 0; i < report.layers.size(); ++i)
    out.push_back(layer_record(report.layers[i], i < op_keys.size() ? op_keys[i] : ""));
  return out;
}

history::TestRecord test_record(const TestResult& r, const ModelReport* report,
                                const std::vector<std::string>& op_keys) {
  return test_record(r, report ? layer_records(*report, op_keys) : std::vector<history::LayerRecord>{});
}

history::TestRecord test_record(const TestResult& r, std::vector<history::LayerRecord> layers) {
  const TestCase& t = detail::test_of(r);
  history::TestRecord h;
  h.id = t.id;
  h.model = detail::model_name(t);
  h.variant = t.variant.name;
  h.target = t.target.name;
  h.mode = mode_name(t.mode);
  h.outcome = outcome_name(r.outcome);
  h.bringup = bringup_name(r.bringup);
  h.status = test_status_name(t.config.status);
  h.message = r.message.substr(0, 300);
  h.failed_step = r.run.failed_step;
  h.ran = r.run.ran;
  h.pcc = known(r.run.pcc);
  h.required_pcc = t.config.required_pcc;
  h.device_ms = known(r.run.device_ms);
  h.wall_s = r.run.wall_s;
  h.layers = std::move(layers);
  return h;
}

std::vector<RunInfo::TrendPoint> trend_points(const std::vector<history::RunRecord>& runs, size_t last_n) {
  std::vector<RunInfo::TrendPoint> out;
  for (size_t i = runs.size() > last_n ? runs.size() - last_n : 0; i < runs.size(); ++i) {
    const history::RunRecord& r = runs[i];
    RunInfo::TrendPoint p;
    p.seq = r.seq;
    p.started_utc = r.started_utc;
    for (const auto& [outcome, n] : r.counts) p.total += n;
    if (const auto it = r.counts.find(outcome_name(Outcome::kPassed)); it != r.counts.end()) p.passed = it->second;
    if (const auto it = r.counts.find(outcome_name(Outcome::kFailed)); it != r.counts.end()) p.failed = it->second;
    p.nss_coverage = r.nss_coverage;
    out.push_back(p);
  }
  return out;
}

}  // namespace torq::pipeline::matrix
