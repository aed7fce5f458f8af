#include "worker/quant/qdq_graph.h"

#include "worker/engine/tensor_io.h"

namespace torq::quant {

QdqGraph::QdqGraph(const onnx::GraphProto& g) : g_(g) {
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& in : g.node(i).input())
      if (!in.empty()) consumers_[in].push_back(i);
    for (const auto& out : g.node(i).output())
      if (!out.empty()) producer_[out] = i;
  }
  for (const auto& t : g.initializer()) inits_[t.name()] = &t;
  for (const auto& o : g.output()) outputs_.insert(o.name());
}

int QdqGraph::producer(const std::string& tensor) const {
  auto it = producer_.find(tensor);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<int>& QdqGraph::consumers(const std::string& tensor) const {
  static const std::vector<int> none;
  auto it = consumers_.find(tensor);
  return it == consumers_.end() ? none : it->second;
}

const onnx::TensorProto* QdqGraph::initializer(const std::string& name) const {
  auto it = inits_.find(name);
  return it == inits_.end() ? nullptr : it->second;
}

std::optional<QTensor> QdqGraph::dequantized(const std::string& tensor) const {
  const int p = producer(tensor);
  if (p < 0 || node(p).op_type() != "DequantizeLinear" || node(p).input_size() < 3) return std::nullopt;
  const onnx::NodeProto& dq = node(p);
  QTensor t{dq.input(0), dq.input(1), dq.input(2), std::nullopt};
  for (const auto& a : dq.attribute())
    if (a.name() == "axis" && per_tensor_params(t) == std::nullopt) t.axis = a.i();
  return t;
}

int QdqGraph::sole_quantizer(const std::string& tensor) const {
  const auto& c = consumers(tensor);
  if (c.size() != 1 || is_graph_output(tensor)) return -1;
  const onnx::NodeProto& q = node(c[0]);
  return q.op_type() == "QuantizeLinear" && q.input_size() >= 3 && q.input(0) == tensor ? c[0] : -1;
}

QTensor QdqGraph::quantized_by(int i) const {
  const onnx::NodeProto& q = node(i);
  return QTensor{q.output(0), q.input(1), q.input(2), std::nullopt};
}

std::vector<float> QdqGraph::floats(const std::string& name) const {
  const onnx::TensorProto* t = initializer(name);
  return t ? engine::tensor_from_proto(*t).to_float_vector() : std::vector<float>{};
}

std::vector<int32_t> QdqGraph::ints(const std::string& name) const {
  const onnx::TensorProto* t = initializer(name);
  if (!t) return {};
  const engine::Tensor v = engine::tensor_from_proto(*t);
  std::vector<int32_t> out(static_cast<size_t>(v.numel()));
  for (int64_t i = 0; i < v.numel(); ++i) out[static_cast<size_t>(i)] = static_cast<int32_t>(v.get_as_int(i));
  return out;
}

std::optional<QParams> QdqGraph::per_tensor_params(const QTensor& t) const {
  const onnx::TensorProto* s = initializer(t.scale);
  const onnx::TensorProto* z = initializer(t.zero_point);
  if (!s || !z || s->dims_size() != 0 || z->dims_size() != 0) return std::nullopt;
  return QParams{floats(t.scale).at(0), ints(t.zero_point).at(0)};
}

bool QdqGraph::is_initializer_of(const std::string& name, int32_t type) const {
  const onnx::TensorProto* t = initializer(name);
  return t && t->data_type() == type;
}

namespace {

template <class Field, class Keep>
void keep_if(Field* field, Keep keep) {
  Field kept;
  for (auto& e : *field)
    if (keep(e)) *kept.Add() = std::move(e);
  field->Swap(&kept);
}

}  // namespace

void prune_unread(onnx::GraphProto* g) {
  std::set<std::string> read, present;
  for (const auto& o : g->output()) read.insert(o.name());
  std::vector<bool> keep(static_cast<size_t>(g->node_size()));
  for (int i = g->node_size() - 1; i >= 0; --i) {
    const onnx::NodeProto& n = g->node(i);
    bool used = n.op_type() != "QuantizeLinear" && n.op_type() != "DequantizeLinear";
    for (const auto& o : n.output()) used = used || read.count(o);
    keep[static_cast<size_t>(i)] = used;
    if (used) read.insert(n.input().begin(), n.input().end());
  }
  int i = 0;
  keep_if(g->mutable_node(), [&](const onnx::NodeProto&) { return keep[static_cast<size_t>(i++)]; });
  std::set<std::string> dropped;
  keep_if(g->mutable_initializer(), [&](const onnx::TensorProto& t) {
    if (!read.count(t.name())) dropped.insert(t.name());
    return read.count(t.name()) > 0;
  });
  keep_if(g->mutable_input(), [&](const onnx::ValueInfoProto& v) { return !dropped.count(v.name()); });
  for (const auto& n : g->node()) present.insert(n.output().begin(), n.output().end());
  keep_if(g->mutable_value_info(), [&](const onnx::ValueInfoProto& v) { return present.count(v.name()) > 0; });
}


}  // namespace torq::quant
