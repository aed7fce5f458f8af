// The "Op support" section of the matrix HTML report (matrix_report.h): the
// op-support matrix (op_matrix.h), one row per op in the matrix's order.
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

// "status-success" for a uniform cell, "status-mixed" for a mix, "status-absent" when untested.
std::string status_class(const OpCell* c) {
  if (!c || c->counts.empty()) return "status-absent";
  return c->counts.size() == 1 ? std::string("status-") + status_name(c->counts.begin()->first) : "status-mixed";
}

std::string row_html(const OpRow& r, const std::vector<Executor>& executors) {
  std::string h = "<tr class=\"op\" data-op-type=\"" + html_escape(r.op_type) + "\"><td>" + html_escape(r.target) +
                  "</td><td class=\"op\">" + html_escape(r.op) + "</td>";
  for (const Executor e : executors) {
    const auto it = r.executors.find(e);
    const OpCell* c = it == r.executors.end() ? nullptr : &it->second;
    h += "<td class=\"opcell " + status_class(c) + "\" data-executor=\"" + executor_name(e) + "\"" +
         (c && !c->error.empty() ? " title=\"" + html_escape(c->error) + "\"" : "") + ">" +
         html_escape(c ? cell_text(*c) : "-") + "</td>";
  }
  h += "<td class=\"num\">" + std::to_string(r.occurrences) + "</td><td>" + html_escape(names(r.models)) + "</td>";
  h += "<td class=\"num\">" + std::to_string(r.blocked.size()) + "</td><td class=\"num\">" +
       std::to_string(r.falls_back.size()) + "</td></tr>\n";
  return h;
}

}  // namespace

std::string ops_html(const OpMatrix& m) {
  if (m.rows.empty()) return "";
  std::string h =
      "<h2>Op support</h2>\n<p class=\"legend\">One row per unique op (type, attributes, input dtypes "
      "and shapes) and target; <b>blocks</b>: models where no executor runs it, <b>falls back</b>: "
      "models where the first executor does not. Hover a cell for the first error. Also in ops.csv.</p>\n"
      "<div class=\"scroll\">\n<table id=\"ops\">\n<thead><tr><th>target</th><th>op</th>";
  for (const Executor e : m.executors) h += std::string("<th>") + executor_name(e) + "</th>";
  h += "<th>occurrences</th><th>models</th><th>blocks</th><th>falls back</th></tr></thead>\n<tbody>\n";
  for (const OpRow& r : m.rows) h += row_html(r, m.executors);
  return h + "</tbody>\n</table>\n</div>\n";
}

}  // namespace torq::pipeline::matrix::detail
