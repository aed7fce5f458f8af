// Changes between two runs' records (run_diff.h): per test outcome, drift
// and per-layer changes.
#include "pipeline/store/run_diff.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace torq::pipeline::history {

namespace {

std::string figure(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string percent(double from, double to) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.0f%%", 100.0 * (to - from) / from);
  return b;
}

bool known(double v) { return std::isfinite(v) && v != -1; }

bool pcc_drifted(double a, double b, const DiffThresholds& th) {
  return known(a) && known(b) && std::fabs(b - a) > th.pcc;
}

bool time_drifted(double a, double b, const DiffThresholds& th) {
  return known(a) && known(b) && a > 0 && std::fabs(b - a) > th.time_floor_ms && std::fabs(b - a) / a > th.time;
}

std::string change_of(const TestRecord& a, const TestRecord& b) {
  const bool fa = a.outcome == "failed", fb = b.outcome == "failed";
  if (!fa && fb) return "new failure";
  if (fa && (b.outcome == "passed" || b.outcome == "xpassed")) return "fixed";
  if (fa && fb) return "still failing";
  return a.outcome == b.outcome ? "unchanged" : "outcome";
}

std::string rec_name(const LayerRecord& l) { return l.recommended ? executor_name(*l.recommended) : "none"; }

const ExecRecord* on(const LayerRecord& l, std::optional<Executor> e) {
  if (!e) return nullptr;
  const auto it = l.executors.find(*e);
  return it == l.executors.end() ? nullptr : &it->second;
}

void status_changes(const LayerRecord& a, const LayerRecord& b, std::vector<LayerChange>* out) {
  for (const Executor e : kExecutorPriority) {
    const ExecRecord* xa = on(a, e);
    const ExecRecord* xb = on(b, e);
    if (!xa && !xb) continue;
    const std::string from = xa ? status_name(xa->status) : "-", to = xb ? status_name(xb->status) : "-";
    if (from != to)
      out->push_back({b.id, "status", executor_name(e), from, to, xb && xb->status == Status::kError ? xb->error : ""});
  }
}

void placement_changes(const LayerRecord& a, const LayerRecord& b, const DiffThresholds& th,
                       std::vector<LayerChange>* out) {
  if (a.recommended != b.recommended) out->push_back({b.id, "recommended", "", rec_name(a), rec_name(b), ""});
  const ExecRecord* ra = on(a, a.recommended);
  const ExecRecord* rb = on(b, b.recommended);
  if (!ra || !rb) return;
  if (a.recommended == b.recommended && pcc_drifted(ra->pcc, rb->pcc, th))
    out->push_back({b.id, "pcc", rec_name(b), figure(ra->pcc), figure(rb->pcc), ""});
  if (time_drifted(ra->ms, rb->ms, th))
    out->push_back(
        {b.id, "time", rec_name(b), figure(ra->ms) + " ms", figure(rb->ms) + " ms", percent(ra->ms, rb->ms)});
}

std::vector<LayerChange> layer_changes(const TestRecord& a, const TestRecord& b, const DiffThresholds& th) {
  std::map<std::string, const LayerRecord*> in_a;
  for (const auto& l : a.layers) in_a[l.id] = &l;
  std::vector<LayerChange> out;
  std::set<std::string> seen;
  for (const auto& l : b.layers) {
    seen.insert(l.id);
    const auto it = in_a.find(l.id);
    if (it == in_a.end()) {
      out.push_back({l.id, "added", "", "", "", l.op});
      continue;
    }
    status_changes(*it->second, l, &out);
    placement_changes(*it->second, l, th, &out);
  }
  for (const auto& l : a.layers)
    if (!seen.count(l.id)) out.push_back({l.id, "removed", "", "", "", l.op});
  return out;
}

}  // namespace

bool TestChange::changed() const {
  return (change != "unchanged" && change != "still failing" && change != "not run") || pcc_drift || time_drift ||
         !layers.empty();
}

TestChange diff_test(const TestRecord* a, const TestRecord& b, const DiffThresholds& th) {
  TestChange c;
  c.id = b.id;
  c.outcome_b = b.outcome;
  c.bringup_b = b.bringup;
  c.pcc_b = b.pcc;
  c.ms_b = b.device_ms;
  if (!a) {
    c.change = "new test";
    return c;
  }
  c.change = change_of(*a, b);
  c.outcome_a = a->outcome;
  c.bringup_a = a->bringup;
  c.pcc_a = a->pcc;
  c.ms_a = a->device_ms;
  c.pcc_drift = pcc_drifted(a->pcc, b.pcc, th);
  c.time_drift = time_drifted(a->device_ms, b.device_ms, th);
  c.layers = layer_changes(*a, b, th);
  return c;
}

std::string since_text(const TestChange& c) {
  std::vector<std::string> parts;
  if (c.change == "outcome")
    parts.push_back(c.outcome_a + " -> " + c.outcome_b);
  else if (c.change != "unchanged")
    parts.push_back(c.change);
  char b[64];
  if (c.pcc_drift) {
    std::snprintf(b, sizeof b, "pcc drift %+.4g", c.pcc_b - c.pcc_a);
    parts.push_back(b);
  }
  if (c.time_drift) parts.push_back("time drift " + percent(c.ms_a, c.ms_b));
  std::set<std::string> layers;
  for (const auto& l : c.layers) layers.insert(l.layer);
  if (!layers.empty())
    parts.push_back(std::to_string(layers.size()) + (layers.size() == 1 ? " layer changed" : " layers changed"));
  if (parts.empty()) return "unchanged";
  std::string s = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) s += "; " + parts[i];
  return s;
}

RunDiff diff_runs(const RunRecord& a, const RunRecord& b, const DiffThresholds& th) {
  RunDiff d{a, b, th, {}};
  std::map<std::string, const TestRecord*> in_a;
  for (const auto& t : a.tests) in_a[t.id] = &t;
  std::set<std::string> in_b;
  for (const auto& t : b.tests) {
    in_b.insert(t.id);
    const auto it = in_a.find(t.id);
    d.tests.push_back(diff_test(it == in_a.end() ? nullptr : it->second, t, th));
  }
  for (const auto& t : a.tests) {
    if (in_b.count(t.id)) continue;
    TestChange c;
    c.id = t.id;
    c.change = "not run";
    c.outcome_a = t.outcome;
    c.bringup_a = t.bringup;
    c.pcc_a = t.pcc;
    c.ms_a = t.device_ms;
    d.tests.push_back(c);
  }
  return d;
}

}  // namespace torq::pipeline::history
