// RunStatus for people and for Prometheus: the progress line's figures, the
// terminal text of `status --http`, the metrics and the live page.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "coordinator/observe/status_board.h"

namespace torq::coordinator::observe {

namespace {

std::string num(double v, int decimals = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string mb(uint64_t bytes) { return num(static_cast<double>(bytes) / 1048576.0, 0) + " MB"; }

// Prometheus label values: backslash, double quote and newline escaped.
std::string label(const std::string& v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string prom(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.15g", v);
  return b;
}

void family(std::string* out, const std::string& name, const std::string& type, const std::string& help) {
  *out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void jobs_metrics(const RunStatus& s, std::string* out) {
  family(out, "torq_jobs", "gauge",
         "Jobs of the run by state (planned: of the units planned so far; expected: the whole run's, estimated).");
  *out += "torq_jobs{state=\"done\"} " + std::to_string(s.jobs_done) + "\n";
  *out += "torq_jobs{state=\"queued\"} " + std::to_string(s.jobs_queued) + "\n";
  *out += "torq_jobs{state=\"leased\"} " + std::to_string(s.jobs_leased) + "\n";
  *out += "torq_jobs{state=\"planned\"} " + std::to_string(s.jobs_estimate) + "\n";
  *out += "torq_jobs{state=\"expected\"} " + std::to_string(s.jobs_expected) + "\n";
  family(out, "torq_jobs_per_second", "gauge", "Jobs finished per second over the last 20 s.");
  *out += "torq_jobs_per_second " + prom(s.jobs_per_s) + "\n";
  if (s.eta_s >= 0) {
    family(out, "torq_eta_seconds", "gauge", "Estimated seconds until the last job is done.");
    *out += "torq_eta_seconds " + prom(s.eta_s) + "\n";
  }
  family(out, "torq_results_total", "counter", "Job results by status and executor.");
  for (const auto& [status, by_exec] : s.results)
    for (const auto& [exec, n] : by_exec)
      *out += "torq_results_total{status=\"" + label(status) + "\",executor=\"" + label(exec) + "\"} " +
              std::to_string(n) + "\n";
  family(out, "torq_tests", "gauge", "Tests of the run by outcome (queued and running: not finished).");
  size_t running = 0;
  for (const auto& t : s.tests) running += t.state == "running";
  *out += "torq_tests{outcome=\"queued\"} " + std::to_string(s.tests_total - s.tests_done - running) + "\n";
  *out += "torq_tests{outcome=\"running\"} " + std::to_string(running) + "\n";
  for (const auto& [outcome, n] : s.outcomes)
    *out += "torq_tests{outcome=\"" + label(outcome) + "\"} " + std::to_string(n) + "\n";
}

void worker_metrics(const RunStatus& s, std::string* out) {
  static const char* kHealth[] = {"Good", "Unknown", "Bad", "Maintenance"};
  family(out, "torq_worker_up", "gauge", "1 while the worker is registered, 0 once it left.");
  for (const auto& w : s.workers)
    *out += "torq_worker_up{worker=\"" + label(w.id) + "\",target=\"" + label(w.target) + "\"} " +
            (w.connected ? "1" : "0") + "\n";
  family(out, "torq_worker_health", "gauge", "The worker's device health (LAVA's states): 1 for its state.");
  for (const auto& w : s.workers)
    for (const char* h : kHealth)
      *out += "torq_worker_health{worker=\"" + label(w.id) + "\",health=\"" + h + "\"} " +
              (w.health == h ? "1" : "0") + "\n";
  family(out, "torq_worker_jobs_done_total", "counter", "Results the worker returned this run.");
  for (const auto& w : s.workers)
    *out += "torq_worker_jobs_done_total{worker=\"" + label(w.id) + "\"} " + std::to_string(w.done) + "\n";
  family(out, "torq_worker_leased_jobs", "gauge", "Jobs leased to the worker now.");
  for (const auto& w : s.workers)
    *out += "torq_worker_leased_jobs{worker=\"" + label(w.id) + "\"} " + std::to_string(w.leased) + "\n";
}

void process_metrics(const RunStatus& s, std::string* out) {
  family(out, "torq_dispatch_latency_seconds", "histogram", "From a JOB sent to its RESULT received.");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < s.latency_buckets.size(); ++i) {
    cumulative += s.latency_buckets[i];
    const std::string le = i < kLatencyBounds.size() ? prom(kLatencyBounds[i]) : "+Inf";
    *out += "torq_dispatch_latency_seconds_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  *out += "torq_dispatch_latency_seconds_sum " + prom(s.latency_sum_s) + "\n";
  *out += "torq_dispatch_latency_seconds_count " + std::to_string(s.latency_count) + "\n";
  family(out, "torq_store_disk_bytes", "gauge", "Bytes of the run's store on disk.");
  *out += "torq_store_disk_bytes " + std::to_string(s.store_disk_bytes) + "\n";
  family(out, "torq_store_memory_bytes", "gauge", "The store's memtables, block cache and index memory.");
  *out += "torq_store_memory_bytes " + std::to_string(s.store_memory_bytes) + "\n";
  family(out, "process_resident_memory_bytes", "gauge", "The coordinator's resident set size.");
  *out += "process_resident_memory_bytes " + std::to_string(s.rss_bytes) + "\n";
  family(out, "torq_coordinator_peak_rss_bytes", "gauge", "The coordinator's peak resident set size.");
  *out += "torq_coordinator_peak_rss_bytes " + std::to_string(s.peak_rss_bytes) + "\n";
}

}  // namespace

std::string duration_text(double secs) {
  if (secs < 0) return "-";
  const long t = std::lround(secs);
  char b[32];
  if (t >= 3600) std::snprintf(b, sizeof b, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else if (t >= 60) std::snprintf(b, sizeof b, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(b, sizeof b, "%lds", t);
  return b;
}

std::string progress_figures(const RunStatus& s) {
  const size_t total = std::max(s.jobs_expected, s.jobs_done);
  std::string line = "tests " + std::to_string(s.tests_done) + "/" + std::to_string(s.tests_total) + " | jobs " +
                     std::to_string(s.jobs_done) + "/" + (s.units_started < s.units_total ? "~" : "") +
                     std::to_string(total);
  if (total > 0) line += " (" + num(100.0 * static_cast<double>(s.jobs_done) / static_cast<double>(total), 0) + "%)";
  line += " | " + num(s.jobs_per_s) + " jobs/s | ETA " + (s.eta_s < 0 ? "-" : duration_text(s.eta_s));
  return line;
}

std::string metrics_text(const RunStatus& s) {
  std::string out;
  jobs_metrics(s, &out);
  worker_metrics(s, &out);
  process_metrics(s, &out);
  return out;
}

std::string status_text(const RunStatus& s) {
  std::string t = s.tool + " " + s.spec + " (run " + s.run_id + "), started " + s.started_utc + ", " +
                  duration_text(s.elapsed_s) + " ago\n";
  t += "phase     " + s.phase + "\nprogress  " + progress_figures(s) + "\n";
  t += "memory    RSS " + mb(s.rss_bytes) + " (peak " + mb(s.peak_rss_bytes) + "), store " + mb(s.store_disk_bytes) +
       " on disk, " + mb(s.store_memory_bytes) + " in memory\n";
  t += "workers   " + std::to_string(s.workers.size()) + "\n";
  for (const auto& w : s.workers)
    t += "  " + w.id + "  " + (w.connected ? w.health : "gone") + "  target " + w.target + "  done " +
         std::to_string(w.done) + "  leased " + std::to_string(w.leased) + "/" + std::to_string(w.capacity) +
         (w.current.empty() ? "" : "  running " + w.current) + (w.reason.empty() ? "" : "  (" + w.reason + ")") + "\n";
  t += "tests\n";
  for (const auto& x : s.tests)
    t += "  " + x.state + std::string(x.state.size() < 8 ? 8 - x.state.size() : 1, ' ') + " " + x.id +
         (x.state == "running" ? "  " + std::to_string(x.jobs_done) + " jobs done" : "") + "\n";
  if (!s.failures.empty()) t += "last failures\n";
  for (const auto& f : s.failures)
    t += "  " + f.test + " layer " + std::to_string(f.layer) + " on " + f.executor + ": " + f.status +
         (f.message.empty() ? "" : ": " + f.message) + "\n";
  return t;
}

}  // namespace torq::coordinator::observe
