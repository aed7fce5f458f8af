// report.html (matrix_report.h): run info, what changed since the previous
// run, the charts, the filterable matrix of outcomes and the op-support
// grid; each test's layer grid is a page of its own (matrix_html_grid.cc).
// Every piece of text from the run is HTML-escaped; the stylesheet and
// script are inline (matrix_html_template.h).
#include <string>

#include "pipeline/matrix/matrix_html_template.h"
#include "pipeline/matrix/matrix_internal.h"
#include "pipeline/matrix/matrix_report.h"

namespace torq::pipeline::matrix {
namespace {

using detail::metric;
using detail::printf_str;

constexpr Outcome kOutcomes[] = {Outcome::kPassed, Outcome::kFailed, Outcome::kXfailed, Outcome::kXpassed,
                                 Outcome::kSkipped};


// ------------------------------------------------------------ run header

std::string header_html(const std::vector<TestResult>& results, const RunInfo& info) {
  std::string h = "<header>\n<h1>torq matrix report</h1>\n<dl class=\"run\">\n";
  auto row = [&h](const std::string& name, const std::string& value) {
    h += "<dt>" + detail::html_escape(name) + "</dt><dd>" + detail::html_escape(value.empty() ? "-" : value) + "</dd>\n";
  };
  row("spec", info.spec);
  row("run id", info.run_id);
  row("started", info.started_utc);
  row("wall time", printf_str("%.1f s", info.wall_s));
  row("jobs", std::to_string(info.jobs) + " (fleet " + std::to_string(info.fleet_jobs) + ", cache hits " +
                  std::to_string(info.cache_hits) + ")");
  row("jobs/s", printf_str("%.2f", info.jobs_per_s));
  std::string selection;
  if (!info.preset.empty()) selection += "preset " + info.preset + " · ";
  if (!info.k.empty()) selection += "-k '" + info.k + "' · ";
  if (!info.m.empty()) selection += "-m '" + info.m + "' · ";
  selection += std::to_string(results.size()) + " selected, " + std::to_string(info.deselected) + " deselected";
  row("selection", selection);
  row("strict xfail", info.strict_xfail ? "yes" : "no");
  for (const auto& b : info.boards) row("board " + b.worker, board_line(b));
  h += "</dl>\n<ul class=\"counts\">\n";
  for (const Outcome o : kOutcomes) {
    size_t n = 0;
    for (const TestResult& r : results) n += r.outcome == o;
    h += std::string("<li class=\"outcome-") + outcome_name(o) + "\" data-outcome=\"" + outcome_name(o) + "\">" +
         outcome_name(o) + " <span class=\"count\">" + std::to_string(n) + "</span></li>\n";
  }
  h += "</ul>\n</header>\n";
  return h;
}

std::string glance_html(const std::vector<TestResult>& results, const RunInfo& info) {
  return "<section id=\"glance\">\n<h2>At a glance</h2>\n<div class=\"charts\">\n" + detail::heatmap_html(results) +
         detail::executor_bars_html(results) + "</div>\n" + detail::trend_html(info.trend) + "</section>\n";
}

std::string controls_html() {
  std::string h = "<section id=\"controls\">\n";
  h += "<input id=\"filter\" type=\"search\" placeholder=\"filter: substring of the test ID\" "
       "aria-label=\"filter by test ID\">\n";
  for (const Outcome o : kOutcomes)
    h += std::string("<label><input type=\"checkbox\" class=\"outcome-toggle\" value=\"") + outcome_name(o) +
         "\" checked> " + outcome_name(o) + "</label>\n";
  h += "<span id=\"shown\"></span>\n</section>\n";
  return h;
}

// ------------------------------------------------------------ matrix table


// An enum name (EXPECTED_PASSING) that may wrap after its underscores.
std::string enum_td(const std::string& name) {
  std::string h = "<td class=\"enum\">";
  for (const char c : name) h += c == '_' ? std::string("_<wbr>") : detail::html_escape(std::string(1, c));
  return h + "</td>";
}

// The columns and their share of the window's width (the table's layout is
// fixed: it never needs more than the window; long text wraps).
constexpr std::pair<const char*, int> kColumns[] = {
    {"test", 21}, {"outcome", 7},  {"since previous run", 12}, {"bring-up", 9}, {"status", 9}, {"PCC", 6},
    {"req.", 5},  {"layers", 6},   {"executors", 9},           {"wall s", 5},   {"message", 11}};

std::string table_head() {
  std::string h = "<table id=\"matrix\" class=\"fit\">\n<colgroup>";
  for (const auto& [name, width] : kColumns) h += "<col style=\"width:" + std::to_string(width) + "%\">";
  h += "</colgroup>\n<thead><tr>";
  for (const auto& [name, width] : kColumns) h += std::string("<th>") + name + "</th>";
  return h + "</tr></thead>\n<tbody>\n";
}

// The row's opening tag: its outcome and, when it changed, how.
std::string row_open(const TestResult& r, detail::Change change) {
  const TestCase& t = detail::test_of(r);
  const std::string outcome = outcome_name(r.outcome);
  std::string cls = "test outcome-" + outcome;
  std::string data;
  if (change != detail::Change::kNone) {
    cls += std::string(" changed change-") + detail::change_name(change);
    data = std::string(" data-change=\"") + detail::change_name(change) + "\"";
  }
  return "<tr class=\"" + cls + "\" data-outcome=\"" + outcome + "\" data-id=\"" + detail::html_escape(t.id) + "\" id=\"" +
         detail::html_escape(detail::element_id("test-", t.id)) + "\"" + data + ">";
}

std::string since_td(const TestResult& r, detail::Change change) {
  const std::string text = detail::html_escape(r.since_previous.empty() ? "-" : r.since_previous);
  if (change == detail::Change::kNone) return "<td class=\"since\">" + text + "</td>";
  return std::string("<td class=\"since\"><span class=\"change-badge\">") + detail::change_badge(change) +
         "</span> " + text + "</td>";
}

// The PCC, with the requirement and both comparisons of a converted variant on hover.
std::string pcc_td(const TestResult& r) {
  const TestConfig& c = detail::test_of(r).config;
  const bool below = r.run.pcc >= 0 && c.assert_pcc && r.run.pcc < c.required_pcc;
  std::string title;
  if (r.run.e2e)
    title = " title=\"vs the fp32 original " + metric(r.run.e2e_pcc, true) + ", vs the converted model " +
            metric(r.run.converted_pcc, true) + " (judged: " + detail::html_escape(r.run.judged_against) + ")\"";
  return std::string("<td class=\"num") + (below ? " below" : "") + "\"" + title + ">" + metric(r.run.pcc, true) +
         "</td>";
}

std::string layers_td(const TestResult& r) {
  std::string h = "<td class=\"num layers\">" + std::to_string(r.run.layers);
  if (r.run.critical_failures > 0) h += "<small>" + std::to_string(r.run.critical_failures) + " critical</small>";
  return h + "</td>";
}

std::string matrix_row(const TestResult& r, bool has_page) {
  const TestCase& t = detail::test_of(r);
  const detail::Change change = detail::change_of(r.since_previous);
  std::string h = row_open(r, change);
  if (has_page)
    h += "<td class=\"id\"><a href=\"" + detail::html_escape(grid_page_path(t.id)) + "\">" + detail::html_escape(t.id) + "</a></td>";
  else
    h += detail::html_td("id", t.id);
  h += std::string("<td><span class=\"badge\">") + outcome_name(r.outcome) + "</span></td>";
  h += since_td(r, change) + enum_td(bringup_name(r.bringup)) + enum_td(test_status_name(t.config.status));
  h += pcc_td(r) + detail::html_td("num", metric(t.config.required_pcc, true)) + layers_td(r);
  h += detail::html_td("", detail::distribution_text(r.run.executor_distribution, ", "));
  h += detail::html_td("num", printf_str("%.2f", r.run.wall_s));
  h += detail::html_td("msg", r.message.empty() ? r.run.message : r.message);
  return h + "</tr>\n";
}

std::string matrix_html(const std::vector<TestResult>& results, const std::set<std::string>& grid_pages) {
  std::string h = "<h2>Tests</h2>\n<p class=\"legend\">A test's ID links its page: its figures and its layer × "
                  "executor grid. Hover a PCC for both comparisons of a converted variant.</p>\n" +
                  controls_html() + table_head();
  for (const TestResult& r : results) h += matrix_row(r, grid_pages.count(detail::test_of(r).id) > 0);
  return h + "</tbody>\n</table>\n";
}

// The "Host Profile Overview" of each test that collected profiles.
std::string profiles_html(const std::vector<TestResult>& results) {
  std::string h;
  for (const TestResult& r : results) {
    if (r.run.profile_overview.empty()) continue;
    h += "<details class=\"profile\" data-id=\"" + detail::html_escape(r.test->id) + "\"><summary>profile: " + detail::html_escape(r.test->id) +
         " (trace " + detail::html_escape(r.run.profile_trace) + ")</summary><pre>" + detail::html_escape(r.run.profile_overview) + "</pre></details>\n";
  }
  return h.empty() ? h : "<section id=\"profiles\">\n<h2>Host Profile Overview</h2>\n" + h + "</section>\n";
}

}  // namespace

std::string html_report(const std::vector<TestResult>& results, const std::set<std::string>& grid_pages,
                        const RunInfo& info, const OpMatrix* ops) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<title>torq matrix " + detail::html_escape(info.run_id) + "</title>\n<style>" + std::string(html_template::kStyle) +
       html_template::kReportStyle + "</style>\n</head>\n";
  h += "<body>\n" + header_html(results, info) + detail::changes_html(results) + glance_html(results, info);
  h += matrix_html(results, grid_pages) + (ops ? detail::ops_html(*ops) : "") + profiles_html(results);
  h += std::string("<script>") + html_template::kScript + html_template::kMarkReady + "</script>\n</body>\n</html>\n";
  return h;
}

std::string ops_page(const OpMatrix& ops, const RunInfo& info) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>torq op support " + detail::html_escape(info.run_id) + "</title>\n<style>" + std::string(html_template::kStyle) +
       html_template::kReportStyle + "</style>\n</head>\n<body>\n";
  h += "<p><a href=\"report.html\">← report.html</a> · " + detail::html_escape(info.spec) + " (run " + detail::html_escape(info.run_id) + ")</p>\n";
  h += detail::ops_grid_html(ops);
  return h + "<script>" + html_template::kMarkReady + "</script>\n</body>\n</html>\n";
}

}  // namespace torq::pipeline::matrix
