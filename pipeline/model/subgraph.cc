#include "pipeline/model/subgraph.h"

#include <map>
#include <set>

#include <onnx/onnx_pb.h>

#include "pipeline/model/model_import.h"
#include "pipeline/base/onnx_scope.h"
#include "pipeline/base/yaml_strict.h"

namespace torq::pipeline {

namespace {

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

uint32_t resolve_layer(const ImportedModel& model, const std::string& ref, const std::string& flag) {
  const auto& layers = model.layers();
  if (all_digits(ref)) {
    const size_t i = std::stoul(ref);
    if (i < layers.size()) return static_cast<uint32_t>(i);
    throw PipelineError(flag + " '" + ref + "': layer index out of range (" + model.name() + " has " +
                        std::to_string(layers.size()) + " layers, 0.." + std::to_string(layers.size() - 1) + ")");
  }
  for (const auto& l : layers)
    if (l.id == ref) return static_cast<uint32_t>(l.index);
  for (const auto& l : layers)
    for (int p : model.layer_nodes()[static_cast<size_t>(l.index)].owned)
      for (const auto& o : model.proto().graph().node(p).output())
        if (o == ref) return static_cast<uint32_t>(l.index);
  std::vector<std::string> ids;
  for (const auto& l : layers) ids.push_back(l.id);
  std::string near;
  for (const auto& c : engine::closest(ref, ids, 5)) near += (near.empty() ? "" : ", ") + c;
  throw PipelineError(flag + " '" + ref + "': no such layer in " + model.name() +
                      " (give a layer id, an output name or a layer index); closest layer ids: " + near);
}

LayerRange resolve_range(const ImportedModel& model, const std::string& from, const std::string& to) {
  LayerRange r{resolve_layer(model, from, "--subgraph-from"), resolve_layer(model, to, "--subgraph-to")};
  if (r.first > r.last)
    throw PipelineError("--subgraph-from '" + from + "' (layer " + std::to_string(r.first) +
                        ") comes after --subgraph-to '" + to + "' (layer " + std::to_string(r.last) + ")");
  return r;
}

std::string subgraph_name(const std::string& model_name, const LayerRange& r) {
  return model_name + "_subgraph_" + std::to_string(r.first) + "_" + std::to_string(r.last);
}

std::vector<LayerInfo> subgraph_layers(const ImportedModel& model, const LayerRange& r) {
  std::vector<LayerInfo> out;
  for (uint32_t i = r.first; i <= r.last; ++i) {
    LayerInfo l = model.layers()[i];
    l.index = static_cast<int>(i - r.first);
    l.mlir_location.clear();
    out.push_back(l);
  }
  return out;
}

onnx::ModelProto extract_subgraph(const ImportedModel& model, const LayerRange& r) {
  const auto& g = model.proto().graph();
  const std::vector<int> nodes = range_nodes(model.layer_nodes(), r.first, r.last);
  std::map<std::string, const onnx::ValueInfoProto*> types;
  for (const auto& v : g.input()) types[v.name()] = &v;
  for (const auto& v : g.value_info()) types[v.name()] = &v;
  for (const auto& v : g.output()) types[v.name()] = &v;
  std::map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : g.initializer()) inits[t.name()] = &t;
  for (const auto& n : g.node())  // Constant nodes become initializers
    if (n.op_type() == "Constant" && n.output_size())
      for (const auto& a : n.attribute())
        if (a.name() == "value" && a.has_t()) inits.emplace(n.output(0), &a.t());

  onnx::ModelProto sub;
  sub.set_ir_version(model.proto().ir_version());
  *sub.mutable_opset_import() = model.proto().opset_import();
  auto* sg = sub.mutable_graph();
  sg->set_name(g.name() + "_subgraph");
  std::set<std::string> produced, entered;
  auto add_typed = [&](onnx::ValueInfoProto* v, const std::string& name) {
    auto t = types.find(name);
    if (t != types.end()) *v = *t->second;
    v->set_name(name);
  };
  for (int i : nodes) {
    const auto& node = g.node(i);
    for (const auto& in : base::node_reads(node)) {  // an If's outer-scope reads enter too
      if (produced.count(in) || entered.count(in)) continue;
      entered.insert(in);
      if (auto it = inits.find(in); it != inits.end()) {
        auto* t = sg->add_initializer();
        *t = *it->second;
        t->set_name(in);
      } else {
        add_typed(sg->add_input(), in);
      }
    }
    *sg->add_node() = node;
    for (const auto& o : node.output()) produced.insert(o);
  }
  for (const auto& o : range_outputs(g, model.layer_nodes(), r.first, r.last)) add_typed(sg->add_output(), o);
  for (const auto& v : g.value_info())
    if (produced.count(v.name())) *sg->add_value_info() = v;
  return sub;
}

}  // namespace torq::pipeline
