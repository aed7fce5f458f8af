#include "pipeline/model/layer_nodes.h"

#include <algorithm>
#include <map>
#include <set>

#include <onnx/onnx_pb.h>

#include "pipeline/base/onnx_scope.h"

namespace torq::pipeline {

namespace {

bool default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

// Producer position of every value, and consumer positions.
struct Edges {
  std::map<std::string, int> producer;
  std::map<std::string, std::vector<int>> consumers;
  explicit Edges(const onnx::GraphProto& g) {
    for (int i = 0; i < g.node_size(); ++i) {
      for (const auto& o : g.node(i).output())
        if (!o.empty()) producer[o] = i;
      // An If/Loop also reads the outer-scope values of its subgraphs.
      for (const auto& in : base::node_reads(g.node(i))) consumers[in].push_back(i);
    }
  }
  int producer_of(const std::string& v) const {
    auto it = producer.find(v);
    return it == producer.end() ? -1 : it->second;
  }
};

// Grouping of a QDQ graph: owner[pos] is the compute position of the layer
// owning the node (-1: none); members[compute] the nodes the layer runs.
class Grouping {
 public:
  Grouping(const onnx::GraphProto& g, const Edges& e) : g_(g), e_(e), owner_(g.node_size(), -1) {}

  void build() {
    for (int i = 0; i < g_.node_size(); ++i)
      if (!is_constant_node(g_.node(i)) && !is_qdq_node(g_.node(i))) owner_[i] = i;
    for (int i = 0; i < g_.node_size(); ++i)
      if (is_qdq_node(g_.node(i))) own_trailing(i);
    for (int i = 0; i < g_.node_size(); ++i)
      if (owner_[i] >= 0) {
        members_[owner_[i]].insert(i);
        if (owner_[i] == i) pull_inputs(i, i);
      }
    promote_orphans();
  }

  std::map<int, std::set<int>>& members() { return members_; }
  const std::vector<int>& owner() const { return owner_; }

 private:
  bool feeds_compute(int pos) const {
    for (const auto& o : g_.node(pos).output()) {
      auto it = e_.consumers.find(o);
      if (it == e_.consumers.end()) continue;
      for (int c : it->second)
        if (!is_qdq_node(g_.node(c)) && !is_constant_node(g_.node(c))) return true;
    }
    return false;
  }

  // A Q after an owned node, or a DQ after one that feeds no compute op.
  void own_trailing(int pos) {
    const auto& n = g_.node(pos);
    if (n.input_size() == 0) return;
    const int p = e_.producer_of(n.input(0));
    if (p < 0 || owner_[p] < 0) return;
    if (n.op_type() == "QuantizeLinear" || !feeds_compute(pos)) owner_[pos] = owner_[p];
  }

  // The unowned Q/DQ chain above a layer's node joins the layer.
  void pull_inputs(int layer, int pos) {
    for (const auto& in : g_.node(pos).input()) {
      const int p = in.empty() ? -1 : e_.producer_of(in);
      // A node another layer owns is the layer boundary: its value enters.
      if (p < 0 || !is_qdq_node(g_.node(p)) || owner_[p] >= 0) continue;
      if (members_[layer].insert(p).second) pull_inputs(layer, p);
    }
  }

  // A Q/DQ in no layer (no compute op next to it) is a layer of its own.
  void promote_orphans() {
    std::set<int> placed;
    for (const auto& [c, m] : members_) placed.insert(m.begin(), m.end());
    for (int i = 0; i < g_.node_size(); ++i)
      if (!is_constant_node(g_.node(i)) && !placed.count(i)) {
        owner_[i] = i;
        members_[i].insert(i);
      }
  }

  const onnx::GraphProto& g_;
  const Edges& e_;
  std::vector<int> owner_;
  std::map<int, std::set<int>> members_;
};

std::vector<LayerNodes> plain_layers(const onnx::GraphProto& g) {
  std::vector<LayerNodes> out;
  for (int i = 0; i < g.node_size(); ++i) {
    if (is_constant_node(g.node(i))) continue;
    LayerNodes l;
    l.compute = i;
    l.operator_index = static_cast<int>(out.size());
    l.nodes = l.owned = {i};
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace

bool is_constant_node(const onnx::NodeProto& n) { return n.op_type() == "Constant" && default_domain(n); }

bool is_qdq_node(const onnx::NodeProto& n) {
  return default_domain(n) && (n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear");
}

std::vector<LayerNodes> layer_nodes(const onnx::GraphProto& g) {
  bool qdq = false, compute = false;
  for (const auto& n : g.node()) {
    if (is_constant_node(n)) continue;
    (is_qdq_node(n) ? qdq : compute) = true;
  }
  if (!qdq || !compute) return plain_layers(g);
  const Edges e(g);
  Grouping grouping(g, e);
  grouping.build();
  std::vector<int> non_constant_index(g.node_size(), -1);
  for (int i = 0, k = 0; i < g.node_size(); ++i)
    if (!is_constant_node(g.node(i))) non_constant_index[i] = k++;
  std::vector<LayerNodes> out;
  for (const auto& [c, m] : grouping.members()) {  // map order: graph order of compute nodes
    LayerNodes l;
    l.compute = c;
    l.operator_index = non_constant_index[c];
    l.nodes.assign(m.begin(), m.end());
    for (int p : l.nodes)
      if (grouping.owner()[p] == c) l.owned.push_back(p);
    out.push_back(std::move(l));
  }
  return out;
}

bool has_grouped_layers(const std::vector<LayerNodes>& layers) {
  for (const auto& l : layers)
    if (l.nodes.size() > 1) return true;
  return false;
}

std::vector<int> range_nodes(const std::vector<LayerNodes>& layers, uint32_t first, uint32_t last) {
  std::set<int> s;
  for (uint32_t i = first; i <= last && i < layers.size(); ++i) s.insert(layers[i].nodes.begin(), layers[i].nodes.end());
  return {s.begin(), s.end()};
}

RangeOutputs::RangeOutputs(const onnx::GraphProto& g, const std::vector<LayerNodes>& layers)
    : g_(g), layers_(layers) {
  auto read = [&](const std::string& name, uint32_t layer) {
    auto [it, fresh] = readers_.try_emplace(name, layer, layer);
    if (!fresh) {
      it->second.first = std::min(it->second.first, layer);
      it->second.second = std::max(it->second.second, layer);
    }
  };
  for (size_t i = 0; i < layers.size(); ++i)
    for (int p : layers[i].nodes)
      for (const auto& in : base::node_reads(g.node(p))) read(in, static_cast<uint32_t>(i));
  for (const auto& o : g.output()) read(o.name(), UINT32_MAX);
}

std::vector<std::string> RangeOutputs::operator()(uint32_t first, uint32_t last) const {
  // Read elsewhere: some reader layer lies before first or after last.
  auto read_elsewhere = [&](const std::string& name) {
    auto it = readers_.find(name);
    return it != readers_.end() && (it->second.first < first || it->second.second > last);
  };
  std::vector<int> owned;
  for (uint32_t i = first; i <= last && i < layers_.size(); ++i)
    owned.insert(owned.end(), layers_[i].owned.begin(), layers_[i].owned.end());
  std::sort(owned.begin(), owned.end());
  std::vector<std::string> outs;
  for (int p : owned)
    for (const auto& o : g_.node(p).output())
      if (!o.empty() && read_elsewhere(o)) outs.push_back(o);
  if (outs.empty() && !owned.empty()) outs.push_back(g_.node(owned.back()).output(0));
  return outs;
}

std::vector<std::string> range_outputs(const onnx::GraphProto& g, const std::vector<LayerNodes>& layers,
                                       uint32_t first, uint32_t last) {
  return RangeOutputs(g, layers)(first, last);
}

}  // namespace torq::pipeline
