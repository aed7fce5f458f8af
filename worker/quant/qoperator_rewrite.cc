#include "worker/quant/qoperator_rewrite.h"

#include <cmath>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "worker/quant/qdq_graph.h"
#include "worker/quant/qoperator_ops.h"

namespace torq::quant {
namespace {

// Node index -> the nodes written in its place (none: removed).
using Edits = std::map<int, std::vector<onnx::NodeProto>>;

onnx::GraphProto applied(const onnx::GraphProto& g, const Edits& edits) {
  onnx::GraphProto out = g;
  out.clear_node();
  for (int i = 0; i < g.node_size(); ++i) {
    auto it = edits.find(i);
    if (it == edits.end()) *out.add_node() = g.node(i);
    else
      for (const auto& n : it->second) *out.add_node() = n;
  }
  return out;
}

int64_t default_opset(const onnx::ModelProto& m) {
  for (const auto& imp : m.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx") return imp.version();
  return 0;
}

// [min, max] of a Relu, or of a Clip (attributes before opset 11, initializer
// inputs from 11); nullopt when a bound is not a constant.
std::optional<std::pair<float, float>> clamp_bounds(const QdqGraph& g, const onnx::NodeProto& n, int64_t opset) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::pair<float, float> b{-inf, inf};
  if (n.op_type() == "Relu") return std::pair<float, float>{0.f, inf};
  if (opset < 11) {
    for (const auto& a : n.attribute()) {
      if (a.name() == "min") b.first = a.f();
      if (a.name() == "max") b.second = a.f();
    }
    return b;
  }
  for (int i = 1; i < n.input_size() && i < 3; ++i) {
    if (n.input(i).empty()) continue;
    const std::vector<float> v = g.floats(n.input(i));
    if (v.size() != 1) return std::nullopt;
    (i == 1 ? b.first : b.second) = v[0];
  }
  return b;
}

// True when quantizing to p already clamps to [lo, hi]: lo maps to -128 and
// hi to 127 (dividing in fp32, as QuantizeLinear does).
bool saturation_clamps(std::pair<float, float> bounds, QParams p) {
  const auto q = [p](float v) { return std::nearbyint(v / p.scale) + static_cast<float>(p.zero_point); };
  return q(bounds.first) <= -128.f && q(bounds.second) >= 127.f;
}

// Q1 -> DQ1 -> clamp -> Q2 becomes Q2 reading Q1's input, when nothing else
// reads what is removed and saturation is the clamp.
bool fold_clamp(const QdqGraph& g, int r, int64_t opset, Edits* edits) {
  const onnx::NodeProto& n = g.node(r);
  const int q2 = g.sole_quantizer(n.output(0));
  const int dq1 = g.producer(n.input(0));
  if (q2 < 0 || dq1 < 0 || g.node(dq1).op_type() != "DequantizeLinear" || g.consumers(n.input(0)).size() != 1 ||
      g.is_graph_output(n.input(0)))
    return false;
  const int q1 = g.producer(g.node(dq1).input(0));
  if (q1 < 0 || g.node(q1).op_type() != "QuantizeLinear" || g.consumers(g.node(q1).output(0)).size() != 1) return false;
  const auto bounds = clamp_bounds(g, n, opset);
  const auto p = g.per_tensor_params(g.quantized_by(q2));
  if (!bounds || !p || !saturation_clamps(*bounds, *p)) return false;
  for (int i : {q1, dq1, r, q2})
    if (edits->count(i)) return false;
  onnx::NodeProto q = g.node(q2);
  q.set_input(0, g.node(q1).input(0));
  (*edits)[q1] = {};
  (*edits)[dq1] = {};
  (*edits)[r] = {};
  (*edits)[q2] = {q};
  return true;
}

onnx::GraphProto fold_clamps(const onnx::GraphProto& g, int64_t opset, QOperatorResult* r) {
  const QdqGraph index(g);
  Edits edits;
  for (int i = 0; i < g.node_size(); ++i) {
    const std::string& op = g.node(i).op_type();
    if ((op == "Relu" || op == "Clip") && g.node(i).domain().empty() && fold_clamp(index, i, opset, &edits))
      ++r->folded[op];
  }
  return applied(g, edits);
}

// The group around node i, when a QuantizeLinear alone reads its output.
std::optional<QdqGroup> group_at(const QdqGraph& g, int i) {
  const onnx::NodeProto& n = g.node(i);
  if (!has_integer_form(n.op_type()) || n.output_size() != 1) return std::nullopt;
  QdqGroup grp;
  grp.node = i;
  grp.quantizer = g.sole_quantizer(n.output(0));
  if (grp.quantizer < 0) return std::nullopt;
  grp.out = g.quantized_by(grp.quantizer);
  for (const auto& in : n.input()) grp.in.push_back(in.empty() ? std::nullopt : g.dequantized(in));
  return grp;
}

onnx::GraphProto to_integer_ops(const onnx::GraphProto& g, int64_t opset, QOperatorResult* r) {
  const QdqGraph index(g);
  Edits edits;
  std::vector<onnx::TensorProto> inits;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto grp = group_at(index, i);
    auto form = grp ? integer_form(index, *grp, opset) : std::nullopt;
    if (!form) continue;
    ++(form->on_int8 ? r->on_int8 : r->integer_ops)[form->op];
    edits[i] = std::move(form->nodes);
    edits[grp->quantizer] = {};
    for (auto& t : form->initializers) inits.push_back(std::move(t));
  }
  onnx::GraphProto out = applied(g, edits);
  for (auto& t : inits) *out.add_initializer() = std::move(t);
  return out;
}

// Float ops still reading a DequantizeLinear output, by type.
void count_stayed_qdq(QOperatorResult* r) {
  const QdqGraph g(r->model.graph());
  for (const auto& n : r->model.graph().node()) {
    if (!n.domain().empty() || !quantizable_ops().count(n.op_type())) continue;
    for (const auto& in : n.input())
      if (g.dequantized(in)) {
        ++r->stayed_qdq[n.op_type()];
        break;
      }
  }
}

// The int8 tensor (and its parameters) behind each dequantized tensor of the
// QDQ model, where the QOperator model still computes it.
void map_quantized(const QdqResult& qdq, QOperatorResult* r) {
  const QdqGraph before(qdq.model.graph()), after(r->model.graph());
  for (const auto& [tensor, dq] : qdq.dequantized) {
    const auto q = before.dequantized(dq);
    const auto p = q ? before.per_tensor_params(*q) : std::nullopt;
    if (p && after.producer(q->q) >= 0) r->quantized[tensor] = QuantizedTensor{q->q, *p};
  }
}

void import_microsoft_domain(onnx::ModelProto* m) {
  bool used = false, imported = false;
  for (const auto& n : m->graph().node()) used = used || n.domain() == "com.microsoft";
  for (const auto& imp : m->opset_import()) imported = imported || imp.domain() == "com.microsoft";
  if (!used || imported) return;
  auto* imp = m->add_opset_import();
  imp->set_domain("com.microsoft");
  imp->set_version(1);
}

}  // namespace

QOperatorResult to_qoperator(const QdqResult& qdq) {
  QOperatorResult r;
  r.model = qdq.model;
  const int64_t opset = default_opset(qdq.model);
  onnx::GraphProto g = to_integer_ops(fold_clamps(qdq.model.graph(), opset, &r), opset, &r);
  prune_unread(&g);
  *r.model.mutable_graph() = std::move(g);
  import_microsoft_domain(&r.model);
  count_stayed_qdq(&r);
  map_quantized(qdq, &r);
  return r;
}

}  // namespace torq::quant
