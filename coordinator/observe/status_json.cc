// RunStatus <-> JSON (GET /api/status, `status --http`).
#include <algorithm>
#include "coordinator/observe/status_board.h"

namespace torq::coordinator::observe {

namespace {

nlohmann::json worker_json(const WorkerStatus& w) {
  return {{"id", w.id},         {"target", w.target},       {"health", w.health},     {"reason", w.reason},
          {"toolchain", w.toolchain}, {"tags", w.tags},     {"capacity", w.capacity}, {"leased", w.leased},
          {"done", w.done},     {"connected", w.connected}, {"quarantined", w.quarantined},
          {"current", w.current}};
}

WorkerStatus worker_of(const nlohmann::json& j) {
  WorkerStatus w;
  j.at("id").get_to(w.id);
  j.at("target").get_to(w.target);
  j.at("health").get_to(w.health);
  j.at("reason").get_to(w.reason);
  j.at("toolchain").get_to(w.toolchain);
  j.at("tags").get_to(w.tags);
  j.at("capacity").get_to(w.capacity);
  j.at("leased").get_to(w.leased);
  j.at("done").get_to(w.done);
  j.at("connected").get_to(w.connected);
  j.at("quarantined").get_to(w.quarantined);
  j.at("current").get_to(w.current);
  return w;
}

nlohmann::json latency_json(const RunStatus& s) {
  nlohmann::json buckets = nlohmann::json::array();
  uint64_t cumulative = 0;
  for (size_t i = 0; i < s.latency_buckets.size(); ++i) {
    cumulative += s.latency_buckets[i];
    buckets.push_back({{"le", i < kLatencyBounds.size() ? nlohmann::json(kLatencyBounds[i]) : nlohmann::json("+Inf")},
                       {"count", cumulative}});
  }
  return {{"count", s.latency_count}, {"sum_s", s.latency_sum_s}, {"buckets", buckets}};
}

void latency_of(const nlohmann::json& j, RunStatus* s) {
  j.at("count").get_to(s->latency_count);
  j.at("sum_s").get_to(s->latency_sum_s);
  const auto& b = j.at("buckets");
  s->latency_buckets.assign(b.size(), 0);
  uint64_t before = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const uint64_t c = b[i].at("count").get<uint64_t>();
    s->latency_buckets[i] = c - std::min(c, before);
    before = c;
  }
}

}  // namespace

nlohmann::json to_json(const RunStatus& s) {
  nlohmann::json tests = nlohmann::json::array(), workers = nlohmann::json::array(),
                 failures = nlohmann::json::array();
  for (const auto& t : s.tests)
    tests.push_back({{"id", t.id}, {"state", t.state}, {"detail", t.detail}, {"jobs_done", t.jobs_done}});
  for (const auto& w : s.workers) workers.push_back(worker_json(w));
  for (const auto& f : s.failures)
    failures.push_back({{"test", f.test}, {"layer", f.layer}, {"executor", f.executor}, {"status", f.status},
                        {"message", f.message}, {"at_s", f.at_s}});
  return {{"tool", s.tool},
          {"run", {{"spec", s.spec}, {"run_id", s.run_id}, {"started_utc", s.started_utc}, {"phase", s.phase},
                   {"elapsed_s", s.elapsed_s}}},
          {"progress",
           {{"tests_done", s.tests_done}, {"tests_total", s.tests_total}, {"units_started", s.units_started},
            {"units_total", s.units_total}, {"jobs_done", s.jobs_done}, {"jobs_estimate", s.jobs_estimate},
            {"jobs_expected", s.jobs_expected},
            {"jobs_queued", s.jobs_queued}, {"jobs_leased", s.jobs_leased}, {"jobs_per_s", s.jobs_per_s},
            {"eta_s", s.eta_s < 0 ? nlohmann::json() : nlohmann::json(s.eta_s)}}},
          {"results", s.results},
          {"outcomes", s.outcomes},
          {"tests", tests},
          {"workers", workers},
          {"failures", failures},
          {"dispatch_latency", latency_json(s)},
          {"process",
           {{"rss_bytes", s.rss_bytes}, {"peak_rss_bytes", s.peak_rss_bytes},
            {"store_disk_bytes", s.store_disk_bytes}, {"store_memory_bytes", s.store_memory_bytes}}}};
}

RunStatus status_from_json(const nlohmann::json& j) {
  RunStatus s;
  j.at("tool").get_to(s.tool);
  const auto& run = j.at("run");
  run.at("spec").get_to(s.spec);
  run.at("run_id").get_to(s.run_id);
  run.at("started_utc").get_to(s.started_utc);
  run.at("phase").get_to(s.phase);
  run.at("elapsed_s").get_to(s.elapsed_s);
  const auto& p = j.at("progress");
  p.at("tests_done").get_to(s.tests_done);
  p.at("tests_total").get_to(s.tests_total);
  p.at("units_started").get_to(s.units_started);
  p.at("units_total").get_to(s.units_total);
  p.at("jobs_done").get_to(s.jobs_done);
  p.at("jobs_estimate").get_to(s.jobs_estimate);
  p.at("jobs_expected").get_to(s.jobs_expected);
  p.at("jobs_queued").get_to(s.jobs_queued);
  p.at("jobs_leased").get_to(s.jobs_leased);
  p.at("jobs_per_s").get_to(s.jobs_per_s);
  s.eta_s = p.at("eta_s").is_null() ? -1 : p.at("eta_s").get<double>();
  j.at("results").get_to(s.results);
  j.at("outcomes").get_to(s.outcomes);
  for (const auto& t : j.at("tests"))
    s.tests.push_back(TestStatus{t.at("id").get<std::string>(), t.at("state").get<std::string>(),
                                 t.at("detail").get<std::string>(), t.at("jobs_done").get<size_t>()});
  for (const auto& w : j.at("workers")) s.workers.push_back(worker_of(w));
  for (const auto& f : j.at("failures"))
    s.failures.push_back(FailureStatus{f.at("test").get<std::string>(), f.at("executor").get<std::string>(),
                                       f.at("status").get<std::string>(), f.at("message").get<std::string>(),
                                       f.at("layer").get<uint32_t>(), f.at("at_s").get<double>()});
  latency_of(j.at("dispatch_latency"), &s);
  const auto& proc = j.at("process");
  proc.at("rss_bytes").get_to(s.rss_bytes);
  proc.at("peak_rss_bytes").get_to(s.peak_rss_bytes);
  proc.at("store_disk_bytes").get_to(s.store_disk_bytes);
  proc.at("store_memory_bytes").get_to(s.store_memory_bytes);
  return s;
}

}  // namespace torq::coordinator::observe
