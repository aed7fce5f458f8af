// ExecutorProfile::check and cost_of: how a profile judges and prices one
// node (profile.h), plain, QOperator or quantized in a QDQ graph.
#include <algorithm>

#include "pipeline/base/error.h"
#include "worker/engine/kernel.h"
#include "worker/engine/profile.h"
#include "worker/engine/quant_ops.h"

namespace torq::engine {

namespace {

// A node as the profile judges it: the op whose rule applies, its inputs in
// that op's order, which of them are data, and how messages name it.
struct Judged {
  std::string op;        // the rule's op: Conv for a QLinearConv
  std::string label;     // "Conv", "Conv (QLinearConv)"
  std::string what;      // label, after the data type when the data are integers: "i8 Conv"
  std::vector<const Tensor*> in;
  std::vector<bool> data;
  bool integer = false;  // input 0 is an integer: the rule's `int:` constraints apply
};

Judged judge(const NodeInfo& node, const std::vector<const Tensor*>& inputs, const QuantView* q) {
  Judged j;
  j.op = j.label = node.op_type();
  if (auto f = qoperator_form(node.op_type(), inputs.size())) {
    j.op = f->float_op;
    j.label = f->float_op + " (" + node.op_type() + ")";
    for (size_t p : f->inputs) j.in.push_back(inputs[p]);
    for (size_t i = 0; i < j.in.size(); ++i) j.data.push_back(!is_accumulator_input(j.op, i));
  } else {
    // Data: input 0 and float inputs (not shape-like integers); in a
    // quantized node's kernel also the integers it reads from fused DQs,
    // but never the bias, which goes into the accumulator, nor a float
    // scalar no DQ wrote (a Clip bound since opset 11: the compiler turns it
    // into an integer of the kernel).
    j.in = inputs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const bool dq = q && i < q->dequantized.size() && q->dequantized[i];
      const bool accumulated = q && is_accumulator_input(j.op, i);
      const bool parameter = q && !dq && i > 0 && inputs[i] && inputs[i]->numel() <= 1;
      j.data.push_back(!accumulated && !parameter &&
                       (i == 0 || dq || (inputs[i] && is_float(inputs[i]->dtype()))));
    }
  }
  j.integer = !j.in.empty() && j.in[0] && is_integer(j.in[0]->dtype());
  j.what = j.integer ? std::string(dtype_name(j.in[0]->dtype())) + " " + j.label : j.label;
  return j;
}

std::string group_kind(const NodeInfo& node, const std::vector<const Tensor*>& in) {
  const int64_t group = node.attr_int("group", 1);
  if (group == 1) return "standard";
  if (in.size() > 1 && in[1] && in[0] && in[0]->rank() >= 2 && in[0]->dim(1) == group &&
      in[1]->dim(0) == group)
    return "depthwise";
  return "grouped";
}

bool is_spatial(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool";
}

// Limits of one rule, reported for one executor.
struct Limits {
  const Judged& j;
  const OpRule& r;
  const std::string& executor;
  std::string why() const { return r.note.empty() ? "" : " (" + r.note + ")"; }
  [[noreturn]] void fail(const std::string& what, int64_t value, const char* bound, int64_t limit,
                         const std::string& extra = "") const {
    throw_unsupported(j.what + " " + what + " " + std::to_string(value) + extra + " " + bound + " the " + executor +
                      " " + (bound[0] == 'e' ? "limit" : "minimum") + " of " + std::to_string(limit) + why());
  }
  void at_most(const std::optional<int64_t>& limit, const std::string& what, int64_t value,
               const std::string& extra = "") const {
    if (limit && value > *limit) fail(what, value, "exceeds", *limit, extra);
  }
  void at_least(const std::optional<int64_t>& limit, const std::string& what, int64_t value) const {
    if (limit && value < *limit) fail(what, value, "is below", *limit);
  }
};

std::vector<int64_t> kernel_of(const NodeInfo& node, const std::vector<const Tensor*>& in) {
  std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  if (kernel.empty() && in.size() > 1 && in[1] && in[1]->rank() > 2)
    kernel.assign(in[1]->shape().begin() + 2, in[1]->shape().end());
  return kernel;
}

void check_spatial(const NodeInfo& node, const Limits& l) {
  const Tensor& x = *l.j.in[0];
  const int64_t srank = x.rank() - 2;
  if (!l.r.spatial_ranks.empty() && !l.r.spatial_ranks.count(srank))
    throw_unsupported(std::to_string(srank) + "-D " + l.j.what + " not supported on " + l.executor + l.why());
  for (int64_t k : kernel_of(node, l.j.in)) {
    l.at_most(l.r.max_kernel, "kernel size", k);
    l.at_least(l.r.min_kernel, "kernel size", k);
  }
  for (int64_t i = 2; i < x.rank(); ++i) l.at_least(l.r.min_spatial, "on a spatial extent of", x.dim(i));
  const std::vector<int64_t> strides = node.attr_ints("strides");
  for (int64_t s : strides) l.at_most(l.r.max_stride, "stride", s);
  for (int64_t d : node.attr_ints("dilations")) l.at_most(l.r.max_dilation, "dilation", d);
  if (std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s > 1; }))
    l.at_most(l.r.max_strided_input_elements, "input of", x.numel(), " elements for a stride > 1");
}

void check_limits(const NodeInfo& node, const Limits& l) {
  const auto& in = l.j.in;
  if (!l.r.conv_groups.empty() && (l.j.op == "Conv" || l.j.op == "ConvTranspose")) {
    const std::string kind = group_kind(node, in);
    if (!l.r.conv_groups.count(kind))
      throw_unsupported(kind + " " + l.j.what + " not supported on " + l.executor + l.why());
  }
  if (is_spatial(l.j.op) && !in.empty() && in[0]) check_spatial(node, l);
  if (!in.empty() && in[0]) l.at_most(l.r.max_input_elements, "input of", in[0]->numel(), " elements");
  for (const Tensor* t : in)
    if (t && l.r.max_rank && t->rank() > *l.r.max_rank)
      throw_unsupported("rank-" + std::to_string(t->rank()) + " " + l.j.what + " exceeds the " + l.executor +
                        " limit of rank " + std::to_string(*l.r.max_rank) + l.why());
}

uint64_t macs_of(const std::string& op, const NodeInfo& node, const std::vector<const Tensor*>& in,
                 int64_t out_elems) {
  if (op == "Conv" && in.size() > 1 && in[1])
    return static_cast<uint64_t>(out_elems * (in[1]->numel() / std::max<int64_t>(1, in[1]->dim(0))));
  if (op == "ConvTranspose" && in.size() > 1 && in[1] && in[0])
    return static_cast<uint64_t>(in[0]->numel() * (in[1]->numel() / std::max<int64_t>(1, in[1]->dim(0))));
  if ((op == "Gemm" || op == "MatMul") && !in.empty() && in[0] && in[0]->rank() >= 1) {
    int64_t k = in[0]->shape().back();
    if (op == "Gemm" && node.attr_int("transA", 0) && in[0]->rank() == 2) k = in[0]->dim(0);
    return static_cast<uint64_t>(out_elems * k);
  }
  return 0;
}

uint64_t bytes_of(int64_t numel, DType t) { return static_cast<uint64_t>(numel) * dtype_size(t); }

}  // namespace

void ExecutorProfile::check(const NodeInfo& node, const std::vector<const Tensor*>& inputs,
                            const QuantView* quant) const {
  if (all_ops()) return;
  const Judged j = judge(node, inputs, quant);
  const OpRule* r = rule(j.op);
  if (!r) throw_unsupported(j.what + " is not supported on " + name());
  for (size_t i = 0; i < j.in.size(); ++i) {
    const Tensor* t = j.in[i];
    if (!t || !j.data[i]) continue;
    // An op of any dtype still has no fp32 datapath on a bf16 executor.
    if (t->dtype() == DType::kF32 && float_type() == DType::kBF16 && (r->dtypes.empty() || !r->dtypes.count(t->dtype())))
      throw_unsupported(fp32_error());
    if (r->dtypes.empty() || r->dtypes.count(t->dtype())) continue;
    std::string allowed;
    for (DType d : r->dtypes) allowed += (allowed.empty() ? "" : ", ") + std::string(dtype_name(d));
    throw_unsupported(std::string(dtype_name(t->dtype())) + " " + j.label + " not supported on " + name() +
                      " (supports " + allowed + ")" + (r->note.empty() ? "" : ": " + r->note));
  }
  check_limits(node, Limits{j, j.integer && r->int_rule ? *r->int_rule : *r, name()});
}

LayerCost ExecutorProfile::cost_of(const NodeInfo& node, const std::vector<const Tensor*>& in,
                                   const std::vector<Tensor>& out, const QuantView* quant) const {
  const Judged j = judge(node, in, quant);
  LayerCost c;
  const int64_t out_elems = out.empty() || !out[0].defined() ? 0 : out[0].numel();
  c.macs = macs_of(j.op, node, j.in, out_elems);
  c.integer_macs = c.macs && j.integer;
  for (const Tensor* t : in)
    if (t) c.bytes += bytes_of(t->numel(), t->dtype());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined()) continue;
    const bool requantized = quant && i < quant->outputs.size() && quant->outputs[i] != DType::kUndefined;
    c.bytes += bytes_of(out[i].numel(), requantized ? quant->outputs[i] : out[i].dtype());
    c.elements += static_cast<uint64_t>(out[i].numel());
  }
  const double dma = static_cast<double>(c.bytes) / cost().dma_bytes_per_cycle;
  c.cycles = static_cast<uint64_t>(cost().dispatch_overhead_cycles) +
             static_cast<uint64_t>(std::max(cost().compute_cycles(c), dma) + 0.5);
  c.time_ms = static_cast<double>(c.cycles) / (cost().clock_mhz * 1e3);
  return c;
}

}  // namespace torq::engine
