#include "worker/sim/assigned_module.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "pipeline/base/dtype.h"
#include "pipeline/base/error.h"
#include "pipeline/base/onnx_scope.h"
#include "pipeline/model/mlir.h"
#include "worker/sim/sim_backend.h"

namespace torq::sim {
namespace {

using engine::Tensor;
using pipeline::Executor;

bool is_constant(const onnx::NodeProto& n) {
  return n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx");
}

std::optional<Executor> executor_named(const std::string& s) {
  if (s == "nss") return Executor::kNss;
  if (s == "css") return Executor::kCss;
  if (s == "host") return Executor::kHost;
  return std::nullopt;  // dropped, as the real pass drops an unknown name
}

// The float element type ONNX shape inference gives each value (best
// effort): where a node's result comes back in another float type (an nss
// MatMul widening bf16 to f32), the compiler narrows it to this one.
std::unordered_map<std::string, int32_t> inferred_float_types(const onnx::ModelProto& model) {
  onnx::ModelProto copy = model;
  try {
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, false));
  } catch (const std::exception&) {
  }
  std::unordered_map<std::string, int32_t> out;
  for (const auto* list : {&copy.graph().value_info(), &copy.graph().output()})
    for (const auto& v : *list)
      if (v.type().has_tensor_type()) out[v.name()] = v.type().tensor_type().elem_type();
  return out;
}

// A model of node `pos` alone: its activations as graph inputs (typed from
// `values`), the initializers and Constant nodes it reads copied in.
onnx::ModelProto node_model(const onnx::ModelProto& m, int pos, const std::map<std::string, Tensor>& values,
                            const std::unordered_map<std::string, const onnx::TensorProto*>& inits,
                            const std::unordered_map<std::string, int>& constant_of,
                            std::vector<Tensor>* feeds) {
  onnx::ModelProto sub;
  sub.set_ir_version(m.ir_version());
  *sub.mutable_opset_import() = m.opset_import();
  *sub.mutable_functions() = m.functions();
  auto* g = sub.mutable_graph();
  g->set_name("node");
  const onnx::NodeProto& node = m.graph().node(pos);
  std::set<std::string> seen;
  for (const auto& in : base::node_reads(node)) {
    if (in.empty() || !seen.insert(in).second) continue;
    if (auto it = inits.find(in); it != inits.end()) {
      *g->add_initializer() = *it->second;
    } else if (auto c = constant_of.find(in); c != constant_of.end()) {
      *g->add_node() = m.graph().node(c->second);
    } else if (auto v = values.find(in); v != values.end()) {
      auto* vi = g->add_input();
      vi->set_name(in);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(engine::dtype_to_onnx(v->second.dtype()));
      for (int64_t d : v->second.shape()) tt->mutable_shape()->add_dim()->set_dim_value(d);
      feeds->push_back(v->second);
    } else {
      throw engine::EngineError(engine::ErrorKind::kInvalidInput,
                                "node " + node.op_type() + " '" + node.name() + "' reads '" + in + "', which nothing produced");
    }
  }
  *g->add_node() = node;
  for (const auto& o : node.output()) {
    if (o.empty()) continue;
    auto* vi = g->add_output();
    vi->set_name(o);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(0);
  }
  return sub;
}

}  // namespace

std::vector<std::optional<Executor>> apply_executor_map(const std::string& map_json, const std::string& mlir_text,
                                                        size_t operators) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(map_json);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("executor map: not JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::runtime_error("executor map: the root is not an object");
  if (!j.contains("op_assignments") && !j.contains("ops"))
    throw std::runtime_error("executor map: neither 'op_assignments' nor 'ops'");
  std::map<std::string, std::string> by_location;
  if (j.contains("op_assignments") && j["op_assignments"].is_object())
    for (const auto& [loc, a] : j["op_assignments"].items())
      if (a.is_object() && a.contains("executor") && a["executor"].is_string()) by_location[loc] = a["executor"];
  if (j.contains("ops") && j["ops"].is_object())
    for (const auto& [id, op] : j["ops"].items())
      if (op.is_object() && op.contains("mlir_location") && op["mlir_location"].is_string() &&
          op.contains("recommended_executor") && op["recommended_executor"].is_string())
        by_location[op["mlir_location"]] = op["recommended_executor"];
  std::vector<std::optional<Executor>> out(operators);
  size_t k = 0;
  for (const auto& op : pipeline::mlir_operators(mlir_text, true)) {
    if (op.type == "Constant") continue;
    if (k >= operators) break;
    auto it = by_location.find(std::to_string(op.line) + ":" + std::to_string(op.col));
    if (it != by_location.end()) out[k] = executor_named(it->second);
    ++k;
  }
  return out;
}

AssignedRun run_assigned_module(const onnx::ModelProto& model, const std::vector<std::optional<Executor>>& assignment,
                                engine::Rounding rounding, const std::vector<Tensor>& feeds) {
  const onnx::GraphProto& g = model.graph();
  std::unordered_map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : g.initializer()) inits[t.name()] = &t;
  std::unordered_map<std::string, int> constant_of;
  for (int i = 0; i < g.node_size(); ++i)
    if (is_constant(g.node(i)))
      for (const auto& o : g.node(i).output()) constant_of[o] = i;
  const auto types = inferred_float_types(model);
  std::map<std::string, Tensor> values;
  std::vector<std::string> graph_inputs;
  for (const auto& in : g.input())
    if (!inits.count(in.name())) graph_inputs.push_back(in.name());
  if (graph_inputs.size() != feeds.size())
    throw engine::EngineError(engine::ErrorKind::kInvalidInput, "the function takes " +
                                                                    std::to_string(graph_inputs.size()) + " inputs, " +
                                                                    std::to_string(feeds.size()) + " given");
  for (size_t i = 0; i < feeds.size(); ++i) values.emplace(graph_inputs[i], feeds[i]);

  AssignedRun r;
  size_t k = 0;
  for (int pos = 0; pos < g.node_size(); ++pos) {
    const onnx::NodeProto& node = g.node(pos);
    if (is_constant(node)) continue;
    const bool assigned = k < assignment.size() && assignment[k].has_value();
    const Executor assigned_to = assigned ? *assignment[k] : Executor::kHost;
    ++k;
    std::vector<Tensor> node_feeds;
    const onnx::ModelProto sub = node_model(model, pos, values, inits, constant_of, &node_feeds);
    std::string rejected;
    bool ran = false;
    for (Executor e : pipeline::kExecutorPriority) {
      if (assigned && e != assigned_to) continue;
      engine::SessionOptions so;
      so.threads = 1;
      so.rounding = rounding;
      so.profile = profile_for(e);
      try {
        auto s = engine::Session::from_proto(sub, so);
        std::vector<Tensor> outs = s->run(node_feeds);
        const auto& st = s->last_stats();
        r.sim_ms += st.sim_ms;
        r.stats.push_back(st);
        r.placed.push_back(e);
        size_t o = 0;
        for (const auto& name : node.output()) {
          if (name.empty()) continue;
          Tensor t = std::move(outs.at(o++));
          auto ty = types.find(name);
          if (ty != types.end() && engine::is_float(t.dtype())) {
            const engine::DType want = engine::dtype_from_onnx(ty->second);
            if (engine::is_float(want) && want != t.dtype()) t = engine::cast_tensor(t, want, rounding);
          }
          values.insert_or_assign(name, std::move(t));
        }
        ran = true;
        break;
      } catch (const engine::EngineError& ex) {
        const std::string what = node.op_type() + " '" + (node.name().empty() ? node.output(0) : node.name()) +
                                 "' on " + pipeline::executor_name(e) + ": " + ex.what();
        // An assigned executor that refuses, or any failure that is not a
        // refusal, is the module's; a refusal where the compiler decides
        // moves the node to the next executor.
        if (assigned || ex.kind() != engine::ErrorKind::kUnsupported) throw engine::EngineError(ex.kind(), what);
        rejected += (rejected.empty() ? "" : "; ") + what;
      }
    }
    if (!ran) throw engine::EngineError(engine::ErrorKind::kUnsupported, "no executor runs " + rejected);
  }
  for (const auto& o : g.output()) {
    auto it = values.find(o.name());
    if (it == values.end())
      throw engine::EngineError(engine::ErrorKind::kInvalidInput, "graph output '" + o.name() + "' was not computed");
    r.outputs.push_back(it->second);
  }
  return r;
}

}  // namespace torq::sim
