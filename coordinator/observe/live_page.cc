// GET / of `torq-coordinator --http`: the run's status for a person, a
// server-rendered page that reloads itself (no script needed, works in any
// browser and offline).
#include <algorithm>
#include <cstdio>

#include "coordinator/observe/status_board.h"
#include "pipeline/base/html_escape.h"

namespace torq::coordinator::observe {

namespace {

std::string esc(const std::string& s) { return base::html_escape(s); }

const char* kStyle =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;max-width:1300px}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
    "progress{width:40em;height:1.2em}.Good{color:#176a1a}.Bad,.gone{color:#a00}.Unknown{color:#a60}"
    ".passed{background:#d9f2d9}.failed,.xpassed{background:#f7d4d4}.xfailed,.skipped{background:#eee}"
    ".running{background:#fff3c4}";

std::string workers_html(const RunStatus& s) {
  std::string h = "<h2>Workers and boards (" + std::to_string(s.workers.size()) + ")</h2>\n";
  h += "<table id=\"workers\"><thead><tr><th>worker</th><th>health</th><th>target</th><th>tags</th><th>jobs done</th>"
       "<th>leased</th><th>running</th></tr></thead><tbody>\n";
  for (const auto& w : s.workers) {
    std::string tags;
    for (const auto& t : w.tags) tags += (tags.empty() ? "" : ", ") + t;
    const std::string health = w.connected ? w.health : "gone";
    h += "<tr class=\"worker\" data-worker=\"" + esc(w.id) + "\" data-health=\"" + esc(health) + "\"><td>" +
         esc(w.id) + "</td><td class=\"" + esc(health) + "\" title=\"" + esc(w.reason) + "\">" + esc(health) +
         "</td><td>" + esc(w.target) + "</td><td>" + esc(tags) + "</td><td>" + std::to_string(w.done) + "</td><td>" +
         std::to_string(w.leased) + "/" + std::to_string(w.capacity) + "</td><td>" + esc(w.current) + "</td></tr>\n";
  }
  return h + "</tbody></table>\n";
}

std::string tests_html(const RunStatus& s) {
  std::string h = "<h2>Tests</h2>\n<table id=\"tests\"><thead><tr><th>test</th><th>state</th><th>jobs done</th>"
                  "<th>detail</th></tr></thead><tbody>\n";
  for (const auto& t : s.tests)
    h += "<tr class=\"test " + esc(t.state) + "\" data-state=\"" + esc(t.state) + "\"><td>" + esc(t.id) + "</td><td>" +
         esc(t.state) + "</td><td>" + std::to_string(t.jobs_done) + "</td><td>" + esc(t.detail) + "</td></tr>\n";
  return h + "</tbody></table>\n";
}

std::string failures_html(const RunStatus& s) {
  if (s.failures.empty()) return "<h2>Last failures</h2>\n<p id=\"failures\">none so far</p>\n";
  std::string h = "<h2>Last failures</h2>\n<table id=\"failures\"><thead><tr><th>at</th><th>test</th><th>layer</th>"
                  "<th>executor</th><th>status</th><th>message</th></tr></thead><tbody>\n";
  for (auto f = s.failures.rbegin(); f != s.failures.rend(); ++f)
    h += "<tr><td>" + duration_text(f->at_s) + "</td><td>" + esc(f->test) + "</td><td>" + std::to_string(f->layer) +
         "</td><td>" + esc(f->executor) + "</td><td>" + esc(f->status) + "</td><td>" + esc(f->message) + "</td></tr>\n";
  return h + "</tbody></table>\n";
}

}  // namespace

std::string live_page(const RunStatus& s, int refresh_s) {
  const size_t total = std::max(s.jobs_expected, s.jobs_done);
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  if (s.phase != "done" && s.phase != "stopped")
    h += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(refresh_s) + "\">\n";
  h += "<title>torq-coordinator: " + esc(s.phase) + " " + esc(s.spec) + "</title>\n<style>" + kStyle + "</style>\n";
  h += "</head>\n<body>\n<h1>torq-coordinator</h1>\n<p>" + esc(s.spec) + " (run " + esc(s.run_id) + "), started " +
       esc(s.started_utc) + "; phase <strong id=\"phase\">" + esc(s.phase) + "</strong>, " +
       duration_text(s.elapsed_s) + " elapsed.</p>\n";
  h += "<p><progress id=\"job-progress\" value=\"" + std::to_string(s.jobs_done) + "\" max=\"" +
       std::to_string(std::max<size_t>(total, 1)) + "\" aria-label=\"jobs done\"></progress></p>\n";
  h += "<p id=\"progress\" data-jobs-done=\"" + std::to_string(s.jobs_done) + "\" data-tests-done=\"" +
       std::to_string(s.tests_done) + "\" data-tests-total=\"" + std::to_string(s.tests_total) + "\">" +
       esc(progress_figures(s)) + "</p>\n";
  h += "<p>RSS " + std::to_string(s.rss_bytes >> 20) + " MB, store " + std::to_string(s.store_disk_bytes >> 20) +
       " MB on disk. Machine-readable: <a href=\"/api/status\">/api/status</a>, <a href=\"/metrics\">/metrics</a>.</p>\n";
  h += workers_html(s) + tests_html(s) + failures_html(s);
  return h + "</body>\n</html>\n";
}

}  // namespace torq::coordinator::observe
