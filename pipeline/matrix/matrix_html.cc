// The self-contained HTML report of a matrix run (matrix_report.h): run info,
// the filterable matrix of outcomes and, per model test, the layer ×
// executor grid. Every piece of text from the run is HTML-escaped; the
// stylesheet and script are inline (matrix_html_template.h).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>

#include "pipeline/matrix/matrix_html_template.h"
#include "pipeline/matrix/matrix_internal.h"
#include "pipeline/matrix/matrix_report.h"
#include "pipeline/report/report.h"

namespace torq::pipeline::matrix {
namespace {

constexpr Outcome kOutcomes[] = {Outcome::kPassed, Outcome::kFailed, Outcome::kXfailed, Outcome::kXpassed,
                                 Outcome::kSkipped};

std::string esc(const std::string& s) { return detail::html_escape(s); }

std::string printf_str(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A metric: "%.6g", or `unknown` when NaN (or negative, for figures that use
// -1 as "unknown").
std::string metric(double v, bool negative_unknown, const char* unknown = "-") {
  if (std::isnan(v) || (negative_unknown && v < 0)) return unknown;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return printf_str("%.6g", v);
}

// An element id: the text with whitespace replaced (ids may not hold any).
std::string element_id(const std::string& prefix, const std::string& id) {
  std::string out = prefix;
  for (const char c : id) out += (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') ? '_' : c;
  return out;
}

// Percent-encodes everything but unreserved characters, for a URL fragment.
std::string fragment(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// ------------------------------------------------------------ run header

std::string header_html(const std::vector<TestResult>& results, const RunInfo& info) {
  std::string h = "<header>\n<h1>torq matrix report</h1>\n<dl class=\"run\">\n";
  auto row = [&h](const std::string& name, const std::string& value) {
    h += "<dt>" + esc(name) + "</dt><dd>" + esc(value.empty() ? "-" : value) + "</dd>\n";
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

std::string td(const std::string& cls, const std::string& text) {
  return (cls.empty() ? "<td>" : "<td class=\"" + cls + "\">") + esc(text) + "</td>";
}

// An enum name (EXPECTED_PASSING) that may wrap after its underscores.
std::string enum_td(const std::string& name) {
  std::string h = "<td class=\"enum\">";
  for (const char c : name) h += c == '_' ? std::string("_<wbr>") : esc(std::string(1, c));
  return h + "</td>";
}

std::string matrix_html(const std::vector<TestResult>& results, const std::function<bool(const std::string&)>& has_grid) {
  std::string h = "<h2>Tests</h2>\n<div class=\"scroll\">\n<table id=\"matrix\">\n<thead><tr>";
  for (const char* col : {"ID", "model", "variant", "target", "mode", "outcome", "since previous run", "bringup",
                          "status", "PCC", "PCC vs fp32 original / vs converted",
                          "required PCC", "layers", "critical failures", "executors", "wall s", "message"})
    h += std::string("<th>") + col + "</th>";
  h += "</tr></thead>\n<tbody>\n";
  for (const TestResult& r : results) {
    const TestCase& t = detail::test_of(r);
    const std::string outcome = outcome_name(r.outcome);
    h += "<tr class=\"test outcome-" + outcome + "\" data-outcome=\"" + outcome + "\" data-id=\"" + esc(t.id) +
         "\" id=\"" + esc(element_id("test-", t.id)) + "\">";
    if (has_grid(t.id))
      h += "<td class=\"id\"><a href=\"#" + esc(fragment(element_id("grid-", t.id))) + "\">" + esc(t.id) + "</a></td>";
    else
      h += td("id", t.id);
    h += td("", detail::model_name(t)) + td("", t.variant.name) + td("", t.target.name) + td("", mode_name(t.mode));
    h += "<td><span class=\"badge\">" + outcome + "</span></td>";
    h += td("since", r.since_previous.empty() ? "-" : r.since_previous);
    h += enum_td(bringup_name(r.bringup)) + enum_td(test_status_name(t.config.status));
    const bool below = r.run.pcc >= 0 && t.config.assert_pcc && r.run.pcc < t.config.required_pcc;
    h += td(below ? "num below" : "num", metric(r.run.pcc, true));
    h += td("num", r.run.e2e ? metric(r.run.e2e_pcc, true) + " / " + metric(r.run.converted_pcc, true) +
                                   " (judged: " + r.run.judged_against + ")"
                             : "-");
    h += td("num", metric(t.config.required_pcc, true));
    h += td("num", std::to_string(r.run.layers)) + td("num", std::to_string(r.run.critical_failures));
    h += td("", detail::distribution_text(r.run.executor_distribution, ", "));
    h += td("num", printf_str("%.2f", r.run.wall_s));
    std::string message = r.message;
    if (message.empty()) message = r.run.message;
    h += td("msg", message);
    h += "</tr>\n";
  }
  h += "</tbody>\n</table>\n</div>\n";
  return h;
}

// ------------------------------------------------------------ layer grids

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

// The "Host Profile Overview" of each test that collected profiles.
std::string profiles_html(const std::vector<TestResult>& results) {
  std::string h;
  for (const TestResult& r : results) {
    if (r.run.profile_overview.empty()) continue;
    h += "<details class=\"profile\" data-id=\"" + esc(r.test->id) + "\"><summary>profile: " + esc(r.test->id) +
         " (trace " + esc(r.run.profile_trace) + ")</summary><pre>" + esc(r.run.profile_overview) + "</pre></details>\n";
  }
  return h.empty() ? h : "<section id=\"profiles\">\n<h2>Host Profile Overview</h2>\n" + h + "</section>\n";
}

}  // namespace

std::string grid_html(const std::string& test_id, const ModelReport& r) {
  const ReportSummary s = summarize(r);
  const std::vector<Executor> executors = grid_executors(r);
  std::string recommended;
  for (const Executor e : kExecutorPriority) {
    const int n = s.executors[static_cast<int>(e)].recommended;
    if (n > 0) recommended += std::string(recommended.empty() ? "" : ", ") + executor_name(e) + " " + std::to_string(n);
  }
  if (s.recommended_none > 0)
    recommended += std::string(recommended.empty() ? "" : ", ") + "none " + std::to_string(s.recommended_none);

  std::string h = "<details class=\"grid\" id=\"" + esc(element_id("grid-", test_id)) + "\" data-id=\"" + esc(test_id) +
                  "\">\n<summary>" + esc(test_id) + " — " + esc(r.model_name) + ": " +
                  std::to_string(s.total_layers) + " layers; recommended " + esc(recommended.empty() ? "-" : recommended) +
                  "; " + std::to_string(s.critical_failures.size()) + " critical failures</summary>\n";
  h += "<table class=\"layers\">\n<thead><tr><th>#</th><th>layer</th><th>op</th>";
  for (const Executor e : executors) h += std::string("<th>") + executor_name(e) + "</th>";
  h += "<th>recommended</th></tr></thead>\n<tbody>\n";
  for (const LayerReport& l : r.layers) {
    bool critical = false;
    for (const std::string& id : s.critical_failures) critical = critical || id == l.info.id;
    h += std::string("<tr class=\"layer") + (critical ? " critical" : "") + "\" data-layer=\"" + esc(l.info.id) + "\">";
    h += td("num", std::to_string(l.info.index));
    std::string layer_text = esc(l.info.id);
    if (!l.dedup_of.empty()) layer_text += " <small>(dedup of " + esc(l.dedup_of) + ")</small>";
    h += "<td class=\"layer\">" + layer_text + "</td>" + td("", l.info.op_type);
    for (const Executor e : executors) {
      const auto it = l.results.find(e);
      const std::string common = " data-executor=\"" + std::string(executor_name(e)) + "\" data-test=\"" + esc(test_id) +
                                 "\" data-layer=\"" + esc(l.info.id) + "\"";
      if (it == l.results.end()) {
        h += "<td class=\"cell status-absent\"" + common + " title=\"" + executor_name(e) + ": not tested\">–</td>";
        continue;
      }
      const bool rec = l.recommended == e;
      const std::string status = status_name(it->second.status);
      h += "<td class=\"cell status-" + status + (rec ? " recommended" : "") + "\"" + common + " title=\"" +
           esc(cell_title(it->second, rec)) + "\">" + (rec ? "<span class=\"star\">★</span> " : "") + status + "</td>";
    }
    h += td("", l.recommended ? executor_name(*l.recommended) : "-");
    h += "</tr>\n";
  }
  h += "</tbody>\n</table>\n</details>\n";
  return h;
}

namespace {

// The grids section: its heading and legend, then each test's grid.
void write_grids_html(const HtmlOut& out, const std::vector<TestResult>& results,
                      const std::function<bool(const std::string&)>& has_grid,
                      const std::function<void(const std::string&, const HtmlOut&)>& write_grid) {
  bool any = false;
  for (const TestResult& r : results) any = any || has_grid(detail::test_of(r).id);
  if (!any) return;
  out("<h2>Layer × executor grids</h2>\n<p class=\"legend\">"
      "<span class=\"status-success\">success</span><span class=\"status-difference\">difference</span>"
      "<span class=\"status-error\">error</span><span class=\"status-absent\">not tested</span>"
      "★ recommended executor; hover a cell for its metrics, click to pin them. To hand a result to a "
      "compiler engineer: <code>torq-gen-config repro --model M --output-dir D LAYER --executor E</code> "
      "(with the test's variant flags) writes a folder whose <code>run.sh</code> reproduces it.</p>\n");
  for (const TestResult& r : results)
    if (const std::string& id = detail::test_of(r).id; has_grid(id)) write_grid(id, out);
}

}  // namespace

namespace detail {

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace detail

void write_html_report(const HtmlOut& out, const std::vector<TestResult>& results,
                       const std::function<bool(const std::string&)>& has_grid,
                       const std::function<void(const std::string&, const HtmlOut&)>& write_grid,
                       const RunInfo& info, const OpMatrix* ops) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<title>torq matrix " + esc(info.run_id) + "</title>\n<style>" + html_template::kStyle + "</style>\n</head>\n";
  h += "<body>\n" + header_html(results, info) + controls_html() + matrix_html(results, has_grid);
  out(h);
  write_grids_html(out, results, has_grid, write_grid);
  h = (ops ? detail::ops_html(*ops) : "") + profiles_html(results);
  h += "<div id=\"detail-panel\" hidden><button type=\"button\" aria-label=\"close\">×</button>"
       "<strong class=\"where\"></strong><pre></pre></div>\n";
  h += std::string("<script>") + html_template::kScript + "</script>\n</body>\n</html>\n";
  out(h);
}

std::string html_report(const std::vector<TestResult>& results, const std::map<std::string, ModelReport>& reports,
                        const RunInfo& info, const OpMatrix* ops) {
  std::string h;
  write_html_report([&](std::string_view piece) { h += piece; }, results,
                    [&](const std::string& id) { return reports.count(id) > 0; },
                    [&](const std::string& id, const HtmlOut& out) { out(grid_html(id, reports.at(id))); }, info,
                    ops);
  return h;
}

}  // namespace torq::pipeline::matrix
