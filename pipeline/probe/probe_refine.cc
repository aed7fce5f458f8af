#include "pipeline/probe/probe_refine.h"

#include <cmath>
#include <map>
#include <set>

#include "pipeline/probe/probe_model.h"
#include "pipeline/probe/probe_spec.h"

namespace torq::pipeline::probe {

namespace {

// The parameter a bound key moves.
std::string param_of(const std::string& key) {
  if (key == "max_kernel" || key == "min_kernel") return "kernel";
  if (key == "max_stride") return "stride";
  if (key == "max_dilation") return "dilation";
  if (key == "min_spatial") return "spatial";
  return "";
}

bool is_elements(const std::string& key) {
  return key == "max_input_elements" || key == "max_strided_input_elements";
}

// `p` with parameter `name` set to `value` (its id recomputed); nullopt when
// the point has no such parameter.
std::optional<ProbePoint> with_param(const ProbePoint& p, const std::string& name, int64_t value) {
  ProbePoint q = p;
  bool found = false;
  for (auto& [k, v] : q.params)
    if (k == name) v = std::to_string(value), found = true;
  if (!found) return std::nullopt;
  q.id = point_id(q.op, q.dtype, q.params, q.seed);
  return q;
}

int64_t param(const ProbePoint& p, const std::string& name) {
  for (const auto& [k, v] : p.params)
    if (k == name) return std::stoll(v);
  return -1;
}

// Up to n of `values`, spread evenly over them (both ends included).
std::vector<int64_t> spread(const std::vector<int64_t>& values, size_t n) {
  if (values.size() <= n) return values;
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(values[i * (values.size() - 1) / (n - 1)]);
  return out;
}

// Integer values strictly between a bound's running value and its failing one.
std::vector<ProbePoint> grid_gap(const ProbePoint& at, const LearnedKey& k, size_t per_gap) {
  const std::string name = param_of(k.key);
  if (name.empty() || param(at, name) != k.gap_run) return {};
  const int64_t lo = std::min(k.gap_run, k.gap_fail), hi = std::max(k.gap_run, k.gap_fail);
  std::vector<int64_t> values;
  for (int64_t v = lo + 1; v < hi && values.size() < 4096; ++v) values.push_back(v);
  std::vector<ProbePoint> out;
  for (int64_t v : spread(values, per_gap))
    if (auto q = with_param(at, name, v)) out.push_back(*q);
  return out;
}

// Points whose input 0 has an element count inside (gap_run, gap_fail):
// the running point with its spatial size moved up, or its channels, spread
// evenly over the counts they reach.
std::vector<ProbePoint> element_gap(const ProbePoint& at, const LearnedKey& k, size_t per_gap) {
  std::map<int64_t, ProbePoint> inside;  // by element count
  for (const std::string name : {"spatial", "channels"}) {
    const int64_t from = param(at, name);
    if (from < 1) continue;
    for (int64_t v = from + 1; v <= from * 8 && inside.size() < 512; ++v) {
      auto q = with_param(at, name, v);
      if (!q) break;
      std::string invalid;
      const PointFeatures f = point_features(*q, &invalid);
      if (!invalid.empty()) continue;
      const int64_t n = f.numel();
      if (n >= k.gap_fail) break;
      if (n > k.gap_run) inside.emplace(n, *q);
    }
  }
  std::vector<int64_t> counts;
  for (const auto& [n, q] : inside) counts.push_back(n);
  std::vector<ProbePoint> out;
  for (int64_t n : spread(counts, per_gap)) out.push_back(inside.at(n));
  return out;
}

void refine_rule(const LearnedRule& rule, const std::map<std::string, const ProbeRow*>& by_id, size_t per_gap,
                 std::set<std::string>& ids, std::vector<ProbePoint>& out) {
  for (const LearnedKey& k : rule.keys) {
    if (k.bound_point.empty() || k.gap_fail == 0) continue;
    auto it = by_id.find(k.bound_point);
    if (it == by_id.end()) continue;
    const ProbePoint& at = it->second->point;
    for (auto& q : is_elements(k.key) ? element_gap(at, k, per_gap) : grid_gap(at, k, per_gap))
      if (ids.insert(q.id).second) out.push_back(std::move(q));
  }
}

}  // namespace

std::vector<ProbePoint> refine_points(const std::vector<ProbeRow>& rows, const std::vector<DerivedProfile>& profiles,
                                      size_t per_gap) {
  std::map<std::string, const ProbeRow*> by_id;
  std::set<std::string> ids;
  for (const auto& r : rows) {
    by_id[r.point.id] = &r;
    ids.insert(r.point.id);
  }
  std::vector<ProbePoint> out;
  for (const auto& d : profiles)
    for (const auto& op : d.ops) {
      refine_rule(op.main, by_id, per_gap, ids, out);
      refine_rule(op.int_rule, by_id, per_gap, ids, out);
    }
  return out;
}

}  // namespace torq::pipeline::probe
