// The two forms of a run diff (run_diff.h): text for people, JSON for tools.
#include <cmath>
#include <cstdio>
#include <map>

#include "pipeline/store/run_diff.h"

namespace torq::pipeline::history {

namespace {

using nlohmann::json;

constexpr const char* kChanges[] = {"new failure", "fixed",    "still failing", "outcome",
                                    "unchanged",   "new test", "not run"};

std::string figure_or_dash(double v) {
  if (!std::isfinite(v) || v == -1) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

json number(double v) { return std::isfinite(v) && v != -1 ? json(v) : json(nullptr); }
json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

std::string run_title(const RunRecord& r) {
  return "run " + std::to_string(r.seq) + " (" + (r.started_utc.empty() ? "-" : r.started_utc) + ", tests " +
         std::to_string(r.tests.size()) + (r.last_failed ? ", --last-failed" : "") + ")";
}

std::string outcome_note(const TestChange& c) {
  if (c.outcome_a.empty()) return " (" + c.outcome_b + ")";
  std::string s = c.outcome_a == c.outcome_b ? c.outcome_b : c.outcome_a + " -> " + c.outcome_b;
  if (c.bringup_a != c.bringup_b) s += ", bringup " + c.bringup_a + " -> " + c.bringup_b;
  return " (" + s + ")";
}

std::string layer_line(const LayerChange& l) {
  std::string s = "  layer " + l.layer + ": ";
  if (l.kind == "status")
    s += l.executor + " " + l.from + " -> " + l.to;
  else if (l.kind == "recommended")
    s += "recommended " + l.from + " -> " + l.to;
  else if (l.kind == "pcc")
    s += "pcc on " + l.executor + " " + l.from + " -> " + l.to;
  else if (l.kind == "time")
    s += "time on " + l.executor + " " + l.from + " -> " + l.to;
  else
    return s + l.kind + " (" + l.detail + ")\n";
  return s + (l.detail.empty() ? "" : " (" + l.detail + ")") + "\n";
}

std::string test_lines(const TestChange& c) {
  std::string s = c.id + ": " + since_text(c) + outcome_note(c) + "\n";
  if (c.pcc_drift) s += "  pcc " + figure_or_dash(c.pcc_a) + " -> " + figure_or_dash(c.pcc_b) + "\n";
  if (c.time_drift) s += "  device time " + figure_or_dash(c.ms_a) + " ms -> " + figure_or_dash(c.ms_b) + " ms\n";
  for (const auto& l : c.layers) s += layer_line(l);
  return s;
}

std::map<std::string, int> counts(const RunDiff& d) {
  std::map<std::string, int> n;
  for (const char* k : kChanges) n[k] = 0;
  n["pcc drift"] = n["time drift"] = n["layer changes"] = 0;
  for (const auto& c : d.tests) {
    ++n[c.change];
    n["pcc drift"] += c.pcc_drift;
    n["time drift"] += c.time_drift;
    n["layer changes"] += !c.layers.empty();
  }
  return n;
}

json side(const RunRecord& r) {
  return {{"seq", r.seq},
          {"run_id", r.run_id},
          {"started_utc", r.started_utc},
          {"tests", r.tests.size()},
          {"last_failed", r.last_failed}};
}

json test_json(const TestChange& c) {
  json layers = json::array();
  for (const auto& l : c.layers)
    layers.push_back({{"layer", l.layer},
                      {"kind", l.kind},
                      {"executor", text_or_null(l.executor)},
                      {"from", l.from},
                      {"to", l.to},
                      {"detail", l.detail}});
  return {{"id", c.id},
          {"change", c.change},
          {"since", since_text(c)},
          {"outcome", {text_or_null(c.outcome_a), text_or_null(c.outcome_b)}},
          {"bringup", {text_or_null(c.bringup_a), text_or_null(c.bringup_b)}},
          {"pcc", {number(c.pcc_a), number(c.pcc_b)}},
          {"pcc_drift", c.pcc_drift},
          {"device_ms", {number(c.ms_a), number(c.ms_b)}},
          {"time_drift", c.time_drift},
          {"layers", layers}};
}

}  // namespace

std::string diff_text(const RunDiff& d) {
  char th[160];
  std::snprintf(th, sizeof th, "thresholds: pcc drift > %g, time drift > %g%% and > %g ms\n", d.thresholds.pcc,
                100 * d.thresholds.time, d.thresholds.time_floor_ms);
  std::string s = "diff of " + d.b.spec + ": " + run_title(d.a) + " -> " + run_title(d.b) + "\n" + th;
  std::string not_run;
  bool any = false;
  for (const auto& c : d.tests) {
    if (c.change == "not run") not_run += (not_run.empty() ? "" : ", ") + c.id;
    if (!c.changed()) continue;
    s += test_lines(c);
    any = true;
  }
  if (!any) s += "no changes\n";
  if (!not_run.empty()) s += "not in run " + std::to_string(d.b.seq) + ": " + not_run + "\n";
  auto n = counts(d);
  s += "summary:";
  for (const char* k : kChanges) s += std::string(" ") + k + " " + std::to_string(n[k]) + ",";
  s.back() = ';';
  s += " with pcc drift " + std::to_string(n["pcc drift"]) + ", time drift " + std::to_string(n["time drift"]) +
       ", layer changes " + std::to_string(n["layer changes"]) + "\n";
  return s;
}

json diff_json(const RunDiff& d) {
  json tests = json::array(), unchanged = json::array(), not_run = json::array();
  for (const auto& c : d.tests) {
    if (c.changed())
      tests.push_back(test_json(c));
    else
      (c.change == "not run" ? not_run : unchanged).push_back(c.id);
  }
  return {{"spec", d.b.spec},
          {"a", side(d.a)},
          {"b", side(d.b)},
          {"thresholds",
           {{"pcc", d.thresholds.pcc}, {"time", d.thresholds.time}, {"time_floor_ms", d.thresholds.time_floor_ms}}},
          {"summary", counts(d)},
          {"tests", tests},
          {"unchanged", unchanged},
          {"not_run", not_run}};
}

}  // namespace torq::pipeline::history
