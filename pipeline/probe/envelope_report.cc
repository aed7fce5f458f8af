// envelope.md and envelope.html (envelope_report.h).
#include "pipeline/probe/envelope_report.h"

#include <cstdio>

#include "pipeline/base/html_escape.h"

namespace torq::pipeline::probe {

namespace {

std::string report_percent(int n, int of) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", of ? 100.0 * n / of : 100.0);
  return buf;
}

std::string report_fraction(int n, int of) {
  return std::to_string(n) + "/" + std::to_string(of) + " (" + report_percent(n, of) + ")";
}

std::string report_ids(const std::vector<std::string>& ids, const std::string& open, const std::string& close) {
  std::string s;
  for (const std::string& id : ids) s += (s.empty() ? "" : ", ") + open + id + close;
  return s.empty() ? "none" : s;
}

// A Markdown table cell: no pipe or line break may end it early.
std::string report_md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? "\\|" : c == '\n' ? " " : std::string(1, c);
  return out;
}

void report_md_envelope(std::string& md, const OpEnvelope& e) {
  md += "### " + e.op + " (" + e.group + ": ";
  for (size_t i = 0; i < e.dtypes.size(); ++i) md += (i ? ", " : "") + e.dtypes[i];
  md += ")\n\n" + e.sentence + "\n\nExplained: " + report_fraction(e.explained, e.points) + "\n\n";
  md += "| " + report_md_cell(e.table_param) + " | success | difference | error |\n|---|---:|---:|---:|\n";
  for (const ParamCount& c : e.table)
    md += "| " + report_md_cell(c.value) + " | " + std::to_string(c.success) + " | " + std::to_string(c.difference) + " | " +
          std::to_string(c.error) + " |\n";
  md += "\nResiduals: " + report_ids(e.residuals, "`", "`") + "\n";
  if (!e.failing_messages.empty()) {
    md += "\nFailing messages:\n";
    for (const auto& [m, n] : e.failing_messages) md += "- " + report_md_cell(m) + " (" + std::to_string(n) + ")\n";
  }
  md += "\n";
}

void report_html_envelope(std::string& h, const OpEnvelope& e) {
  using base::html_escape;
  std::string dts;
  for (size_t i = 0; i < e.dtypes.size(); ++i) dts += (i ? ", " : "") + e.dtypes[i];
  h += "<h3>" + html_escape(e.op + " (" + e.group + ": " + dts + ")") + "</h3>\n";
  h += "<p class=\"sentence\">" + html_escape(e.sentence) + "</p>\n";
  h += "<p>Explained: " + html_escape(report_fraction(e.explained, e.points)) + "</p>\n";
  h += "<table><tr><th>" + html_escape(e.table_param) + "</th><th>success</th><th>difference</th><th>error</th></tr>\n";
  for (const ParamCount& c : e.table)
    h += "<tr><td>" + html_escape(c.value) + "</td><td>" + std::to_string(c.success) + "</td><td>" +
         std::to_string(c.difference) + "</td><td>" + std::to_string(c.error) + "</td></tr>\n";
  h += "</table>\n<p>Residuals: ";
  std::vector<std::string> ids;
  for (const std::string& id : e.residuals) ids.push_back(html_escape(id));
  h += report_ids(ids, "<code>", "</code>") + "</p>\n";
  if (e.failing_messages.empty()) return;
  h += "<ul class=\"messages\">\n";
  for (const auto& [m, n] : e.failing_messages) h += "<li>" + html_escape(m) + " (" + std::to_string(n) + ")</li>\n";
  h += "</ul>\n";
}

std::string report_executor_summary(const DerivedProfile& d) {
  return "Points explained by the derived profile: " + report_fraction(d.explained, d.points) +
         "; float type " + base::dtype_name(d.float_type) +
         (d.base_name.empty() ? "" : "; chip, cost and unprobed ops from " + d.base_name) + ".";
}

}  // namespace

std::string envelope_md(const std::vector<DerivedProfile>& profiles) {
  std::string md = "# Probe envelope\n\n";
  for (const DerivedProfile& d : profiles) {
    md += "## " + d.executor + "\n\n" + report_executor_summary(d) + "\n\n";
    if (!d.excluded.empty())
      md += "Not learned from (invalid or infrastructure failure): " + report_ids(d.excluded, "`", "`") + "\n\n";
    for (const OpEnvelope& e : d.envelopes) report_md_envelope(md, e);
  }
  return md;
}

std::string envelope_html(const std::vector<DerivedProfile>& profiles) {
  using base::html_escape;
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Probe envelope</title>\n"
      "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
      "td,th{border:1px solid #bbb;padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
      ".sentence{font-weight:bold}</style></head><body>\n<h1>Probe envelope</h1>\n";
  for (const DerivedProfile& d : profiles) {
    h += "<h2>" + html_escape(d.executor) + "</h2>\n<p>" + html_escape(report_executor_summary(d)) + "</p>\n";
    if (!d.excluded.empty()) {
      std::vector<std::string> ids;
      for (const std::string& id : d.excluded) ids.push_back(html_escape(id));
      h += "<p>Not learned from (invalid or infrastructure failure): " + report_ids(ids, "<code>", "</code>") +
           "</p>\n";
    }
    for (const OpEnvelope& e : d.envelopes) report_html_envelope(h, e);
  }
  return h + "</body></html>\n";
}

}  // namespace torq::pipeline::probe
