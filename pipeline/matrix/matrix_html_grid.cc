// A test's page beside report.html (matrix_report.h): its figures and its
// layer × executor grid. The grids live here, not in report.html, so that
// the report's size does not grow with layers (issue 33).
#include <cctype>
#include <iterator>
#include <string>

#include "pipeline/matrix/matrix_html_template.h"
#include "pipeline/matrix/matrix_internal.h"
#include "pipeline/matrix/matrix_report.h"
#include "pipeline/report/report.h"

namespace torq::pipeline::matrix {
namespace {

using detail::metric;



// The metrics of one executor's result, one per line (a cell's title).
std::string cell_title(const ExecResult& x, bool recommended) {
  std::string t = std::string(executor_name(x.executor)) + ": " + status_name(x.status) +
                  (recommended ? " (recommended)" : "") + "\n";
  if (x.status == Status::kError) {
    t += "error_class: " + (x.error_class.empty() ? std::string("-") : x.error_class) + "\n";
    t += "error: " + (x.error_message.empty() ? std::string("-") : x.error_message) + "\n";
  } else {
    t += "pcc: " + metric(x.pcc, false, "unknown") + "\n";
    t += "max_abs: " + metric(x.max_abs, false, "unknown") + "\n";
    t += "max_rel: " + metric(x.max_rel, false, "unknown") + "\n";
  }
  t += "runtime_ms: " + metric(x.runtime_ms, true, "unknown");
  if (x.runtime_ms >= 0 && x.timing_runs > 0) t += " (" + std::to_string(x.timing_runs) + " runs)";
  t += "\nhost_ms: " + metric(x.host_ms, true, "unknown") + "\n";
  t += "worker: " + (x.worker_id.empty() ? std::string("-") : x.worker_id);
  if (!x.toolchain.empty()) t += " (" + x.toolchain + ")";
  if (x.attempts > 1) t += "\nattempts: " + std::to_string(x.attempts);
  if (x.cached) t += "\ncached: yes";
  if (!x.dedup_of.empty()) t += "\ndedup_of: " + x.dedup_of;
  return t;
}

// Executors present in any layer, in priority order (all three when none).
std::vector<Executor> grid_executors(const ModelReport& r) {
  std::vector<Executor> out;
  for (const Executor e : kExecutorPriority)
    for (const LayerReport& l : r.layers)
      if (l.results.count(e)) {
        out.push_back(e);
        break;
      }
  if (out.empty()) out.assign(std::begin(kExecutorPriority), std::end(kExecutorPriority));
  return out;
}

// "nss 12, css 3, none 1": the report's layers by recommended executor.
std::string recommended_text(const ReportSummary& s) {
  std::string text;
  for (const Executor e : kExecutorPriority)
    if (const int n = s.executors[static_cast<int>(e)].recommended; n > 0)
      text += std::string(text.empty() ? "" : ", ") + executor_name(e) + " " + std::to_string(n);
  if (s.recommended_none > 0)
    text += std::string(text.empty() ? "" : ", ") + "none " + std::to_string(s.recommended_none);
  return text.empty() ? "-" : text;
}

// One grid cell: executor `e`'s result for layer `l`.
std::string cell_html(const std::string& test_id, const LayerReport& l, Executor e) {
  const std::string common = " data-executor=\"" + std::string(executor_name(e)) + "\" data-test=\"" + detail::html_escape(test_id) +
                             "\" data-layer=\"" + detail::html_escape(l.info.id) + "\"";
  const auto it = l.results.find(e);
  if (it == l.results.end())
    return "<td class=\"cell status-absent\"" + common + " title=\"" + executor_name(e) + ": not tested\">–</td>";
  const bool rec = l.recommended == e;
  const std::string status = status_name(it->second.status);
  return "<td class=\"cell status-" + status + (rec ? " recommended" : "") + "\"" + common + " title=\"" +
         detail::html_escape(cell_title(it->second, rec)) + "\">" + (rec ? "<span class=\"star\">★</span> " : "") + status + "</td>";
}

std::string layer_row(const std::string& test_id, const LayerReport& l, const std::vector<Executor>& executors,
                      bool critical) {
  std::string h = std::string("<tr class=\"layer") + (critical ? " critical" : "") + "\" data-layer=\"" +
                  detail::html_escape(l.info.id) + "\">" + detail::html_td("num", std::to_string(l.info.index));
  std::string layer_text = detail::html_escape(l.info.id);
  if (!l.dedup_of.empty()) layer_text += " <small>(dedup of " + detail::html_escape(l.dedup_of) + ")</small>";
  h += "<td class=\"layer\">" + layer_text + "</td>" + detail::html_td("", l.info.op_type);
  for (const Executor e : executors) h += cell_html(test_id, l, e);
  return h + detail::html_td("", l.recommended ? executor_name(*l.recommended) : "-") + "</tr>\n";
}

// The test's figures, as report.html's row gives them and more.
std::string figures_html(const TestResult& r) {
  const TestCase& t = detail::test_of(r);
  std::string h = "<dl class=\"run\">\n";
  auto row = [&h](const std::string& name, const std::string& value) {
    h += "<dt>" + detail::html_escape(name) + "</dt><dd>" + detail::html_escape(value.empty() ? "-" : value) + "</dd>\n";
  };
  row("model", detail::model_name(t));
  row("variant · target · mode", t.variant.name + " · " + t.target.name + " · " + mode_name(t.mode));
  row("outcome", outcome_name(r.outcome));
  row("since previous run", r.since_previous);
  row("bring-up · status", std::string(bringup_name(r.bringup)) + " · " + test_status_name(t.config.status));
  row("PCC", metric(r.run.pcc, true) + " (required " + metric(t.config.required_pcc, true) +
                 (r.run.judged_against.empty() ? "" : ", judged against " + r.run.judged_against) + ")");
  if (r.run.e2e)
    row("PCC vs fp32 original / vs converted",
        metric(r.run.e2e_pcc, true) + " / " + metric(r.run.converted_pcc, true));
  row("max_abs · max_rel", metric(r.run.max_abs, true) + " · " + metric(r.run.max_rel, true));
  row("layers", std::to_string(r.run.layers) + " (" + std::to_string(r.run.critical_failures) + " critical failures)");
  row("executors", detail::distribution_text(r.run.executor_distribution, ", "));
  row("wall s", detail::printf_str("%.2f", r.run.wall_s));
  row("message", r.message.empty() ? r.run.message : r.message);
  h += "</dl>\n";
  if (!r.run.report_file.empty()) {
    const std::string file = r.run.report_file.substr(r.run.report_file.find_last_of('/') + 1);
    h += "<p>Report for <code>torq-gen-config view/edit</code>: <a href=\"" + detail::html_escape(detail::url_fragment(file)) + "\">" +
         detail::html_escape(file) + "</a></p>\n";
  }
  return h;
}

// The page up to its grid.
std::string page_head(const TestResult& r) {
  const std::string& id = detail::test_of(r).id;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<title>torq grid " + detail::html_escape(id) + "</title>\n<style>" + std::string(html_template::kStyle) +
       html_template::kGridStyle + "</style>\n</head>\n<body>\n";
  h += "<nav><a id=\"back\" href=\"../../report.html#" + detail::html_escape(detail::url_fragment(detail::element_id("test-", id))) +
       "\">← matrix report</a></nav>\n";
  h += "<h1>" + detail::html_escape(id) + " <span class=\"outcome-" + outcome_name(r.outcome) + "\"><span class=\"badge\">" +
       outcome_name(r.outcome) + "</span></span></h1>\n" + figures_html(r);
  h += "<h2>Layer × executor grid</h2>\n<p class=\"legend\">"
       "<span class=\"status-success\">success</span><span class=\"status-difference\">difference</span>"
       "<span class=\"status-error\">error</span><span class=\"status-absent\">not tested</span>"
       "★ recommended executor; hover a cell for its metrics, click to pin them. To hand a result to a "
       "compiler engineer: <code>torq-gen-config repro --model M --output-dir D LAYER --executor E</code> "
       "(with the test's variant flags) writes a folder whose <code>run.sh</code> reproduces it.</p>\n";
  return h;
}

std::string page_tail() {
  return std::string("<div id=\"detail-panel\" hidden><button type=\"button\" aria-label=\"close\">×</button>"
                     "<strong class=\"where\"></strong><pre></pre></div>\n<script>") +
         html_template::kGridScript + html_template::kMarkReady + "</script>\n</body>\n</html>\n";
}

}  // namespace

std::string test_dir_name(const std::string& id) {
  std::string s;
  for (char c : id) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return s;
}

std::string grid_page_path(const std::string& id) { return "reports/" + test_dir_name(id) + "/grid.html"; }

std::string grid_html(const std::string& test_id, const ModelReport& r) {
  const ReportSummary s = summarize(r);
  const std::vector<Executor> executors = grid_executors(r);
  std::string h = "<section class=\"grid\" id=\"" + detail::html_escape(detail::element_id("grid-", test_id)) + "\" data-id=\"" +
                  detail::html_escape(test_id) + "\">\n<p class=\"grid-summary\">" + detail::html_escape(r.model_name) + ": " +
                  std::to_string(s.total_layers) + " layers; recommended " + detail::html_escape(recommended_text(s)) + "; " +
                  std::to_string(s.critical_failures.size()) + " critical failures</p>\n";
  h += "<table class=\"layers\">\n<thead><tr><th>#</th><th>layer</th><th>op</th>";
  for (const Executor e : executors) h += std::string("<th>") + executor_name(e) + "</th>";
  h += "<th>recommended</th></tr></thead>\n<tbody>\n";
  for (const LayerReport& l : r.layers) {
    bool critical = false;
    for (const std::string& id : s.critical_failures) critical = critical || id == l.info.id;
    h += layer_row(test_id, l, executors, critical);
  }
  return h + "</tbody>\n</table>\n</section>\n";
}

void write_grid_page(const HtmlOut& out, const TestResult& r, const std::function<void(const HtmlOut&)>& write_grid) {
  out(page_head(r));
  write_grid(out);
  out(page_tail());
}

std::string grid_page(const TestResult& r, const ModelReport& report) {
  std::string h;
  write_grid_page([&](std::string_view piece) { h += piece; }, r,
                  [&](const HtmlOut& out) { out(grid_html(detail::test_of(r).id, report)); });
  return h;
}

}  // namespace torq::pipeline::matrix
