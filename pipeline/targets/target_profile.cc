#include "pipeline/targets/target_profile.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "pipeline/base/file_bytes.h"
#include "pipeline/base/config_dir.h"
#include "pipeline/base/error.h"
#include "pipeline/base/yaml_strict.h"

namespace torq::targets {

using namespace ::torq::base;  // NOLINT(google-build-using-namespace)

namespace {

using IntField = std::optional<int64_t> OpRule::*;

// An integer constraint and the values it may take: extents, strides and
// dilations start at 1, a rank at 0, an element count at 1.
struct IntSpec {
  IntField field;
  int64_t lo, hi;
};

constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxRank = 64;  // the spatial ranks and input ranks a rule may name

const std::map<std::string, IntSpec>& int_fields() {
  static const std::map<std::string, IntSpec> f = {
      {"max_kernel", {&OpRule::max_kernel, 1, kMaxExtent}},
      {"max_stride", {&OpRule::max_stride, 1, kMaxExtent}},
      {"max_dilation", {&OpRule::max_dilation, 1, kMaxExtent}},
      {"max_rank", {&OpRule::max_rank, 0, kMaxRank}},
      {"min_kernel", {&OpRule::min_kernel, 1, kMaxExtent}},
      {"min_spatial", {&OpRule::min_spatial, 1, kMaxExtent}},
      {"max_input_elements", {&OpRule::max_input_elements, 1, std::numeric_limits<int64_t>::max()}},
      {"max_strided_input_elements", {&OpRule::max_strided_input_elements, 1, std::numeric_limits<int64_t>::max()}},
  };
  return f;
}

// The keys of an op rule; an `int:` block holds only constraints (and a note).
std::set<std::string> rule_keys(bool int_block) {
  std::set<std::string> k{"conv_groups", "spatial_ranks", "note"};
  for (const auto& f : int_fields()) k.insert(f.first);
  if (!int_block) k.insert({"dtypes", "widen_output", "int"});
  return k;
}

template <class T>
std::set<T> parse_set(const YamlReader& r, const YAML::Node& v, const std::string& what,
                      T (*one)(const YamlReader&, const YAML::Node&)) {
  std::set<T> out;
  for (const auto& e : r.seq(v, what)) out.insert(one(r, e));
  return out;
}

DType parse_dtype(const YamlReader& r, const YAML::Node& e) {
  DType t = dtype_from_name(r.str(e, "dtype"));
  if (t == DType::kUndefined)
    r.fail(e, "unknown dtype '" + e.Scalar() +
                  "' (expected f32, bf16, f16, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool)");
  return t;
}
std::string parse_group(const YamlReader& r, const YAML::Node& e) {
  return r.choice(e, {"standard", "depthwise", "grouped"}, "conv group kind");
}
int64_t parse_rank(const YamlReader& r, const YAML::Node& e) { return r.integer_in(e, "spatial rank", 1, kMaxRank); }

// Parses rule `n` of `op`. With `base` (an `int:` block) the rule starts as
// `base` and each key given replaces that constraint; null removes it.
OpRule parse_rule(const YamlReader& r, const YAML::Node& n, const std::string& op, const OpRule* base = nullptr) {
  const std::string what = base ? "int: rule for op '" + op + "'" : "rule for op '" + op + "'";
  OpRule rule = base ? *base : OpRule{};
  rule.int_rule = nullptr;
  if (n.IsNull()) return rule;
  r.expect_map(n, rule_keys(base != nullptr), what);
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    const bool clear = base && v.IsNull();
    if (auto f = int_fields().find(key); f != int_fields().end())
      rule.*(f->second.field) =
          clear ? std::nullopt : std::optional<int64_t>(r.integer_in(v, key, f->second.lo, f->second.hi));
    else if (key == "conv_groups")
      rule.conv_groups = clear ? std::set<std::string>{} : parse_set(r, v, what + ".conv_groups", parse_group);
    else if (key == "spatial_ranks")
      rule.spatial_ranks = clear ? std::set<int64_t>{} : parse_set(r, v, what + ".spatial_ranks", parse_rank);
    else if (key == "dtypes")
      rule.dtypes = parse_set(r, v, what + ".dtypes", parse_dtype);
    else if (key == "widen_output")
      rule.widen_output = r.boolean(v, "widen_output");
    else if (key == "note")
      rule.note = r.str(v, "note");
  }
  if (!base && n["int"]) rule.int_rule = std::make_shared<const OpRule>(parse_rule(r, n["int"], op, &rule));
  return rule;
}

// A rate or a clock: a finite number > 0, at most 1e9 (per cycle, or MHz).
double positive(const YamlReader& r, const YAML::Node& n, const std::string& what) {
  return r.number_in(n, what, 0, 1e9, true);
}

CostModel parse_cost(const YamlReader& r, const YAML::Node& cost) {
  static const char* const kRequired[] = {"clock_mhz", "slices", "macs_per_cycle_per_slice", "eltwise_per_cycle",
                                          "dma_bytes_per_cycle", "dispatch_overhead_cycles"};
  std::set<std::string> keys(std::begin(kRequired), std::end(kRequired));
  keys.insert("int8_macs_per_cycle_per_slice");
  r.expect_map(cost, keys, "cost");
  for (const char* k : kRequired)
    if (!cost[k]) r.fail(cost, std::string("cost lacks '") + k + "'");
  CostModel c;
  c.clock_mhz = positive(r, cost["clock_mhz"], "cost.clock_mhz");
  c.slices = r.integer_in(cost["slices"], "cost.slices", 1, 1 << 20);
  c.macs_per_cycle_per_slice = positive(r, cost["macs_per_cycle_per_slice"], "cost.macs_per_cycle_per_slice");
  if (cost["int8_macs_per_cycle_per_slice"])
    c.int8_macs_per_cycle_per_slice =
        positive(r, cost["int8_macs_per_cycle_per_slice"], "cost.int8_macs_per_cycle_per_slice");
  c.eltwise_per_cycle = positive(r, cost["eltwise_per_cycle"], "cost.eltwise_per_cycle");
  c.dma_bytes_per_cycle = positive(r, cost["dma_bytes_per_cycle"], "cost.dma_bytes_per_cycle");
  // At most 1e12 cycles (1000 s at 1 GHz) a layer: sums of them stay exact.
  c.dispatch_overhead_cycles =
      r.integer_in(cost["dispatch_overhead_cycles"], "cost.dispatch_overhead_cycles", 0, 1000000000000);
  return c;
}

}  // namespace

TargetProfile TargetProfile::parse(const std::string& text, const std::string& filename, const OpCatalog& catalog) {
  YamlReader r(filename);
  YAML::Node root = yaml_parse(text, filename);
  r.expect_map(root, {"name", "description", "chip", "numerics", "cost", "ops"}, "profile");
  TargetProfile p;
  if (!root["name"]) r.fail(root, "profile lacks 'name'");
  if (!root["ops"]) r.fail(root, "profile lacks 'ops' (a map of op rules, or 'all')");
  if (!root["cost"]) r.fail(root, "profile lacks 'cost'");
  p.name_ = r.str(root["name"], "name");
  if (root["description"]) p.description_ = r.str(root["description"], "description");
  if (root["chip"]) p.chip_ = r.str(root["chip"], "chip");
  if (const auto num = root["numerics"]) {
    r.expect_map(num, {"float_type", "rounding", "fp32_error"}, "numerics");
    if (num["float_type"])
      p.float_type_ = dtype_from_name(r.choice(num["float_type"], {"f32", "bf16"}, "numerics.float_type"));
    if (num["rounding"])
      p.rounding_ = r.choice(num["rounding"], {"truncate", "rne"}, "numerics.rounding") == "rne"
                        ? Rounding::kNearestEven
                        : Rounding::kTruncate;
    if (num["fp32_error"]) p.fp32_error_ = r.str(num["fp32_error"], "numerics.fp32_error");
  }
  p.cost_ = parse_cost(r, root["cost"]);

  const YAML::Node ops = root["ops"];
  if (ops.IsScalar()) {
    if (ops.Scalar() != "all") r.fail(ops, "ops must be 'all' or a map of op rules");
    p.all_ops_ = true;
  } else {
    r.expect_map(ops, {}, "ops");
    const std::vector<std::string> known = catalog.op_types();
    for (const auto& kv : ops) {
      const std::string op = kv.first.Scalar();
      if (const std::string f = catalog.judged_as(op); !f.empty())
        r.fail(kv.first, op + " is judged by the rule of " + f + " (list " + f +
                             " with the integer dtypes it runs)");
      if (!catalog.knows(op)) {
        std::string hint = did_you_mean(op, known);
        r.fail(kv.first, "unknown op type '" + op + "'" +
                             (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
      }
      p.ops_[op] = parse_rule(r, kv.second, op);
    }
  }
  if (p.float_type_ == DType::kBF16 && p.fp32_error_.empty())
    p.fp32_error_ = "FP32 not supported on " + p.name_ + "; use --auto-convert-bf16";
  return p;
}

TargetProfile TargetProfile::load(const std::string& path, const OpCatalog& catalog) {
  if (const std::string why = base::not_a_regular_file(path); !why.empty())
    throw EngineError(ErrorKind::kInvalidInput, path + ": cannot open profile: " + why);
  std::ifstream f(path);
  if (!f) throw EngineError(ErrorKind::kInvalidInput, path + ": cannot open profile");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path, catalog);
}

std::string TargetProfile::targets_dir() { return base::targets_dir(); }

TargetProfile TargetProfile::resolve(const std::string& name_or_path, const OpCatalog& catalog) {
  if (name_or_path.find('/') != std::string::npos || name_or_path.find(".yaml") != std::string::npos)
    return load(name_or_path, catalog);
  const std::string path = targets_dir() + "/" + name_or_path + ".yaml";
  if (!std::filesystem::exists(path))
    throw EngineError(ErrorKind::kInvalidInput,
                      "unknown profile '" + name_or_path + "' (no " + path + "); built-in: nss, css, host");
  return load(path, catalog);
}

const OpRule* TargetProfile::rule(const std::string& op_type) const {
  auto it = ops_.find(op_type);
  return it == ops_.end() ? nullptr : &it->second;
}

double CostModel::compute_cycles(const LayerCost& c) const {
  if (!c.macs) return static_cast<double>(c.elements) / eltwise_per_cycle;
  const double rate = c.integer_macs && int8_macs_per_cycle_per_slice > 0 ? int8_macs_per_cycle_per_slice
                                                                          : macs_per_cycle_per_slice;
  return static_cast<double>(c.macs) / (rate * static_cast<double>(slices));
}

}  // namespace torq::targets
