#include "worker/engine/session.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "pipeline/base/file_bytes.h"
#include "worker/engine/act_fusion.h"
#include "worker/engine/bias_fusion.h"
#include "worker/engine/gelu_fusion.h"
#include "worker/engine/dnnl_util.h"
#include "pipeline/base/error.h"
#include "worker/engine/kernel.h"
#include "worker/engine/quant_fusion.h"
#include "worker/engine/quant_ops.h"
#include "pipeline/base/onnx_scope.h"
#include "worker/engine/tensor_io.h"

namespace torq::engine {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Converts a float tensor (plain or blocked) to another float type.
Tensor convert_float(const Tensor& t, DType to, Rounding r, DnnlEnv& env) {
  if (t.dtype() == to) return t;
  if (t.is_plain()) return cast_tensor(t, to, r);
  dnnl_memory_desc_t d = t.layout()->md.data;
  if (to == DType::kBF16 && t.dtype() == DType::kF32) {
    d.data_type = dnnl_bf16;
    dnnl::memory::desc md(d);
    Tensor out = alloc_for_md(md, to, t.shape());
    convert_f32_to_bf16(static_cast<const float*>(t.raw()), static_cast<bf16_t*>(out.raw()),
                        t.nbytes() / sizeof(float), r);
    return out;
  }
  if (to == DType::kF32 && t.dtype() == DType::kBF16) {
    d.data_type = dnnl_f32;
    dnnl::memory::desc md(d);
    Tensor out = alloc_for_md(md, to, t.shape());
    convert_bf16_to_f32(static_cast<const bf16_t*>(t.raw()), static_cast<float*>(out.raw()),
                        t.nbytes() / sizeof(bf16_t));
    return out;
  }
  return cast_tensor(to_plain(t, env), to, r);
}

void add_cost(LayerCost& c, const LayerCost& nested, const CostModel& m) {
  c.macs += nested.macs;
  c.elements += nested.elements;
  c.bytes += nested.bytes;
  c.cycles += nested.cycles;
  c.time_ms = static_cast<double>(c.cycles) / (m.clock_mhz * 1e3);
}

// True when every present input is of `type`.
bool all_of_type(const std::vector<const Tensor*>& in, DType type) {
  for (const Tensor* t : in)
    if (t && t->dtype() != type) return false;
  return true;
}

std::string onnx_type_name(int32_t t) {
  DType d = dtype_from_onnx(t);
  return d == DType::kUndefined ? "onnx type " + std::to_string(t) : dtype_name(d);
}

}  // namespace

struct Session::Impl {
  SessionOptions opts;
  int opset = 0;
  std::map<std::string, int> domain_opsets{{"com.microsoft", 1}};  // opset of each non-default domain
  GraphScope scope;  // what this graph's subgraphs load in
  DnnlEnv env;
  Rounding rounding = Rounding::kNearestEven;

  struct Node {
    std::unique_ptr<onnx::NodeProto> proto;  // owned copy: NodeInfo points into it
    std::unique_ptr<NodeInfo> info;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> in, out;  // value ids (-1: omitted)
    std::vector<CachedReorder> reorders;
    const OpRule* rule = nullptr;
    QuantRole role = QuantRole::kPlain;
    bool folded = false;
  };
  std::vector<Node> nodes;  // topological order
  std::map<std::string, int> ids;
  std::vector<std::string> names;
  std::vector<Tensor> constants;   // by value id (undefined if not constant)
  std::vector<int> last_use;       // node index of last consumer
  std::vector<bool> is_output;
  std::vector<ValueInfo> inputs, outputs;
  std::vector<int> input_ids, output_ids;
  QuantFusion fusion;  // the integer kernels of a QDQ graph
  std::vector<ActChain> chains;  // activations fused into their Conv (act_fusion.h)
  std::vector<int> chain_of;     // by node: the chain it heads, or -1
  RunStats stats;

  int id_of(const std::string& name) {
    auto it = ids.find(name);
    if (it != ids.end()) return it->second;
    const int id = static_cast<int>(names.size());
    ids.emplace(name, id);
    names.push_back(name);
    constants.emplace_back();
    return id;
  }

  void load(const onnx::ModelProto& model);
  void load_graph(const onnx::GraphProto& g, bool subgraph);
  void plan_quant();
  void release_inputs(const Node& n, size_t i, std::vector<Tensor>& values) const;
  void plan_act();
  void execute(Node& n, std::vector<Tensor>& values, bool folding, NodeStat* stat, const ActChain* chain = nullptr,
               std::map<int, NodeStat>* fused_stats = nullptr);
  void finish_chain(const ActChain& c, std::vector<Tensor>& outs, std::vector<Tensor>& values,
                    std::map<int, NodeStat>* fused_stats);
  std::vector<const Tensor*> kernel_view(const Node& n, const std::vector<Tensor>& values,
                                         const std::vector<const Tensor*>& raw_in, QuantView* qv) const;
  DType quantized_type(int q_node, const std::vector<Tensor>& values) const;
  void convert_inputs(Node& n, const std::vector<const Tensor*>& raw_in, std::vector<Tensor>& conv,
                      std::vector<const Tensor*>& in, bool any_bf16);
  void round_outputs(const Node& n, std::vector<Tensor>& outs, bool any_bf16);
};

static ValueInfo value_info_of(const onnx::ValueInfoProto& v, bool to_bf16, bool allow_untyped = false) {
  ValueInfo vi;
  vi.name = v.name();
  if (allow_untyped && !v.has_type()) return vi;  // a subgraph output may leave its type to inference
  if (!v.type().has_tensor_type())
    throw EngineError(ErrorKind::kUnsupported, "graph value '" + v.name() + "' is not a tensor");
  const auto& tt = v.type().tensor_type();
  vi.dtype = dtype_from_onnx(tt.elem_type());
  if (vi.dtype == DType::kUndefined && !(allow_untyped && tt.elem_type() == 0))
    throw EngineError(ErrorKind::kUnsupported,
                      "graph value '" + v.name() + "' has unsupported type " + onnx_type_name(tt.elem_type()));
  if (to_bf16 && vi.dtype == DType::kF32) vi.dtype = DType::kBF16;
  if (tt.has_shape())
    for (const auto& d : tt.shape().dim()) vi.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return vi;
}

void Session::Impl::load(const onnx::ModelProto& model) {
  // Opset of each non-default domain the engine has kernels for.
  for (const auto& imp : model.opset_import()) {
    if (imp.domain().empty() || imp.domain() == "ai.onnx") opset = static_cast<int>(imp.version());
    else if (domain_opsets.count(imp.domain())) domain_opsets[imp.domain()] = static_cast<int>(imp.version());
  }
  if (!model.has_graph()) throw EngineError(ErrorKind::kInvalidModel, "model has no graph");
  load_graph(model.graph(), /*subgraph=*/false);
}

void Session::Impl::load_graph(const onnx::GraphProto& g, bool subgraph) {
  if (opts.threads > 0) omp_set_num_threads(opts.threads);
  rounding = opts.profile && opts.profile->rounding() ? *opts.profile->rounding() : opts.rounding;
  const bool to_bf16 = opts.numerics == Numerics::kBF16;
  scope = GraphScope{opts, opset, domain_opsets};
  const auto known_domain = [&](const std::string& d) {
    return d.empty() || d == "ai.onnx" || domain_opsets.count(d);
  };
  for (const auto& np : g.node())
    if (!known_domain(np.domain()))
      throw EngineError(ErrorKind::kUnsupported, "operator domain '" + np.domain() + "' is not supported",
                        np.name().empty() && np.output_size() ? np.output(0) : np.name(), np.op_type());
  if (opset == 0) throw EngineError(ErrorKind::kInvalidModel, "model imports no default-domain opset");

  // Float initializers that act as shapes (Resize/Upsample scales and roi)
  // keep their fp32 values in bf16 numerics: rounding 0.6 would change the
  // output size, not the precision. So do quantization scales: rounding
  // them would change the integers, which an integer kernel computes exactly.
  std::set<std::string> shape_like;
  for (const auto& np : g.node()) {
    if (np.op_type() == "Resize")
      for (int i = 1; i < std::min(3, np.input_size()); ++i) shape_like.insert(np.input(i));
    if (np.op_type() == "Upsample" && np.input_size() > 1) shape_like.insert(np.input(1));
    for (size_t i : scale_inputs(np.op_type(), static_cast<size_t>(np.input_size())))
      shape_like.insert(np.input(static_cast<int>(i)));
  }
  for (const auto& init : g.initializer()) {
    const int id = id_of(init.name());
    Tensor t;
    try {
      t = tensor_from_proto(init);
    } catch (const EngineError& e) {
      throw EngineError(e.kind(), "initializer '" + init.name() + "': " + e.reason());
    }
    if (to_bf16 && t.dtype() == DType::kF32 && !shape_like.count(init.name()))
      t = cast_tensor(t, DType::kBF16, rounding);
    constants[static_cast<size_t>(id)] = t;
  }
  for (const auto& in : g.input()) {
    const int id = id_of(in.name());
    if (constants[static_cast<size_t>(id)].defined()) continue;  // initializer-backed
    inputs.push_back(value_info_of(in, to_bf16));
    input_ids.push_back(id);
  }
  // A subgraph's outer-scope reads are inputs of any type, fed by the
  // kernel of the node that holds it.
  if (subgraph)
    for (const auto& name : outer_scope_reads(g)) {
      input_ids.push_back(id_of(name));
      inputs.push_back(ValueInfo{name, DType::kUndefined, {}});
    }
  std::vector<int> produced_by(names.size(), -2);  // -2 unknown, -1 input/constant
  for (int id : input_ids) produced_by[static_cast<size_t>(id)] = -1;
  for (size_t i = 0; i < constants.size(); ++i)
    if (constants[i].defined()) produced_by[i] = -1;

  // Nodes: resolve kernels and value ids.
  std::vector<Node> raw;
  const auto& registry = KernelRegistry::global();
  for (const auto& np : g.node()) {
    Node n;
    n.proto = std::make_unique<onnx::NodeProto>(np);
    const std::string& op = np.op_type();
    const bool default_domain = np.domain().empty() || np.domain() == "ai.onnx";
    const int node_opset = default_domain ? opset : domain_opsets.at(np.domain());
    n.info = std::make_unique<NodeInfo>(*n.proto, node_opset);
    n.info->set_scope(&scope);
    const std::string key = kernel_key(np.domain(), op);
    const KernelFactory* f = registry.find(key, node_opset);
    if (!f)
      throw EngineError(ErrorKind::kUnsupported,
                        registry.knows(key) ? key + " is not supported at opset " + std::to_string(node_opset)
                                            : "operator " + key + " is not supported",
                        n.info->name(), op);
    try {
      n.kernel = (*f)(*n.info);
    } catch (const EngineError& e) {
      throw EngineError(e.kind(), e.reason(), n.info->name(), op);
    } catch (const std::exception& e) {
      throw EngineError(ErrorKind::kInvalidModel, e.what(), n.info->name(), op);
    }
    for (const auto& i : np.input()) n.in.push_back(i.empty() ? -1 : id_of(i));
    for (const auto& o : np.output()) n.out.push_back(o.empty() ? -1 : id_of(o));
    // The outer-scope values its subgraphs read: implicit inputs (pipeline/base/onnx_scope.h).
    for (const auto& name : outer_scope_reads(np)) n.in.push_back(id_of(name));
    n.reorders.resize(n.in.size());
    if (opts.profile) n.rule = opts.profile->rule(op);
    raw.push_back(std::move(n));
  }
  produced_by.resize(names.size(), -2);
  for (size_t i = 0; i < raw.size(); ++i)
    for (int o : raw[i].out)
      if (o >= 0) {
        if (produced_by[static_cast<size_t>(o)] != -2)
          throw EngineError(ErrorKind::kInvalidModel, "value '" + names[static_cast<size_t>(o)] +
                                                          "' is produced more than once");
        produced_by[static_cast<size_t>(o)] = static_cast<int>(i);
      }
  // Topological order (Kahn, stable with respect to model order).
  std::vector<int> pending(raw.size(), 0);
  std::vector<std::vector<int>> consumers(raw.size());
  for (size_t i = 0; i < raw.size(); ++i)
    for (int v : raw[i].in) {
      if (v < 0) continue;
      const int p = produced_by[static_cast<size_t>(v)];
      if (p == -2)
        throw EngineError(ErrorKind::kInvalidModel,
                          "input '" + names[static_cast<size_t>(v)] +
                              "' is not produced by any node, initializer or graph input",
                          raw[i].info->name(), raw[i].info->op_type());
      if (p >= 0) {
        ++pending[i];
        consumers[static_cast<size_t>(p)].push_back(static_cast<int>(i));
      }
    }
  std::vector<int> order;
  std::vector<int> ready;
  for (size_t i = 0; i < raw.size(); ++i)
    if (pending[i] == 0) ready.push_back(static_cast<int>(i));
  while (!ready.empty()) {
    std::sort(ready.begin(), ready.end(), std::greater<int>());
    const int i = ready.back();
    ready.pop_back();
    order.push_back(i);
    for (int c : consumers[static_cast<size_t>(i)])
      if (--pending[static_cast<size_t>(c)] == 0) ready.push_back(c);
  }
  if (order.size() != raw.size()) throw EngineError(ErrorKind::kInvalidModel, "graph has a cycle");
  for (int i : order) nodes.push_back(std::move(raw[static_cast<size_t>(i)]));
  plan_quant();

  for (const auto& out : g.output()) {
    ValueInfo vi = value_info_of(out, to_bf16, /*allow_untyped=*/true);
    auto it = ids.find(out.name());
    if (it == ids.end() || (produced_by[static_cast<size_t>(it->second)] == -2))
      throw EngineError(ErrorKind::kInvalidModel, "graph output '" + out.name() + "' is never produced");
    outputs.push_back(vi);
    output_ids.push_back(it->second);
  }
  is_output.assign(names.size(), false);
  for (int id : output_ids) is_output[static_cast<size_t>(id)] = true;

  // Fold nodes whose inputs are all constant (Constant nodes, shape
  // arithmetic on initializers): computed once here, never per run.
  std::vector<Tensor> values = constants;
  for (auto& n : nodes) {
    bool all_const = true;
    for (int v : n.in)
      if (v >= 0 && !constants[static_cast<size_t>(v)].defined()) all_const = false;
    if (!all_const) continue;
    execute(n, values, /*folding=*/true, nullptr);
    for (int o : n.out)
      if (o >= 0) constants[static_cast<size_t>(o)] = to_plain(values[static_cast<size_t>(o)], env);
    n.folded = true;
  }
  last_use.assign(names.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int v : nodes[i].in) {
      if (v < 0) continue;
      last_use[static_cast<size_t>(v)] = static_cast<int>(i);
      // A quantized node's kernel reads what its fused DQs read.
      const int from = fusion.dequantized_from[static_cast<size_t>(v)];
      if (from >= 0) last_use[static_cast<size_t>(from)] = static_cast<int>(i);
    }
  plan_act();
}

void Session::Impl::plan_act() {
  std::vector<ActNode> an(nodes.size());
  std::vector<bool> keep = is_output;
  for (size_t v = 0; v < keep.size(); ++v) keep[v] = keep[v] || fusion.keep_fp32[v];
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    // A widened output (bf16 in, f32 out) changes the types a chain sees.
    const bool widen = n.rule && n.rule->widen_output;
    an[i] = {n.info.get(), n.in, n.out, !n.folded && n.role == QuantRole::kPlain && !widen,
             n.kernel->fuses_activation()};
  }
  chains = plan_act_fusion(an, constants, keep);
  for (ActChain& c : plan_gelu_fusion(an, constants, keep, chains)) chains.push_back(std::move(c));
  for (ActChain& c : plan_bias_fusion(an, constants, keep, chains)) chains.push_back(std::move(c));
  chain_of.assign(nodes.size(), -1);
  for (size_t c = 0; c < chains.size(); ++c) chain_of[static_cast<size_t>(chains[c].head)] = static_cast<int>(c);
}

void Session::Impl::plan_quant() {
  std::vector<GraphNode> graph;
  for (const auto& n : nodes) graph.push_back({n.info->op_type(), n.in, n.out});
  fusion = plan_quant_fusion(graph, names.size());
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i].role = fusion.roles[i];
}

// Frees the values node i (n) used last, so a run holds only live values.
void Session::Impl::release_inputs(const Node& n, size_t i, std::vector<Tensor>& values) const {
  const auto release = [&](int v) {
    if (v >= 0 && last_use[static_cast<size_t>(v)] == static_cast<int>(i) && !is_output[static_cast<size_t>(v)] &&
        !constants[static_cast<size_t>(v)].defined())
      values[static_cast<size_t>(v)] = Tensor();
  };
  for (int v : n.in) {
    release(v);
    if (v >= 0) release(fusion.dequantized_from[static_cast<size_t>(v)]);
  }
}

// What a quantized node's integer kernel reads: its inputs with each fused
// DQ's output replaced by the integer tensor that DQ read; and the types its
// fused Qs write. Other nodes: their inputs as they are.
std::vector<const Tensor*> Session::Impl::kernel_view(const Node& n, const std::vector<Tensor>& values,
                                                      const std::vector<const Tensor*>& raw_in, QuantView* qv) const {
  std::vector<const Tensor*> in = raw_in;
  if (n.role != QuantRole::kQuantized) return in;
  qv->dequantized.assign(n.in.size(), false);
  for (size_t i = 0; i < n.in.size(); ++i) {
    const int from = n.in[i] < 0 ? -1 : fusion.dequantized_from[static_cast<size_t>(n.in[i])];
    if (from < 0 || !values[static_cast<size_t>(from)].defined()) continue;
    in[i] = &values[static_cast<size_t>(from)];
    qv->dequantized[i] = true;
  }
  for (int o : n.out) {
    const int q = o < 0 ? -1 : fusion.quantized_by[static_cast<size_t>(o)];
    qv->outputs.push_back(q < 0 ? DType::kUndefined : quantized_type(q, values));
  }
  return in;
}

// The type QuantizeLinear node `q` writes: its zero point's, else its
// output_dtype attribute, else uint8 (the ONNX default).
DType Session::Impl::quantized_type(int q, const std::vector<Tensor>& values) const {
  const Node& n = nodes[static_cast<size_t>(q)];
  if (n.in.size() > 2 && n.in[2] >= 0 && values[static_cast<size_t>(n.in[2])].defined())
    return values[static_cast<size_t>(n.in[2])].dtype();
  const int64_t od = n.info->attr_int("output_dtype", 0);
  return od ? dtype_from_onnx(static_cast<int32_t>(od)) : DType::kU8;
}

// `chain`: the activation chain n heads, if any; fused_stats receives its
// followers' NodeStats when it runs fused.
void Session::Impl::execute(Node& n, std::vector<Tensor>& values, bool folding, NodeStat* stat, const ActChain* chain,
                            std::map<int, NodeStat>* fused_stats) {
  const NodeInfo& info = *n.info;
  try {
    std::vector<const Tensor*> raw_in(n.in.size(), nullptr);
    std::vector<bool> is_const(n.in.size(), false);
    bool any_bf16 = false;
    for (size_t i = 0; i < n.in.size(); ++i)
      if (n.in[i] >= 0) {
        const Tensor& t = values[static_cast<size_t>(n.in[i])];
        if (!t.defined())
          throw EngineError(ErrorKind::kRuntime, "input '" + names[static_cast<size_t>(n.in[i])] + "' has no value");
        raw_in[i] = &t;
        is_const[i] = constants[static_cast<size_t>(n.in[i])].defined();
        any_bf16 = any_bf16 || t.dtype() == DType::kBF16;
      }
    // A fused Q/DQ is part of its integer kernel: never judged by itself.
    QuantView qv;
    const std::vector<const Tensor*> kernel_in = kernel_view(n, values, raw_in, &qv);
    const QuantView* quant = n.role == QuantRole::kQuantized ? &qv : nullptr;
    if (opts.profile && !folding && n.role != QuantRole::kFused) opts.profile->check(info, kernel_in, quant);

    std::vector<Tensor> conv(n.in.size());
    std::vector<const Tensor*> in(n.in.size(), nullptr);
    convert_inputs(n, raw_in, conv, in, any_bf16);
    std::vector<Tensor> outs(n.out.size());
    KernelContext ctx(in, is_const, &outs, &env, rounding, opts.threads);
    const bool fuse = chain && (!any_bf16 || chain->exact_in_bf16) &&
                      (chain->norm < 0 || all_of_type(raw_in, DType::kF32) || all_of_type(raw_in, DType::kBF16));
    FusedResidual residual;
    if (fuse && chain->residual >= 0) {
      residual = {&values[static_cast<size_t>(chain->residual)], chain->residual_first, chain->residual_relu};
      ctx.set_residual(&residual);
    } else if (fuse) {
      ctx.set_fused(&chain->act);
    }
    FusedNorm norm;
    if (fuse && chain->norm >= 0) {
      const Node& bn = nodes[static_cast<size_t>(chain->norm)];
      const auto param = [&](size_t k) { return &values[static_cast<size_t>(bn.in[k])]; };
      norm = {param(1), param(2), param(3), param(4), bn.info->attr_float("epsilon", 1e-5f), chain->norm_to_convs};
      ctx.set_norm(&norm);
    }
    const auto t0 = Clock::now();
    n.kernel->compute(ctx);
    if (stat) stat->wall_ms = ms_since(t0);
    round_outputs(n, outs, any_bf16);
    if (stat && opts.profile) {
      // A control-flow node costs its own dispatch plus the nodes its
      // subgraph ran (each judged there by the same profile).
      stat->cost = opts.profile->cost_of(info, kernel_in, outs, quant);
      add_cost(stat->cost, n.kernel->nested_cost(), opts.profile->cost());
    }
    if (fuse && !ctx.fusion_declined()) return finish_chain(*chain, outs, values, fused_stats);
    for (size_t i = 0; i < n.out.size(); ++i)
      if (n.out[i] >= 0) values[static_cast<size_t>(n.out[i])] = std::move(outs[i]);
  } catch (const EngineError& e) {
    if (!e.node().empty()) throw;
    throw EngineError(e.kind(), e.reason(), info.name(), info.op_type());
  } catch (const dnnl::error& e) {
    throw EngineError(e.status == dnnl_unimplemented ? ErrorKind::kUnsupported : ErrorKind::kRuntime,
                      std::string("oneDNN: ") + e.what(), info.name(), info.op_type());
  } catch (const std::bad_alloc&) {
    throw EngineError(ErrorKind::kRuntime, "out of memory", info.name(), info.op_type());
  } catch (const std::exception& e) {
    throw EngineError(ErrorKind::kRuntime, e.what(), info.name(), info.op_type());
  }
}

// A fused chain's followers: each judged by the profile and priced on what
// it would have read (the head's output stands in for the values the chain
// skips: same shape and type), with wall time 0; the last one's output is
// the head's.
void Session::Impl::finish_chain(const ActChain& c, std::vector<Tensor>& outs, std::vector<Tensor>& values,
                                 std::map<int, NodeStat>* fused_stats) {
  std::set<int> skipped{nodes[static_cast<size_t>(c.head)].out[0]};
  for (int f : c.followers) {
    const Node& fn = nodes[static_cast<size_t>(f)];
    std::vector<const Tensor*> in(fn.in.size(), nullptr);
    for (size_t k = 0; k < fn.in.size(); ++k)
      if (fn.in[k] >= 0) in[k] = skipped.count(fn.in[k]) ? &outs[0] : &values[static_cast<size_t>(fn.in[k])];
    NodeStat st{fn.info->name(), fn.info->op_type(), 0, {}};
    try {
      if (opts.profile) opts.profile->check(*fn.info, in);
      if (opts.profile) st.cost = opts.profile->cost_of(*fn.info, in, outs);
    } catch (const EngineError& e) {
      if (!e.node().empty()) throw;
      throw EngineError(e.kind(), e.reason(), fn.info->name(), fn.info->op_type());
    }
    if (fused_stats) (*fused_stats)[f] = std::move(st);
    skipped.insert(fn.out[0]);
  }
  values[static_cast<size_t>(nodes[static_cast<size_t>(c.followers.back())].out[0])] = std::move(outs[0]);
}

// The kernel's inputs: plain unless it takes blocked ones; when the node
// reads bf16, floats in the type it computes in (bf16 where the kernel
// handles bf16 natively, else f32; always f32 in an integer kernel's float
// path, which models the int32 accumulator).
void Session::Impl::convert_inputs(Node& n, const std::vector<const Tensor*>& raw_in, std::vector<Tensor>& conv,
                                   std::vector<const Tensor*>& in, bool any_bf16) {
  const bool native_bf16 = n.role == QuantRole::kPlain && n.kernel->handles_bf16() && dnnl_bf16_supported();
  const bool blocked_ok = n.kernel->accepts_blocked_inputs();
  for (size_t i = 0; i < n.in.size(); ++i) {
    if (!raw_in[i]) continue;
    const Tensor* t = raw_in[i];
    if (!blocked_ok && !t->is_plain()) {
      conv[i] = n.reorders[i](*t, plain_md(t->shape(), t->dtype()), t->dtype(), env);
      t = &conv[i];
    }
    // CastLike's second input only donates its type: never convert it.
    const bool type_donor = i == 1 && n.info->op_type() == "CastLike";
    if (any_bf16 && is_float(t->dtype()) && !type_donor) {
      const DType want = native_bf16 ? DType::kBF16 : DType::kF32;
      if (t->dtype() != want && t->dtype() != DType::kF64 && t->dtype() != DType::kF16) {
        conv[i] = convert_float(*t, want, rounding, env);
        t = &conv[i];
      }
    }
    in[i] = t;
  }
}

// Float outputs go back to bf16 when the node read bf16 (in the QDQ path:
// also whenever the numerics are bf16), except a widened output, a Cast's,
// and the float inside an integer kernel (kept fp32: the int32 accumulator).
void Session::Impl::round_outputs(const Node& n, std::vector<Tensor>& outs, bool any_bf16) {
  const std::string& op = n.info->op_type();
  const bool round = any_bf16 || (n.role != QuantRole::kPlain && opts.numerics == Numerics::kBF16);
  const bool widen = n.rule && n.rule->widen_output;
  for (size_t i = 0; i < n.out.size(); ++i) {
    if (n.out[i] < 0) continue;
    if (!outs[i].defined())
      throw EngineError(ErrorKind::kRuntime, "kernel produced no value for output " + std::to_string(i));
    if (round && !widen && outs[i].dtype() == DType::kF32 && op != "Cast" && op != "CastLike" &&
        !fusion.keep_fp32[static_cast<size_t>(n.out[i])])
      outs[i] = convert_float(outs[i], DType::kBF16, rounding, env);
  }
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

std::unique_ptr<Session> Session::from_proto(const onnx::ModelProto& model, SessionOptions opts) {
  auto impl = std::make_unique<Impl>();
  impl->opts = std::move(opts);
  impl->load(model);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

std::unique_ptr<Session> Session::from_graph(const onnx::GraphProto& g, const GraphScope& scope) {
  auto impl = std::make_unique<Impl>();
  impl->opts = scope.opts;
  // The kernel feeds what the engine computed: a body's declared shapes
  // (a scalar iteration number declared [1]...) are not held against it.
  impl->opts.check_input_shapes = false;
  impl->opset = scope.opset;
  impl->domain_opsets = scope.domain_opsets;
  impl->load_graph(g, /*subgraph=*/true);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

std::unique_ptr<Session> Session::from_bytes(const std::string& bytes, SessionOptions opts) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    throw EngineError(ErrorKind::kInvalidModel, "not a valid ONNX model (protobuf parse failed)");
  return from_proto(model, std::move(opts));
}

std::unique_ptr<Session> Session::from_file(const std::string& path, SessionOptions opts) {
  std::string why;
  const std::optional<std::string> bytes = base::read_file_bytes(path, &why);
  if (!bytes) throw EngineError(ErrorKind::kInvalidInput, path + ": cannot open: " + why);
  try {
    return from_bytes(*bytes, std::move(opts));
  } catch (const EngineError& e) {
    if (e.kind() == ErrorKind::kInvalidModel && e.node().empty())
      throw EngineError(e.kind(), path + ": " + e.reason());
    throw;
  }
}

const std::vector<ValueInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->outputs; }
int Session::opset() const { return impl_->opset; }
size_t Session::num_nodes() const { return impl_->nodes.size(); }
const RunStats& Session::last_stats() const { return impl_->stats; }

std::vector<Tensor> Session::run(const std::vector<Tensor>& feeds) { return run_impl(feeds, nullptr); }

std::map<std::string, Tensor> Session::run_all(const std::vector<Tensor>& feeds, std::string* error) {
  std::map<std::string, Tensor> all;
  run_impl(feeds, &all, error);
  return all;
}

bool Session::is_constant(const std::string& name) const {
  auto it = impl_->ids.find(name);
  return it != impl_->ids.end() && impl_->constants[static_cast<size_t>(it->second)].defined();
}

std::vector<Tensor> Session::bind_inputs(const std::vector<Tensor>& feeds) {
  Impl& m = *impl_;
  if (m.opts.threads > 0) omp_set_num_threads(m.opts.threads);
  if (feeds.size() != m.inputs.size())
    throw EngineError(ErrorKind::kInvalidInput, "model takes " + std::to_string(m.inputs.size()) +
                                                    " inputs, got " + std::to_string(feeds.size()));
  std::vector<Tensor> values = m.constants;
  for (size_t i = 0; i < feeds.size(); ++i) {
    const ValueInfo& vi = m.inputs[i];
    Tensor t = feeds[i];
    if (!t.defined()) throw EngineError(ErrorKind::kInvalidInput, "input '" + vi.name + "' is undefined");
    if (t.dtype() == DType::kF32 && vi.dtype == DType::kBF16) t = cast_tensor(t, DType::kBF16, m.rounding);
    if (vi.dtype != DType::kUndefined && t.dtype() != vi.dtype)
      throw EngineError(ErrorKind::kInvalidInput, "input '" + vi.name + "' expects " + dtype_name(vi.dtype) +
                                                      ", got " + dtype_name(t.dtype()));
    bool shape_ok = !m.opts.check_input_shapes || vi.dims.empty() || vi.dims.size() == t.shape().size();
    for (size_t d = 0; shape_ok && m.opts.check_input_shapes && d < vi.dims.size(); ++d)
      if (vi.dims[d] >= 0 && vi.dims[d] != t.shape()[d]) shape_ok = false;
    if (!shape_ok) {
      std::string want = "[";
      for (size_t d = 0; d < vi.dims.size(); ++d)
        want += (d ? "," : "") + (vi.dims[d] < 0 ? std::string("?") : std::to_string(vi.dims[d]));
      throw EngineError(ErrorKind::kInvalidInput, "input '" + vi.name + "' expects shape " + want + "]" +
                                                      ", got " + shape_str(t.shape()));
    }
    values[static_cast<size_t>(m.input_ids[i])] = t;
  }
  return values;
}

std::vector<Tensor> Session::run_impl(const std::vector<Tensor>& feeds, std::map<std::string, Tensor>* all,
                                      std::string* error) {
  Impl& m = *impl_;
  const auto t0 = Clock::now();
  std::vector<Tensor> values = bind_inputs(feeds);
  RunStats stats;
  std::map<int, NodeStat> fused_stats;  // followers of chains that ran fused
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    auto& n = m.nodes[i];
    if (n.folded) continue;
    if (auto f = fused_stats.find(static_cast<int>(i)); f != fused_stats.end()) {
      stats.sim_cycles += f->second.cost.cycles;
      stats.sim_ms += f->second.cost.time_ms;
      stats.nodes.push_back(std::move(f->second));
      m.release_inputs(n, i, values);
      continue;
    }
    // Every value stays when the caller wants them all: no fusion then.
    const int ci = all ? -1 : m.chain_of[i];
    const ActChain* chain = ci < 0 ? nullptr : &m.chains[static_cast<size_t>(ci)];
    // A fused Q/DQ has no stats of its own: it is part of its integer kernel.
    NodeStat st;
    NodeStat* stp = n.role == QuantRole::kFused ? nullptr : &st;
    st.name = n.info->name();
    st.op_type = n.info->op_type();
    if (error) {
      try {
        m.execute(n, values, false, stp);
      } catch (const std::exception& e) {
        *error = e.what();
        for (size_t id = 0; id < values.size(); ++id)
          if (values[id].defined()) (*all)[m.names[id]] = to_plain(values[id], m.env);
        return {};
      }
    } else {
      m.execute(n, values, false, stp, chain, &fused_stats);
    }
    stats.sim_cycles += st.cost.cycles;
    stats.sim_ms += st.cost.time_ms;
    if (stp) stats.nodes.push_back(std::move(st));
    if (!all) m.release_inputs(n, i, values);
  }
  std::vector<Tensor> out;
  for (int id : m.output_ids) {
    const Tensor& t = values[static_cast<size_t>(id)];
    if (!t.defined())
      throw EngineError(ErrorKind::kRuntime, "output '" + m.names[static_cast<size_t>(id)] + "' has no value");
    out.push_back(to_plain(t, m.env));
  }
  stats.wall_ms = ms_since(t0);
  m.stats = std::move(stats);
  if (all)
    for (size_t id = 0; id < values.size(); ++id)
      if (values[id].defined()) (*all)[m.names[id]] = to_plain(values[id], m.env);
  return out;
}

Session::Steps::Steps(Session* s, std::vector<Tensor> values, bool constants)
    : s_(s), values_(std::move(values)), constants_(constants) {}
Session::Steps::~Steps() = default;

std::unique_ptr<Session::Steps> Session::start_steps(const std::vector<Tensor>& feeds, bool constants) {
  return std::unique_ptr<Steps>(new Steps(this, bind_inputs(feeds), constants));
}

bool Session::Steps::done() const { return failed_ || (started_ && next_ >= s_->impl_->nodes.size()); }

// As run_impl with no activation fused, one node per call. A value is
// released (as in run_impl) after its last consumer: the plain copy step()
// returned is the caller's, and a blocked original would only double the
// run's memory.
std::vector<std::pair<std::string, Tensor>> Session::Steps::step() {
  Impl& m = *s_->impl_;
  std::vector<std::pair<std::string, Tensor>> out;
  if (!started_) {
    started_ = true;
    for (size_t id = 0; id < values_.size(); ++id)
      if (values_[id].defined() && (constants_ || !m.constants[id].defined()))
        out.emplace_back(m.names[id], to_plain(values_[id], m.env));
  }
  while (next_ < m.nodes.size() && m.nodes[next_].folded) ++next_;
  if (next_ >= m.nodes.size()) return out;
  if (m.opts.threads > 0) omp_set_num_threads(m.opts.threads);
  auto& n = m.nodes[next_++];
  NodeStat st;
  try {
    m.execute(n, values_, false, n.role == QuantRole::kFused ? nullptr : &st);
  } catch (...) {
    failed_ = true;
    throw;
  }
  for (int id : n.out)
    if (id >= 0 && values_[static_cast<size_t>(id)].defined())
      out.emplace_back(m.names[static_cast<size_t>(id)], to_plain(values_[static_cast<size_t>(id)], m.env));
  m.release_inputs(n, next_ - 1, values_);
  return out;
}

std::vector<Tensor> Session::random_inputs(uint64_t seed, float lo, float hi) const {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uf(lo, hi);
  std::uniform_int_distribution<int> ui(0, 9);
  std::vector<Tensor> out;
  for (const auto& vi : impl_->inputs) {
    Shape shape;
    for (int64_t d : vi.dims) shape.push_back(d < 0 ? 1 : d);
    Tensor f(DType::kF32, shape);
    float* p = f.data<float>();
    for (int64_t i = 0; i < f.numel(); ++i) p[i] = is_float(vi.dtype) ? uf(rng) : static_cast<float>(ui(rng));
    out.push_back(vi.dtype == DType::kBool ? cast_tensor(f, DType::kBool, Rounding::kNearestEven)
                                            : cast_tensor(f, vi.dtype, impl_->rounding));
  }
  return out;
}

}  // namespace torq::engine
