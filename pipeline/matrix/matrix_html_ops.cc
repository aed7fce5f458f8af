// The "Op support" section of report.html (matrix_report.h): the
// op-support matrix (op_matrix.h) as a compact grid, one row per op in the
// matrix's order, a cell per executor coloured by status with a one-glyph
// mark; the full status and first error are on hover, the model lists on
// the counts' hover (the table stays narrow however many models). The ops
// that block or fall back show open, the others behind a click.
#include <set>
#include <string>

#include "pipeline/matrix/matrix_internal.h"

namespace torq::pipeline::matrix::detail {

namespace {

std::string names(const std::set<std::string>& items) {
  std::string s;
  for (const auto& x : items) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "-" : s;
}

// "success" for a uniform cell, "mixed" for a mix, "absent" when untested.
std::string status_of(const OpCell* c) {
  if (!c || c->counts.empty()) return "absent";
  return c->counts.size() == 1 ? status_name(c->counts.begin()->first) : "mixed";
}

const char* glyph(const std::string& status) {
  if (status == "success") return "✓";
  if (status == "difference") return "≈";
  if (status == "error") return "✗";
  if (status == "mixed") return "±";
  return "·";
}

std::string op_cell(const OpCell* c, Executor e) {
  const std::string status = status_of(c);
  std::string tip = std::string(executor_name(e)) + ": " + (c ? cell_text(*c) : "not tested");
  const std::string label = tip;
  if (c && !c->error.empty()) tip += "\nfirst error: " + c->error;
  return "<td class=\"opcell status-" + status + "\" data-executor=\"" + executor_name(e) + "\" title=\"" +
         html_escape(tip) + "\" aria-label=\"" + html_escape(label) + "\">" + glyph(status) + "</td>";
}

// A count whose title lists what it counts.
std::string count_td(const std::set<std::string>& items) {
  return "<td class=\"num\" title=\"" + html_escape(names(items)) + "\">" + std::to_string(items.size()) + "</td>";
}

std::string row_html(const OpRow& r, const std::vector<Executor>& executors) {
  std::string h = "<tr class=\"op\" data-op-type=\"" + html_escape(r.op_type) + "\"><td>" + html_escape(r.target) +
                  "</td><td class=\"op\">" + html_escape(r.op) + "</td>";
  for (const Executor e : executors) {
    const auto it = r.executors.find(e);
    h += op_cell(it == r.executors.end() ? nullptr : &it->second, e);
  }
  h += "<td class=\"num\">" + std::to_string(r.occurrences) + "</td>" + count_td(r.models) + count_td(r.blocked) +
       count_td(r.falls_back) + "</tr>\n";
  return h;
}

// Column widths: the op's text takes what the fixed columns leave.
std::string colgroup(size_t executors) {
  std::string h = "<colgroup><col style=\"width:6em\"><col>";
  for (size_t i = 0; i < executors; ++i) h += "<col style=\"width:4em\">";
  return h + "<col style=\"width:8.5em\"><col style=\"width:5em\"><col style=\"width:4.5em\">"
             "<col style=\"width:6em\"></colgroup>\n";
}

// A table of rows [from, to) of the matrix, its columns as wide in every table.
std::string table_html(const OpMatrix& m, size_t from, size_t to) {
  std::string h =
      "<table class=\"ops fit\">\n" + colgroup(m.executors.size()) + "<thead><tr><th>target</th><th>op</th>";
  for (const Executor e : m.executors) h += std::string("<th>") + executor_name(e) + "</th>";
  h += "<th>occurrences</th><th>models</th><th>blocks</th><th>falls back</th></tr></thead>\n<tbody>\n";
  for (size_t i = from; i < to; ++i) h += row_html(m.rows[i], m.executors);
  return h + "</tbody>\n</table>\n";
}

// The rows report.html shows: those that block or fall back somewhere
// (they sort first), at most kReportRows. The whole grid is ops.html beside
// it: a spec's thousands of ops (5,082 in the nightly, 3.4 MB of rows)
// would otherwise make the report slow to open (issue 33).
size_t report_rows(const OpMatrix& m) {
  constexpr size_t kReportRows = 100;
  size_t n = 0;
  while (n < m.rows.size() && n < kReportRows && (!m.rows[n].blocked.empty() || !m.rows[n].falls_back.empty())) ++n;
  return n;
}

std::string legend() {
  return "<p class=\"legend\">One row per unique op (type, attributes, input dtypes and shapes) and target, a cell "
         "per executor: <span class=\"status-success\">✓ success</span><span class=\"status-difference\">≈ "
         "difference</span><span class=\"status-error\">✗ error</span><span class=\"status-mixed\">± mixed</span>"
         "<span class=\"status-absent\">· not tested</span>(hover for the counts and the first error). "
         "<b>models</b>: models using it; <b>blocks</b>: models where no executor runs it; <b>falls back</b>: "
         "models where the first executor does not (hover a count for the models).</p>\n";
}

}  // namespace

std::string ops_html(const OpMatrix& m) {
  if (m.rows.empty()) return "";
  const size_t shown = report_rows(m);
  std::string h = "<section id=\"ops\">\n<h2>Op support</h2>\n" + legend();
  if (shown > 0) h += table_html(m, 0, shown);
  h += std::string("<p class=\"more-ops\">") +
       (shown > 0 ? "The ops above block a model or fall back; all " : "No op blocks a model or falls back; all ") +
       std::to_string(m.rows.size()) + " ops: <a href=\"" + kOpsPage + "\">" + kOpsPage +
       "</a> (the whole grid), ops.csv.</p>\n";
  return h + "</section>\n";
}

std::string ops_grid_html(const OpMatrix& m) {
  return "<section id=\"ops\">\n<h2>Op support: all " + std::to_string(m.rows.size()) + " ops</h2>\n" + legend() +
         table_html(m, 0, m.rows.size()) + "</section>\n";
}

}  // namespace torq::pipeline::matrix::detail
