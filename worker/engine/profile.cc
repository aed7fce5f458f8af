#include "worker/engine/profile.h"

#include "pipeline/base/config_dir.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "pipeline/base/error.h"
#include "worker/engine/kernel.h"
#include "pipeline/base/yaml_strict.h"

namespace torq::engine {

namespace {

OpRule parse_rule(const YamlReader& r, const YAML::Node& n, const std::string& op) {
  const std::string what = "rule for op '" + op + "'";
  OpRule rule;
  if (n.IsNull()) return rule;
  r.expect_map(n, {"dtypes", "conv_groups", "spatial_ranks", "max_kernel", "max_stride", "max_dilation",
                   "max_rank", "min_kernel", "min_spatial", "max_input_elements", "widen_output", "note"},
               what);
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "dtypes") {
      for (const auto& e : r.seq(v, what + ".dtypes")) {
        DType t = dtype_from_name(r.str(e, "dtype"));
        if (t == DType::kUndefined)
          r.fail(e, "unknown dtype '" + e.Scalar() +
                        "' (expected f32, bf16, f16, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool)");
        rule.dtypes.insert(t);
      }
    } else if (key == "conv_groups") {
      for (const auto& e : r.seq(v, what + ".conv_groups"))
        rule.conv_groups.insert(r.choice(e, {"standard", "depthwise", "grouped"}, "conv group kind"));
    } else if (key == "spatial_ranks") {
      for (const auto& e : r.seq(v, what + ".spatial_ranks")) rule.spatial_ranks.insert(r.integer(e, "spatial rank"));
    } else if (key == "max_kernel") {
      rule.max_kernel = r.integer(v, "max_kernel");
    } else if (key == "max_stride") {
      rule.max_stride = r.integer(v, "max_stride");
    } else if (key == "max_dilation") {
      rule.max_dilation = r.integer(v, "max_dilation");
    } else if (key == "max_rank") {
      rule.max_rank = r.integer(v, "max_rank");
    } else if (key == "min_kernel") {
      rule.min_kernel = r.integer(v, "min_kernel");
    } else if (key == "min_spatial") {
      rule.min_spatial = r.integer(v, "min_spatial");
    } else if (key == "max_input_elements") {
      rule.max_input_elements = r.integer(v, "max_input_elements");
    } else if (key == "widen_output") {
      rule.widen_output = r.boolean(v, "widen_output");
    } else if (key == "note") {
      rule.note = r.str(v, "note");
    }
  }
  return rule;
}

double positive(const YamlReader& r, const YAML::Node& n, const std::string& what) {
  double v = r.number(n, what);
  if (!(v > 0)) r.fail(n, what + " must be > 0");
  return v;
}

}  // namespace

ExecutorProfile ExecutorProfile::parse(const std::string& text, const std::string& filename) {
  YamlReader r(filename);
  YAML::Node root = yaml_parse(text, filename);
  r.expect_map(root, {"name", "description", "chip", "numerics", "cost", "ops"}, "profile");
  ExecutorProfile p;
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
  const YAML::Node cost = root["cost"];
  r.expect_map(cost, {"clock_mhz", "slices", "macs_per_cycle_per_slice", "eltwise_per_cycle",
                      "dma_bytes_per_cycle", "dispatch_overhead_cycles"},
               "cost");
  for (const char* k : {"clock_mhz", "slices", "macs_per_cycle_per_slice", "eltwise_per_cycle",
                        "dma_bytes_per_cycle", "dispatch_overhead_cycles"})
    if (!cost[k]) r.fail(cost, std::string("cost lacks '") + k + "'");
  p.cost_.clock_mhz = positive(r, cost["clock_mhz"], "cost.clock_mhz");
  p.cost_.slices = r.integer(cost["slices"], "cost.slices");
  if (p.cost_.slices < 1) r.fail(cost["slices"], "cost.slices must be >= 1");
  p.cost_.macs_per_cycle_per_slice = positive(r, cost["macs_per_cycle_per_slice"], "cost.macs_per_cycle_per_slice");
  p.cost_.eltwise_per_cycle = positive(r, cost["eltwise_per_cycle"], "cost.eltwise_per_cycle");
  p.cost_.dma_bytes_per_cycle = positive(r, cost["dma_bytes_per_cycle"], "cost.dma_bytes_per_cycle");
  p.cost_.dispatch_overhead_cycles = r.integer(cost["dispatch_overhead_cycles"], "cost.dispatch_overhead_cycles");
  if (p.cost_.dispatch_overhead_cycles < 0) r.fail(cost["dispatch_overhead_cycles"], "must be >= 0");

  const YAML::Node ops = root["ops"];
  if (ops.IsScalar()) {
    if (ops.Scalar() != "all") r.fail(ops, "ops must be 'all' or a map of op rules");
    p.all_ops_ = true;
  } else {
    r.expect_map(ops, {}, "ops");
    const auto& registry = KernelRegistry::global();
    std::vector<std::string> known = registry.op_types();
    for (const auto& kv : ops) {
      const std::string op = kv.first.Scalar();
      if (!registry.knows(op)) {
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

ExecutorProfile ExecutorProfile::load(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw EngineError(ErrorKind::kInvalidInput, path + ": cannot open profile");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path);
}

std::string ExecutorProfile::targets_dir() { return base::targets_dir(); }

ExecutorProfile ExecutorProfile::resolve(const std::string& name_or_path) {
  if (name_or_path.find('/') != std::string::npos || name_or_path.find(".yaml") != std::string::npos)
    return load(name_or_path);
  const std::string path = targets_dir() + "/" + name_or_path + ".yaml";
  if (!std::filesystem::exists(path))
    throw EngineError(ErrorKind::kInvalidInput,
                      "unknown profile '" + name_or_path + "' (no " + path + "); built-in: nss, css, host");
  return load(path);
}

const OpRule* ExecutorProfile::rule(const std::string& op_type) const {
  auto it = ops_.find(op_type);
  return it == ops_.end() ? nullptr : &it->second;
}

static std::string group_kind(const NodeInfo& node, const std::vector<const Tensor*>& in) {
  const int64_t group = node.attr_int("group", 1);
  if (group == 1) return "standard";
  if (in.size() > 1 && in[1] && in[0] && in[0]->rank() >= 2 && in[0]->dim(1) == group &&
      in[1]->dim(0) == group)
    return "depthwise";
  return "grouped";
}

void ExecutorProfile::check(const NodeInfo& node, const std::vector<const Tensor*>& inputs) const {
  if (all_ops_) return;
  const std::string& op = node.op_type();
  const OpRule* r = rule(op);
  if (!r) throw_unsupported(op + " is not supported on " + name_);
  // Data inputs are the float tensors plus input 0; shape-like integer
  // inputs (Reshape's shape, Slice's starts...) are not data.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (!t || (i > 0 && !is_float(t->dtype()))) continue;
    // An op of any dtype still has no fp32 datapath on a bf16 executor.
    if (r->dtypes.empty() && t->dtype() == DType::kF32 && float_type_ == DType::kBF16) throw_unsupported(fp32_error_);
    if (r->dtypes.empty() || r->dtypes.count(t->dtype())) continue;
    if (t->dtype() == DType::kF32 && float_type_ == DType::kBF16) throw_unsupported(fp32_error_);
    std::string allowed;
    for (DType d : r->dtypes) allowed += (allowed.empty() ? "" : ", ") + std::string(dtype_name(d));
    throw_unsupported(std::string(dtype_name(t->dtype())) + " " + op + " not supported on " + name_ +
                      " (supports " + allowed + ")" + (r->note.empty() ? "" : ": " + r->note));
  }
  const bool spatial = op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool";
  const std::string why = r->note.empty() ? "" : " (" + r->note + ")";
  if (!r->conv_groups.empty() && (op == "Conv" || op == "ConvTranspose")) {
    const std::string kind = group_kind(node, inputs);
    if (!r->conv_groups.count(kind))
      throw_unsupported(kind + " " + op + " not supported on " + name_ + why);
  }
  if (spatial && !inputs.empty() && inputs[0]) {
    const int64_t srank = inputs[0]->rank() - 2;
    if (!r->spatial_ranks.empty() && !r->spatial_ranks.count(srank))
      throw_unsupported(std::to_string(srank) + "-D " + op + " not supported on " + name_ + why);
    std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
    if (kernel.empty() && inputs.size() > 1 && inputs[1] && inputs[1]->rank() > 2)
      kernel.assign(inputs[1]->shape().begin() + 2, inputs[1]->shape().end());
    for (int64_t k : kernel) {
      if (r->max_kernel && k > *r->max_kernel)
        throw_unsupported("kernel size " + std::to_string(k) + " exceeds the " + name_ + " limit of " +
                          std::to_string(*r->max_kernel) + why);
      if (r->min_kernel && k < *r->min_kernel)
        throw_unsupported("kernel size " + std::to_string(k) + " is below the " + name_ + " minimum of " +
                          std::to_string(*r->min_kernel) + why);
    }
    if (r->min_spatial)
      for (int64_t i = 2; i < inputs[0]->rank(); ++i)
        if (inputs[0]->dim(i) < *r->min_spatial)
          throw_unsupported(op + " on a spatial extent of " + std::to_string(inputs[0]->dim(i)) + " is below the " +
                            name_ + " minimum of " + std::to_string(*r->min_spatial) + why);
    for (int64_t s : node.attr_ints("strides"))
      if (r->max_stride && s > *r->max_stride)
        throw_unsupported("stride " + std::to_string(s) + " exceeds the " + name_ + " limit of " +
                          std::to_string(*r->max_stride) + why);
    for (int64_t d : node.attr_ints("dilations"))
      if (r->max_dilation && d > *r->max_dilation)
        throw_unsupported("dilation " + std::to_string(d) + " exceeds the " + name_ + " limit of " +
                          std::to_string(*r->max_dilation) + why);
  }
  if (r->max_input_elements && !inputs.empty() && inputs[0] && inputs[0]->numel() > *r->max_input_elements)
    throw_unsupported(op + " input of " + std::to_string(inputs[0]->numel()) + " elements exceeds the " + name_ +
                      " limit of " + std::to_string(*r->max_input_elements) + why);
  if (r->max_rank)
    for (const Tensor* t : inputs)
      if (t && t->rank() > *r->max_rank)
        throw_unsupported("rank-" + std::to_string(t->rank()) + " " + op + " exceeds the " + name_ +
                          " limit of rank " + std::to_string(*r->max_rank) + why);
}

LayerCost ExecutorProfile::cost_of(const NodeInfo& node, const std::vector<const Tensor*>& in,
                                   const std::vector<Tensor>& out) const {
  LayerCost c;
  const std::string& op = node.op_type();
  const int64_t out_elems = out.empty() || !out[0].defined() ? 0 : out[0].numel();
  if (op == "Conv" && in.size() > 1 && in[1]) {
    c.macs = static_cast<uint64_t>(out_elems * (in[1]->numel() / std::max<int64_t>(1, in[1]->dim(0))));
  } else if (op == "ConvTranspose" && in.size() > 1 && in[1] && in[0]) {
    c.macs = static_cast<uint64_t>(in[0]->numel() * (in[1]->numel() / std::max<int64_t>(1, in[1]->dim(0))));
  } else if ((op == "Gemm" || op == "MatMul") && in[0] && in[0]->rank() >= 1) {
    int64_t k = in[0]->shape().back();
    if (op == "Gemm" && node.attr_int("transA", 0) && in[0]->rank() == 2) k = in[0]->dim(0);
    c.macs = static_cast<uint64_t>(out_elems * k);
  }
  for (const Tensor* t : in)
    if (t) c.bytes += static_cast<uint64_t>(t->numel()) * dtype_size(t->dtype());
  for (const Tensor& t : out)
    if (t.defined()) {
      c.bytes += static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
      c.elements += static_cast<uint64_t>(t.numel());
    }
  const double compute =
      c.macs ? static_cast<double>(c.macs) / (cost_.macs_per_cycle_per_slice * static_cast<double>(cost_.slices))
             : static_cast<double>(c.elements) / cost_.eltwise_per_cycle;
  const double dma = static_cast<double>(c.bytes) / cost_.dma_bytes_per_cycle;
  c.cycles = static_cast<uint64_t>(cost_.dispatch_overhead_cycles) +
             static_cast<uint64_t>(std::max(compute, dma) + 0.5);
  c.time_ms = static_cast<double>(c.cycles) / (cost_.clock_mhz * 1e3);
  return c;
}

}  // namespace torq::engine
