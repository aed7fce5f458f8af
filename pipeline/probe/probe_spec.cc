#include "pipeline/probe/probe_spec.h"

#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "pipeline/base/file_bytes.h"
#include "pipeline/base/error.h"
#include "pipeline/base/yaml_strict.h"
#include "pipeline/core/sha256.h"
#include "pipeline/probe/probe_ops.h"

namespace torq::pipeline::probe {

namespace {

using base::YamlReader;

const std::vector<std::string> kDtypes{"fp32", "bf16", "int8"};

// The most points a spec may ask for: each is a job (a compile and a run).
constexpr int64_t kMaxPoints = 1000000;

std::vector<std::string> axis_names(const ProbeFamily& f) {
  std::vector<std::string> out;
  for (const auto& a : f.axes) out.push_back(a.name);
  return out;
}

const ProbeAxis& known_axis(const YamlReader& r, const YAML::Node& at, const ProbeFamily& f, const std::string& op,
                            const std::string& name) {
  if (const ProbeAxis* a = axis_of(f, name)) return *a;
  const std::string hint = base::did_you_mean(name, axis_names(f));
  std::string all;
  for (const auto& n : axis_names(f)) all += (all.empty() ? "" : ", ") + n;
  r.fail(at, "unknown axis '" + name + "' of " + op + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                 "; " + op + " takes: " + all);
}

// One value of an axis, as the points name it.
std::string axis_value(const YamlReader& r, const YAML::Node& v, const ProbeAxis& a, const std::string& op) {
  const std::string what = op + "." + a.name;
  if (!a.integer()) return r.choice(v, a.choices, what);
  const int64_t n = r.integer(v, what);
  if (n < a.min || n > a.max)
    r.fail(v, what + " must be in [" + std::to_string(a.min) + ", " + std::to_string(a.max) + "], not " +
                  std::to_string(n));
  return std::to_string(n);
}

std::vector<std::string> parse_dtypes(const YamlReader& r, const YAML::Node& n, const std::string& what) {
  std::vector<std::string> out;
  for (const auto& e : r.seq(n, what)) out.push_back(r.choice(e, kDtypes, what));
  if (out.empty()) r.fail(n, what + " is empty");
  return out;
}

void parse_axes(const YamlReader& r, const YAML::Node& n, const ProbeFamily& f, ProbeOpSpec& s) {
  r.expect_map(n, {}, s.op + ".axes");
  for (const auto& kv : n) {
    const ProbeAxis& a = known_axis(r, kv.first, f, s.op, kv.first.Scalar());
    std::vector<std::string> values;
    for (const auto& v : r.seq(kv.second, s.op + ".axes." + a.name)) values.push_back(axis_value(r, v, a, s.op));
    if (values.empty()) r.fail(kv.second, s.op + ".axes." + a.name + " is empty");
    s.axes.emplace_back(a.name, values);
  }
}

void parse_grids(const YamlReader& r, const YAML::Node& n, const ProbeFamily& f, ProbeOpSpec& s) {
  for (const auto& g : r.seq(n, s.op + ".grids")) {
    std::vector<std::string> names;
    for (const auto& e : r.seq(g, s.op + ".grids entry")) {
      const std::string name = known_axis(r, e, f, s.op, r.str(e, "axis")).name;
      bool swept = false;
      for (const auto& [an, vals] : s.axes) swept = swept || an == name;
      if (!swept) r.fail(e, "grid axis '" + name + "' of " + s.op + " has no values under " + s.op + ".axes");
      names.push_back(name);
    }
    if (names.size() < 2) r.fail(g, s.op + ".grids: a grid names at least two axes");
    s.grids.push_back(names);
  }
}

// A grid or a full product larger than the spec's budget is refused before
// it is expanded (a product of a few long axes runs to millions).
void check_products(const YamlReader& r, const YAML::Node& n, const ProbeOpSpec& s, int64_t max_points) {
  auto size_of = [&](const std::vector<std::string>& names) {
    double size = 1;
    for (const auto& [name, vals] : s.axes)
      for (const auto& g : names)
        if (g == name) size *= static_cast<double>(vals.size());
    return size;
  };
  for (size_t i = 0; i < s.grids.size(); ++i)
    if (size_of(s.grids[i]) > static_cast<double>(max_points))
      r.fail(n["grids"][i], s.op + ": this grid has more points than max_points " + std::to_string(max_points));
  std::vector<std::string> all;
  for (const auto& [name, vals] : s.axes) all.push_back(name);
  if (s.full && size_of(all) > static_cast<double>(max_points))
    r.fail(n["full"], s.op + ": the full product has " + std::to_string(static_cast<int64_t>(size_of(all))) +
                          " points, more than max_points " + std::to_string(max_points) + " (use sample: N)");
}

ProbeOpSpec parse_op(const YamlReader& r, const YAML::Node& key, const YAML::Node& n, const ProbeSpec& spec) {
  ProbeOpSpec s;
  s.op = key.Scalar();
  const ProbeFamily* f = family_of(s.op);
  if (!f) {
    const std::string hint = base::did_you_mean(s.op, probe_ops());
    r.fail(key, "no probe family for op '" + s.op + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  }
  // The op's dtypes (else the spec's) that its family probes.
  const bool own = n.IsMap() && n["dtypes"];
  for (const auto& d : own ? parse_dtypes(r, n["dtypes"], s.op + ".dtypes") : spec.dtypes)
    for (const auto& fd : f->dtypes)
      if (d == fd) s.dtypes.push_back(d);
  if (s.dtypes.empty()) r.fail(own ? n["dtypes"] : key, s.op + " is not probed in these dtypes");
  if (n.IsNull()) return s;
  r.expect_map(n, {"dtypes", "base", "axes", "grids", "sample", "full"}, "op " + s.op);
  if (n["base"]) {
    r.expect_map(n["base"], {}, s.op + ".base");
    for (const auto& kv : n["base"])
      s.base[kv.first.Scalar()] = axis_value(r, kv.second, known_axis(r, kv.first, *f, s.op, kv.first.Scalar()), s.op);
  }
  if (n["axes"]) parse_axes(r, n["axes"], *f, s);
  if (n["grids"]) parse_grids(r, n["grids"], *f, s);
  if (n["sample"]) {
    s.sample = r.integer_in(n["sample"], s.op + ".sample", 0, std::numeric_limits<int64_t>::max());
    if (s.sample > spec.max_points)
      r.fail(n["sample"], s.op + ".sample " + std::to_string(s.sample) + " is more than max_points " +
                              std::to_string(spec.max_points));
  }
  if (n["full"]) s.full = r.boolean(n["full"], s.op + ".full");
  check_products(r, n, s, spec.max_points);
  return s;
}

}  // namespace

ProbeSpec parse_probe_spec(const std::string& text, const std::string& filename) {
  YamlReader r(filename);
  const YAML::Node root = base::yaml_parse(text, filename);
  r.expect_map(root, {"seed", "dtypes", "max_points", "refine", "ops"}, "probe spec");
  if (!root["ops"]) r.fail(root, "probe spec lacks 'ops' (a map from op type to its grid)");
  ProbeSpec spec;
  spec.file = filename;
  if (root["seed"])
    spec.seed = static_cast<uint64_t>(r.integer_in(root["seed"], "seed", 0, std::numeric_limits<int64_t>::max()));
  if (root["dtypes"]) spec.dtypes = parse_dtypes(r, root["dtypes"], "dtypes");
  if (root["max_points"]) spec.max_points = r.integer_in(root["max_points"], "max_points", 1, kMaxPoints);
  if (root["refine"]) spec.refine = r.integer_in(root["refine"], "refine (rounds)", 0, 8);
  r.expect_map(root["ops"], {}, "ops");
  for (const auto& kv : root["ops"]) spec.ops.push_back(parse_op(r, kv.first, kv.second, spec));
  const size_t n = expand_points(spec).size();
  if (n > static_cast<size_t>(spec.max_points))
    r.fail(root["max_points"] ? root["max_points"] : root, "the spec expands to " + std::to_string(n) +
                                                               " points, more than max_points " +
                                                               std::to_string(spec.max_points));
  return spec;
}

ProbeSpec load_probe_spec(const std::string& path) {
  if (const std::string why = base::not_a_regular_file(path); !why.empty())
    throw base::EngineError(base::ErrorKind::kInvalidInput, path + ": cannot open probe spec: " + why);
  std::ifstream f(path);
  if (!f) throw base::EngineError(base::ErrorKind::kInvalidInput, path + ": cannot open probe spec");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_probe_spec(ss.str(), path);
}

std::string point_id(const std::string& op, const std::string& dtype,
                     const std::vector<std::pair<std::string, std::string>>& params, uint64_t seed) {
  std::string key = op + "|" + dtype + "|" + std::to_string(seed);
  for (const auto& [k, v] : params) key += "|" + k + "=" + v;
  return op + "-" + dtype + "-" + sha256_hex(key).substr(0, 12);
}

}  // namespace torq::pipeline::probe
