#include "pipeline/probe/envelope_rule_search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <type_traits>

namespace torq::pipeline::probe {

namespace rule_search {

namespace {

// One key's Find-S bound and the failing points it excludes.
struct Candidate {
  LearnedKey key;
  std::vector<bool> excludes;  // per failing point
  // Bound keys: per failing point it excludes, its value nearest the bound.
  std::vector<int64_t> beyond;
  bool is_max = true, elements = false, strided_only = false;
  std::string name;            // the parameter as evidence names it: "k", "H,W"
};

using ValuesOf = std::vector<int64_t> (*)(const PointFeatures&);

std::vector<int64_t> kernel_values(const PointFeatures& f) { return f.kernel; }
// A node without strides (dilations) has 1 on every axis.
std::vector<int64_t> stride_values(const PointFeatures& f) { return f.strides.empty() ? std::vector<int64_t>{1} : f.strides; }
std::vector<int64_t> dilation_values(const PointFeatures& f) {
  return f.dilations.empty() ? std::vector<int64_t>{1} : f.dilations;
}
std::vector<int64_t> spatial_values(const PointFeatures& f) {
  return f.input_shape.size() > 2 ? std::vector<int64_t>(f.input_shape.begin() + 2, f.input_shape.end())
                                  : std::vector<int64_t>{};
}
std::vector<int64_t> rank_values(const PointFeatures& f) { return {f.max_rank}; }

bool strided(const PointFeatures& f) {
  return std::any_of(f.strides.begin(), f.strides.end(), [](int64_t s) { return s > 1; });
}

std::string range_text(int64_t lo, int64_t hi) {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
}

int count(const std::vector<bool>& v) { return static_cast<int>(std::count(v.begin(), v.end(), true)); }

// An integer grid key: the largest (is_max) or smallest value over the
// running points is the bound; a failing point with a value beyond it is
// excluded.
std::optional<Candidate> bound_candidate(const std::string& key, const std::string& name, ValuesOf values,
                                         bool is_max, const std::vector<const PointFeatures*>& runs,
                                         const std::vector<const PointFeatures*>& fails) {
  std::optional<int64_t> bound;
  int within = 0, at = -1;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::vector<int64_t> v = values(*runs[i]);
    if (v.empty()) continue;
    const int64_t e = is_max ? *std::max_element(v.begin(), v.end()) : *std::min_element(v.begin(), v.end());
    if (!bound || (is_max ? e > *bound : e < *bound)) bound = e, at = static_cast<int>(i);
    ++within;
  }
  if (!bound) return std::nullopt;
  Candidate c;
  c.is_max = is_max;
  c.name = name;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const PointFeatures* f : fails) {
    bool out = false;
    int64_t nearest = is_max ? INT64_MAX : INT64_MIN;
    for (int64_t e : values(*f)) {
      if (is_max ? e <= *bound : e >= *bound) continue;
      out = true;
      lo = std::min(lo, e);
      hi = std::max(hi, e);
      nearest = is_max ? std::min(nearest, e) : std::max(nearest, e);
    }
    c.excludes.push_back(out);
    c.beyond.push_back(nearest);
  }
  c.key.bound_run = at;
  c.key.gap_run = *bound;
  const char* op = is_max ? "<=" : ">=";
  c.key.key = key;
  c.key.value = std::to_string(*bound);
  c.key.runs_within = within;
  c.key.excludes = count(c.excludes);
  c.key.evidence = "runs " + std::to_string(within) + " pts " + name + op + std::to_string(*bound);
  if (c.key.excludes)
    c.key.evidence += "; excludes " + std::to_string(c.key.excludes) + " failing pts " + name + " " +
                      range_text(lo, hi) + "; bound in " +
                      (is_max ? "[" + std::to_string(*bound) + ", " + std::to_string(lo) + ")"
                              : "(" + std::to_string(hi) + ", " + std::to_string(*bound) + "]");
  return c;
}

// An element count: a round number in the gap between the largest running
// input and the smallest failing one above it.
std::optional<Candidate> elements_candidate(const std::string& key, bool strided_only,
                                            const std::vector<const PointFeatures*>& runs,
                                            const std::vector<const PointFeatures*>& fails) {
  std::optional<int64_t> max_run;
  int within = 0, at = -1;
  for (size_t i = 0; i < runs.size(); ++i)
    if (!strided_only || strided(*runs[i])) {
      if (!max_run || runs[i]->numel() > *max_run) max_run = runs[i]->numel(), at = static_cast<int>(i);
      ++within;
    }
  if (!max_run) return std::nullopt;
  Candidate c;
  c.elements = true;
  c.strided_only = strided_only;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const PointFeatures* f : fails) {
    const bool out = (!strided_only || strided(*f)) && f->numel() > *max_run;
    if (out) lo = std::min(lo, f->numel()), hi = std::max(hi, f->numel());
    c.excludes.push_back(out);
    c.beyond.push_back(f->numel());
  }
  const int64_t bound = count(c.excludes) ? round_element_bound(*max_run, lo) : *max_run;
  const std::string when = strided_only ? " with a stride > 1" : "";
  c.key.key = key;
  c.key.value = std::to_string(bound);
  c.key.runs_within = within;
  c.key.excludes = count(c.excludes);
  c.key.bound_run = at;
  c.key.gap_run = *max_run;
  c.key.evidence = "runs " + std::to_string(within) + " pts" + when + " of <= " + std::to_string(*max_run) + " elements";
  if (c.key.excludes)
    c.key.evidence += "; excludes " + std::to_string(c.key.excludes) + " failing pts of " + range_text(lo, hi) +
                      " elements; bound in [" + std::to_string(*max_run) + ", " + std::to_string(lo) + ")";
  return c;
}

// A set key (conv_groups, spatial_ranks): the values seen running.
template <class T>
std::optional<Candidate> set_candidate(const std::string& key, const std::string& name, T (*value)(const PointFeatures&),
                                       const std::vector<const PointFeatures*>& runs,
                                       const std::vector<const PointFeatures*>& fails) {
  std::set<T> seen, refused;
  for (const PointFeatures* r : runs) seen.insert(value(*r));
  if (seen.empty()) return std::nullopt;
  Candidate c;
  for (const PointFeatures* f : fails) {
    c.excludes.push_back(!seen.count(value(*f)));
    if (c.excludes.back()) refused.insert(value(*f));
  }
  auto list = [](const std::set<T>& s) {
    std::string out;
    for (const T& v : s) {
      std::string t;
      if constexpr (std::is_same_v<T, std::string>) t = v; else t = std::to_string(v);
      out += (out.empty() ? "" : ", ") + t;
    }
    return out;
  };
  c.key.key = key;
  c.key.value = "[" + list(seen) + "]";
  c.key.runs_within = static_cast<int>(runs.size());
  c.key.excludes = count(c.excludes);
  c.key.evidence = "runs " + std::to_string(runs.size()) + " pts " + name + " {" + list(seen) + "}";
  if (c.key.excludes)
    c.key.evidence += "; excludes " + std::to_string(c.key.excludes) + " failing pts " + name + " {" + list(refused) + "}";
  return c;
}

std::string group_of(const PointFeatures& f) { return f.group_kind; }
int64_t spatial_rank_of(const PointFeatures& f) { return f.spatial_rank(); }

// Every key's Find-S bound, in OpRule's key order (the tie-break order).
std::vector<Candidate> candidates(const std::vector<const PointFeatures*>& runs,
                                  const std::vector<const PointFeatures*>& fails) {
  std::vector<std::optional<Candidate>> all;
  const PointFeatures& any = *runs.front();
  if (any.op == "Conv" || any.op == "ConvTranspose")
    all.push_back(set_candidate<std::string>("conv_groups", "groups", group_of, runs, fails));
  if (any.spatial()) {
    all.push_back(set_candidate<int64_t>("spatial_ranks", "spatial rank", spatial_rank_of, runs, fails));
    all.push_back(bound_candidate("max_kernel", "k", kernel_values, true, runs, fails));
    all.push_back(bound_candidate("min_kernel", "k", kernel_values, false, runs, fails));
    all.push_back(bound_candidate("min_spatial", "H,W", spatial_values, false, runs, fails));
    all.push_back(bound_candidate("max_stride", "stride", stride_values, true, runs, fails));
    all.push_back(bound_candidate("max_dilation", "dilation", dilation_values, true, runs, fails));
    all.push_back(elements_candidate("max_strided_input_elements", true, runs, fails));
  }
  all.push_back(elements_candidate("max_input_elements", false, runs, fails));
  all.push_back(bound_candidate("max_rank", "rank", rank_values, true, runs, fails));
  std::vector<Candidate> out;
  for (auto& c : all)
    if (c) out.push_back(std::move(*c));
  return out;
}

// A kept bound's gap, measured against the failing points only it
// excludes (a point a kept key of its own also refuses says nothing of
// where this bound lies): the element bound is rounded in that gap, and
// the evidence names it.
void settle_gap(Candidate& c, size_t self, const std::vector<Candidate>& cands, const std::vector<bool>& kept) {
  if (c.beyond.empty()) return;
  std::optional<int64_t> nearest;
  for (size_t j = 0; j < c.excludes.size(); ++j) {
    if (!c.excludes[j]) continue;
    bool other = false;
    for (size_t k = 0; k < cands.size() && !other; ++k) other = k != self && kept[k] && cands[k].excludes[j];
    if (other) continue;
    const int64_t v = c.beyond[j];
    nearest = !nearest ? v : (c.elements || c.is_max) ? std::min(*nearest, v) : std::max(*nearest, v);
  }
  if (!nearest) return;
  c.key.gap_fail = *nearest;
  if (c.elements) c.key.value = std::to_string(round_element_bound(c.key.gap_run, *nearest));
  const size_t at = c.key.evidence.find("; bound in ");
  if (at == std::string::npos) return;
  const std::string run = std::to_string(c.key.gap_run), fail = std::to_string(*nearest);
  c.key.evidence = c.key.evidence.substr(0, at) + "; bound in " +
                   ((c.elements || c.is_max) ? "[" + run + ", " + fail + ")" : "(" + fail + ", " + run + "]");
}

}  // namespace

LearnedRule search_rule(const std::vector<const PointFeatures*>& runs,
                        const std::vector<const PointFeatures*>& fails) {
  LearnedRule rule;
  if (runs.empty()) return rule;
  std::vector<Candidate> cands = candidates(runs, fails);
  std::vector<bool> covered(fails.size(), false);
  std::vector<bool> kept(cands.size(), false);
  std::vector<size_t> order;
  for (;;) {
    size_t best = cands.size();
    int best_gain = 0;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (kept[i]) continue;
      int gain = 0;
      for (size_t j = 0; j < fails.size(); ++j) gain += cands[i].excludes[j] && !covered[j];
      if (gain > best_gain) best = i, best_gain = gain;
    }
    if (best == cands.size()) break;
    kept[best] = true;
    for (size_t j = 0; j < fails.size(); ++j) covered[j] = covered[j] || cands[best].excludes[j];
    order.push_back(best);
  }
  for (size_t i : order) {
    settle_gap(cands[i], i, cands, kept);
    rule.keys.push_back(cands[i].key);
  }
  return rule;
}

const std::vector<std::string>& key_order() {
  static const std::vector<std::string> k = {
      "conv_groups", "spatial_ranks", "max_kernel", "min_kernel", "min_spatial", "max_stride", "max_dilation",
      "max_strided_input_elements", "max_input_elements", "max_rank"};
  return k;
}

std::string condition_text(const LearnedKey& k) {
  const std::string v = k.value;
  const std::string set = v.size() >= 2 ? "{" + v.substr(1, v.size() - 2) + "}" : v;
  static const std::map<std::string, std::string> prefix = {
      {"max_kernel", "kernel ≤ "},   {"min_kernel", "kernel ≥ "},     {"max_stride", "stride ≤ "},
      {"max_dilation", "dilation ≤ "}, {"min_spatial", "min(H,W) ≥ "}, {"max_rank", "rank ≤ "},
      {"max_input_elements", "input ≤ "}, {"max_strided_input_elements", "input ≤ "}};
  if (k.key == "conv_groups") return "groups ∈ " + set;
  if (k.key == "spatial_ranks") return "spatial rank ∈ " + set;
  auto it = prefix.find(k.key);
  if (it == prefix.end()) return k.key + " " + v;
  if (k.key == "max_input_elements") return it->second + v + " elements";
  if (k.key == "max_strided_input_elements") return it->second + v + " elements when stride > 1";
  return it->second + v;
}

std::pair<std::string, std::string> key_param(const std::string& key, const PointFeatures& f) {
  if (key == "conv_groups") return {"groups", f.group_kind};
  if (key == "spatial_ranks") return {"spatial rank", std::to_string(f.spatial_rank())};
  if (key == "max_kernel") return {"kernel", std::to_string(f.max_kernel())};
  if (key == "min_kernel") return {"kernel", std::to_string(f.min_kernel())};
  if (key == "max_stride") return {"stride", std::to_string(f.max_stride())};
  if (key == "max_dilation") return {"dilation", std::to_string(f.max_dilation())};
  if (key == "min_spatial") return {"min(H,W)", std::to_string(f.min_spatial())};
  if (key == "max_input_elements") return {"input elements", std::to_string(f.numel())};
  if (key == "max_strided_input_elements")
    return {"input elements (stride)", std::to_string(f.numel()) + (strided(f) ? " s>1" : " s=1")};
  if (key == "max_rank") return {"rank", std::to_string(f.max_rank)};
  return {"dtype", base::dtype_name(f.dtype)};
}

}  // namespace rule_search

int64_t round_element_bound(int64_t max_run, int64_t min_fail) {
  const long double middle = std::sqrt(static_cast<long double>(max_run) * static_cast<long double>(min_fail));
  int64_t best = -1;
  for (int k = 0; k < 62; ++k) {
    const int64_t pow2 = int64_t{1} << k;
    for (int64_t v : {pow2, k > 0 ? 3 * (pow2 >> 1) : int64_t{-1}})
      if (v > 0 && static_cast<long double>(v) <= middle) best = std::max(best, v);
  }
  return best >= max_run ? best : max_run;
}

}  // namespace torq::pipeline::probe
