// expand_points (probe_spec.h): a spec's ops, dtypes and grids as points.
#include <random>
#include <set>

#include "pipeline/probe/probe_ops.h"
#include "pipeline/probe/probe_spec.h"

namespace torq::pipeline::probe {

namespace {

using Assignment = std::map<std::string, std::string>;

// The op's base: each axis at its family default, overridden by `base:`.
Assignment base_of(const ProbeFamily& f, const ProbeOpSpec& s) {
  Assignment a;
  for (const auto& axis : f.axes) a[axis.name] = axis.fallback;
  for (const auto& [k, v] : s.base) a[k] = v;
  return a;
}

const std::vector<std::string>& values_of(const ProbeOpSpec& s, const std::string& axis) {
  for (const auto& [name, vals] : s.axes)
    if (name == axis) return vals;
  static const std::vector<std::string> none;
  return none;
}

// Every assignment of `axes` over their values (a full product), others at `base`.
void product(const ProbeOpSpec& s, const std::vector<std::string>& axes, size_t i, Assignment a,
             std::vector<Assignment>& out) {
  if (i == axes.size()) {
    out.push_back(a);
    return;
  }
  for (const auto& v : values_of(s, axes[i])) {
    a[axes[i]] = v;
    product(s, axes, i + 1, a, out);
  }
}

// `n` seeded draws from the product of every swept axis's values (the
// others at base), distinct; fewer when the product is smaller.
void sample(const ProbeOpSpec& s, const Assignment& base, uint64_t seed, std::vector<Assignment>& out) {
  std::mt19937_64 rng(seed ^ std::hash<std::string>{}(s.op));
  size_t space = 1;
  for (const auto& [name, vals] : s.axes) space = std::min<size_t>(space * vals.size(), 1u << 30);
  const size_t want = std::min<size_t>(static_cast<size_t>(s.sample), space);
  std::set<Assignment> seen;
  for (size_t tries = 0; seen.size() < want && tries < want * 20; ++tries) {
    Assignment a = base;
    for (const auto& [name, vals] : s.axes) a[name] = vals[rng() % vals.size()];
    if (seen.insert(a).second) out.push_back(a);
  }
}

std::vector<Assignment> assignments(const ProbeFamily& f, const ProbeOpSpec& s, uint64_t seed) {
  const Assignment base = base_of(f, s);
  std::vector<Assignment> out{base};
  for (const auto& [name, vals] : s.axes)
    for (const auto& v : vals) {
      Assignment a = base;
      a[name] = v;
      out.push_back(a);
    }
  for (const auto& g : s.grids) product(s, g, 0, base, out);
  std::vector<std::string> all;
  for (const auto& [name, vals] : s.axes) all.push_back(name);
  if (s.full) product(s, all, 0, base, out);
  if (s.sample > 0) sample(s, base, seed, out);
  return out;
}

}  // namespace

std::vector<ProbePoint> expand_points(const ProbeSpec& spec) {
  std::vector<ProbePoint> points;
  std::set<std::string> ids;
  for (const auto& s : spec.ops) {
    const ProbeFamily& f = *family_of(s.op);
    const std::vector<Assignment> as = assignments(f, s, spec.seed);
    for (const auto& dtype : s.dtypes)
      for (const auto& a : as) {
        ProbePoint p;
        p.op = s.op;
        p.dtype = dtype;
        p.seed = spec.seed;
        for (const auto& axis : f.axes) p.params.emplace_back(axis.name, a.at(axis.name));
        p.id = point_id(p.op, p.dtype, p.params, p.seed);
        if (ids.insert(p.id).second) points.push_back(std::move(p));
      }
  }
  return points;
}

}  // namespace torq::pipeline::probe
