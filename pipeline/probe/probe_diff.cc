#include "pipeline/probe/probe_diff.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "pipeline/probe/envelope_predict.h"

namespace torq::pipeline::probe {

namespace {

// A run's (point, executor) pairs with their status.
struct DiffSide {
  const ProbeRow* row = nullptr;
  std::string status, message;
};
using DiffIndex = std::map<std::pair<std::string, std::string>, DiffSide>;

DiffIndex diff_index(const std::vector<ProbeRow>& rows) {
  DiffIndex idx;
  for (const ProbeRow& r : rows) {
    if (!r.invalid.empty() || r.outcomes.empty()) {
      idx[{r.point.id, ""}] = {&r, "invalid", r.invalid};
      continue;
    }
    for (const ProbeOutcome& o : r.outcomes)
      idx[{r.point.id, executor_name(o.executor)}] = {&r, o.infrastructure ? "infrastructure" : status_name(o.status),
                                                      o.error_message};
  }
  return idx;
}

DiffPoint diff_point(const std::string& executor, const DiffSide* a, const DiffSide* b) {
  const ProbeRow& r = *(a ? a : b)->row;
  DiffPoint p{r.point.id, r.point.op, r.point.dtype, r.point.params_text(), executor, "", "", "", ""};
  if (a) p.a_status = a->status, p.a_message = a->message;
  if (b) p.b_status = b->status, p.b_message = b->message;
  return p;
}

std::string diff_key(const std::vector<targets::TargetProfile>& profiles, const std::string& executor,
                     const ProbeRow& row) {
  auto it = std::find_if(profiles.begin(), profiles.end(),
                         [&](const targets::TargetProfile& p) { return p.name() == executor; });
  return it == profiles.end() ? "(no profile)" : refusing_key(*it, row.features);
}

std::string diff_line(const DiffPoint& p) {
  std::string s = "  " + p.point_id + " on " + (p.executor.empty() ? "-" : p.executor) + ": " +
                  (p.a_status.empty() ? "-" : p.a_status) + " -> " + (p.b_status.empty() ? "-" : p.b_status) +
                  " (" + p.params + ")";
  if (!p.b_message.empty() && p.b_message != p.a_message) s += ": " + p.b_message;
  return s + "\n";
}

nlohmann::json diff_point_json(const DiffPoint& p) {
  return {{"point_id", p.point_id}, {"op", p.op},         {"dtype", p.dtype},         {"params", p.params},
          {"executor", p.executor}, {"a_status", p.a_status}, {"b_status", p.b_status},
          {"a_message", p.a_message}, {"b_message", p.b_message}};
}

}  // namespace

ProbeDiff probe_diff(const std::vector<ProbeRow>& a, const std::vector<ProbeRow>& b,
                     const std::vector<targets::TargetProfile>& a_profiles) {
  const DiffIndex ia = diff_index(a), ib = diff_index(b);
  ProbeDiff d;
  for (const auto& [k, sa] : ia) {
    auto jt = ib.find(k);
    if (jt == ib.end()) {
      d.only_a.push_back(diff_point(k.second, &sa, nullptr));
      continue;
    }
    ++d.joined;
    if (sa.status == jt->second.status && (sa.status != "invalid" || sa.message == jt->second.message)) {
      ++d.unchanged;
      continue;
    }
    const std::string key = k.second.empty() ? "(invalid)" : diff_key(a_profiles, k.second, *sa.row);
    d.changed[key].push_back(diff_point(k.second, &sa, &jt->second));
  }
  for (const auto& [k, sb] : ib)
    if (!ia.count(k)) d.only_b.push_back(diff_point(k.second, nullptr, &sb));
  return d;
}

ProbeDiff probe_diff(const std::vector<ProbeRow>& a, const std::vector<ProbeRow>& b,
                     const std::vector<DerivedProfile>& a_profiles, const targets::OpCatalog& catalog) {
  std::vector<targets::TargetProfile> parsed;
  for (const DerivedProfile& p : a_profiles)
    parsed.push_back(targets::TargetProfile::parse(p.yaml, p.executor + ".yaml", catalog));
  return probe_diff(a, b, parsed);
}

std::string probe_diff_text(const ProbeDiff& d) {
  size_t changed = 0;
  for (const auto& [k, v] : d.changed) changed += v.size();
  std::string s = std::to_string(d.joined) + " points in both runs: " + std::to_string(changed) + " changed, " +
                  std::to_string(d.unchanged) + " unchanged; " + std::to_string(d.only_a.size()) + " only in A, " +
                  std::to_string(d.only_b.size()) + " only in B\n";
  for (const auto& [key, points] : d.changed) {
    s += "\n" + (key.empty() ? std::string("accepted by A's profile") : "refused by A's " + key) + " (" +
         std::to_string(points.size()) + "):\n";
    for (const DiffPoint& p : points) s += diff_line(p);
  }
  if (!d.only_a.empty()) s += "\nonly in A:\n";
  for (const DiffPoint& p : d.only_a) s += diff_line(p);
  if (!d.only_b.empty()) s += "\nonly in B:\n";
  for (const DiffPoint& p : d.only_b) s += diff_line(p);
  return s;
}

std::string probe_diff_json(const ProbeDiff& d) {
  nlohmann::json j = {{"joined", d.joined}, {"unchanged", d.unchanged}};
  nlohmann::json changed = nlohmann::json::object();
  for (const auto& [key, points] : d.changed) {
    nlohmann::json arr = nlohmann::json::array();
    for (const DiffPoint& p : points) arr.push_back(diff_point_json(p));
    changed[key] = arr;
  }
  j["changed"] = changed;
  for (const auto* side : {&d.only_a, &d.only_b}) {
    nlohmann::json arr = nlohmann::json::array();
    for (const DiffPoint& p : *side) arr.push_back(diff_point_json(p));
    j[side == &d.only_a ? "only_a" : "only_b"] = arr;
  }
  return j.dump(2) + "\n";
}

}  // namespace torq::pipeline::probe
