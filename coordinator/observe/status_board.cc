#include "coordinator/observe/status_board.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "pipeline/base/peak_rss.h"

namespace torq::coordinator::observe {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Bytes of the files under `dir` (a store: a few hundred files).
uint64_t dir_bytes(const std::string& dir) {
  namespace fs = std::filesystem;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fe;
    if (it->is_regular_file(fe)) total += it->file_size(fe);
  }
  return total;
}

TestStatus test_named(const std::string& id) {
  TestStatus t;
  t.id = id;
  return t;
}

bool is_outcome(const std::string& state) { return state != "queued" && state != "running"; }

}  // namespace

StatusBoard::StatusBoard() : started_(Clock::now()) {}

void StatusBoard::set_run(const std::string& spec, const std::string& run_id, const std::string& started_utc) {
  std::lock_guard<std::mutex> l(mu_);
  s_.spec = spec;
  s_.run_id = run_id;
  s_.started_utc = started_utc;
}

void StatusBoard::set_phase(const std::string& phase) {
  std::lock_guard<std::mutex> l(mu_);
  s_.phase = phase;
}

void StatusBoard::set_tests(const std::vector<std::string>& ids, size_t units_total) {
  std::lock_guard<std::mutex> l(mu_);
  s_.units_total = units_total;
  for (const auto& id : ids) {
    if (test_index_.count(id)) continue;
    test_index_[id] = s_.tests.size();
    s_.tests.push_back(test_named(id));
  }
  s_.tests_total = s_.tests.size();
}

void StatusBoard::test_finished(const std::string& id, const std::string& outcome, const std::string& detail) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = test_index_.find(id);
  if (it == test_index_.end()) {
    it = test_index_.emplace(id, s_.tests.size()).first;
    s_.tests.push_back(test_named(id));
    s_.tests_total = s_.tests.size();
  }
  TestStatus& t = s_.tests[it->second];
  if (!is_outcome(t.state)) ++s_.tests_done;
  else --s_.outcomes[t.state];
  t.state = outcome;
  t.detail = detail;
  ++s_.outcomes[outcome];
}

void StatusBoard::set_unit_tests(const std::string& unit_label, const std::vector<std::string>& test_ids) {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<size_t>& idx = tests_of_label_[unit_label];
  for (const auto& id : test_ids)
    if (auto it = test_index_.find(id); it != test_index_.end()) idx.push_back(it->second);
}

void StatusBoard::unit_started(const std::string& key, const std::string& label, size_t jobs_estimate) {
  std::lock_guard<std::mutex> l(mu_);
  label_of_key_[key] = label;
  s_.jobs_estimate = std::max(s_.jobs_estimate, jobs_estimate);
  ++s_.units_started;
  if (auto it = tests_of_label_.find(label); it != tests_of_label_.end())
    for (const size_t i : it->second)
      if (s_.tests[i].state == "queued") s_.tests[i].state = "running";
}

void StatusBoard::job_done(const pipeline::JobSpec& j, const pipeline::ExecResult& r, size_t jobs_done,
                           size_t jobs_estimate) {
  std::lock_guard<std::mutex> l(mu_);
  s_.jobs_done = jobs_done;
  s_.jobs_estimate = jobs_estimate;
  const std::string status = pipeline::status_name(r.status);
  ++s_.results[status][pipeline::executor_name(r.executor)];
  const auto label = label_of_key_.find(pipeline::result_key_of(j));
  if (label != label_of_key_.end())
    if (auto t = tests_of_label_.find(label->second); t != tests_of_label_.end())
      for (const size_t i : t->second) ++s_.tests[i].jobs_done;
  if (r.status == pipeline::Status::kSuccess) return;
  FailureStatus f{label == label_of_key_.end() ? pipeline::result_key_of(j) : label->second,
                  pipeline::executor_name(r.executor), status, r.error_message, j.first_node,
                  seconds(Clock::now() - started_)};
  if (f.message.size() > 300) f.message = f.message.substr(0, 300) + "...";
  s_.failures.push_back(std::move(f));
  if (s_.failures.size() > kFailuresKept) s_.failures.pop_front();
}

void StatusBoard::fleet(const FleetView& v) {
  std::lock_guard<std::mutex> l(mu_);
  s_.jobs_queued = v.queued;
  s_.jobs_leased = v.leased + v.held;
  std::map<std::string, size_t> done;
  if (v.done_by_worker)
    for (const auto& [id, n] : *v.done_by_worker) done[id] = n;
  s_.workers.clear();
  for (const auto& w : v.workers) {
    WorkerStatus x;
    x.id = w.id;
    x.target = w.target;
    x.health = w.health;
    x.reason = w.reason;
    x.toolchain = w.toolchain;
    x.tags = w.tags;
    x.capacity = w.capacity;
    x.leased = w.leased;
    x.done = done[w.id];
    x.connected = w.connected;
    x.quarantined = w.quarantined;
    if (!w.current_key.empty()) {
      const auto label = label_of_key_.find(w.current_key);
      x.current = (label == label_of_key_.end() ? w.current_key.substr(0, 12) : label->second) + " layer " +
                  std::to_string(w.current_layer) + " on " + w.current_executor;
    }
    s_.workers.push_back(std::move(x));
  }
  const auto now = Clock::now();
  samples_.emplace_back(now, s_.jobs_done);
  while (samples_.size() > 2 && now - samples_[1].first >= kRateWindow) samples_.pop_front();
}

void StatusBoard::latency(uint32_t us) {
  std::lock_guard<std::mutex> l(mu_);
  const double secs = us / 1e6;
  const size_t b = std::lower_bound(kLatencyBounds.begin(), kLatencyBounds.end(), secs) - kLatencyBounds.begin();
  ++s_.latency_buckets[b];
  s_.latency_sum_s += secs;
  ++s_.latency_count;
}

void StatusBoard::estimate_eta(RunStatus* s, Clock::time_point now) const {
  if (samples_.size() >= 2) {
    const auto& [t0, n0] = samples_.front();
    const double dt = seconds(now - t0);
    if (dt > 0.5) s->jobs_per_s = static_cast<double>(s->jobs_done - std::min(n0, s->jobs_done)) / dt;
  }
  // Units not planned yet are expected to bring as many jobs as the average planned one.
  double total = static_cast<double>(std::max(s->jobs_estimate, s->jobs_done));
  if (s->units_started > 0 && s->units_total > s->units_started)
    total += total / s->units_started * static_cast<double>(s->units_total - s->units_started);
  s->jobs_expected = static_cast<size_t>(total + 0.5);
  if (s->phase == "running" && s->jobs_per_s > 0)
    s->eta_s = (total - static_cast<double>(s->jobs_done)) / s->jobs_per_s;
}

void StatusBoard::set_store(const pipeline::Store* store) {
  std::lock_guard<std::mutex> l(store_mu_);
  store_ = store;
}

RunStatus StatusBoard::snapshot() const {
  RunStatus s;
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> l(mu_);
    s = s_;
    estimate_eta(&s, now);
  }
  {
    // Measured under a lock of its own: the serving thread's calls wait on mu_ only for the copy.
    std::lock_guard<std::mutex> l(store_mu_);
    if (store_) {
      s.store_disk_bytes = dir_bytes(store_->dir());
      s.store_memory_bytes = store_->memory_bytes();
    }
  }
  s.elapsed_s = seconds(now - started_);
  s.rss_bytes = static_cast<uint64_t>(base::current_rss_mb() * 1048576.0);
  // The peak (getrusage) and the current RSS (/proc) are read apart: the peak is at least the current.
  s.peak_rss_bytes = std::max(s.rss_bytes, static_cast<uint64_t>(base::peak_rss_mb() * 1048576.0));
  return s;
}

}  // namespace torq::coordinator::observe
