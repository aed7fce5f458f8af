// Control flow: If and Loop. Each subgraph runs in a nested Session
// (Session::from_graph) loaded in the enclosing session's scope (its
// options, profile and opsets). The outer-scope values a subgraph reads are
// the node's implicit inputs (pipeline/base/onnx_scope.h): ctx inputs after the declared
// ones, in outer_scope_reads(node) order.
//
// How a profile judges them: the If or Loop node itself is judged by its
// own rule like any node, before it runs (configs/targets: host accepts
// every op; nss and css have no rule for If or Loop, so they refuse the
// node, "If is not supported on nss", and its subgraph never runs there).
// Where the node is accepted, each node of the subgraph is judged and
// priced by the same profile inside the nested session, and the node's
// cost is its own plus what its subgraph ran (Kernel::nested_cost).
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <map>

#include "worker/engine/kernel.h"
#include "worker/engine/session.h"
#include "pipeline/base/onnx_scope.h"

namespace torq::engine {

namespace {

// One subgraph and where its inputs come from.
struct Subgraph {
  std::string attr;                  // then_branch, else_branch, body
  std::unique_ptr<Session> session;
  std::vector<size_t> outer_inputs;  // per outer-scope input of the session: the node's ctx input index
  size_t declared = 0;               // the session's declared (formal) inputs, fed by the kernel
};

Subgraph load_subgraph(const NodeInfo& n, const char* attr) {
  const onnx::AttributeProto* a = n.attr(attr);
  TORQ_CHECK(a && a->type() == onnx::AttributeProto::GRAPH && a->has_g(),
             n.op_type() + " needs the graph attribute '" + attr + "'");
  TORQ_CHECK(n.scope(), n.op_type() + " can only run inside a session");
  Subgraph s;
  s.attr = attr;
  try {
    s.session = Session::from_graph(a->g(), *n.scope());
  } catch (const EngineError& e) {
    throw EngineError(e.kind(), s.attr + ": " + e.what());
  }
  s.declared = static_cast<size_t>(a->g().input_size());
  // The node's implicit inputs follow its declared ones.
  std::map<std::string, size_t> index;
  const std::vector<std::string> outer = outer_scope_reads(n.proto());
  for (size_t i = 0; i < outer.size(); ++i) index[outer[i]] = n.num_inputs() + i;
  const auto& ins = s.session->inputs();
  for (size_t i = s.declared; i < ins.size(); ++i) s.outer_inputs.push_back(index.at(ins[i].name));
  return s;
}

// Runs the subgraph on `declared` then its outer-scope reads from ctx.
std::vector<Tensor> run_subgraph(Subgraph& s, std::vector<Tensor> declared, const KernelContext& ctx,
                                 LayerCost* cost) {
  for (size_t i : s.outer_inputs) {
    const Tensor* t = ctx.input(i);
    TORQ_CHECK(t, s.attr + ": an outer-scope value it reads has no value");
    declared.push_back(*t);
  }
  std::vector<Tensor> out;
  try {
    out = s.session->run(declared);
  } catch (const EngineError& e) {
    throw EngineError(e.kind(), s.attr + ": " + e.what());
  }
  for (const auto& st : s.session->last_stats().nodes) {
    cost->macs += st.cost.macs;
    cost->elements += st.cost.elements;
    cost->bytes += st.cost.bytes;
    cost->cycles += st.cost.cycles;
  }
  return out;
}

bool scalar_true(const Tensor& t, const std::string& what) {
  TORQ_CHECK(t.numel() == 1, what + " must have one element, got shape " + shape_str(t.shape()));
  return t.get_as_double(0) != 0;
}

// If: runs then_branch or else_branch; its outputs are the branch's, whose
// shapes may differ between the branches (opset 11+) and from run to run.
class IfKernel : public Kernel {
 public:
  explicit IfKernel(const NodeInfo& n) {
    n.expect_attrs({"then_branch", "else_branch"});
    TORQ_CHECK(n.num_inputs() == 1, "If takes one input (cond)");
    then_ = load_subgraph(n, "then_branch");
    else_ = load_subgraph(n, "else_branch");
    for (const Subgraph* s : {&then_, &else_})
      TORQ_CHECK(s->session->outputs().size() == n.num_outputs(),
                 s->attr + " has " + std::to_string(s->session->outputs().size()) + " outputs, the If node " +
                     std::to_string(n.num_outputs()));
  }

  void compute(KernelContext& ctx) override {
    Subgraph& s = scalar_true(ctx.in(0), "If's condition") ? then_ : else_;
    cost_ = {};
    std::vector<Tensor> out = run_subgraph(s, {}, ctx, &cost_);
    for (size_t i = 0; i < out.size(); ++i) ctx.output(i) = std::move(out[i]);
  }
  // Branch outputs pass through as the branch computed them.
  bool handles_bf16() const override { return true; }
  LayerCost nested_cost() const override { return cost_; }

 private:
  Subgraph then_, else_;
  LayerCost cost_;
};

// Loop: inputs (M trip count, cond, v_initial...) - M and cond optional;
// body inputs (iteration number, cond, carried...), body outputs (cond,
// carried..., scan outputs...); node outputs (final carried..., scan
// outputs stacked along a new axis 0).
class LoopKernel : public Kernel {
 public:
  explicit LoopKernel(const NodeInfo& n) {
    n.expect_attrs({"body"});
    TORQ_CHECK(n.num_inputs() >= 2, "Loop takes M, cond and the loop-carried values");
    carried_ = n.num_inputs() - 2;
    body_ = load_subgraph(n, "body");
    TORQ_CHECK(body_.declared == carried_ + 2,
               "Loop body takes " + std::to_string(body_.declared) + " inputs, expected " + std::to_string(carried_ + 2));
    const size_t body_out = body_.session->outputs().size();
    TORQ_CHECK(body_out >= carried_ + 1 && n.num_outputs() == body_out - 1,
               "Loop body has " + std::to_string(body_out) + " outputs for " + std::to_string(carried_) +
                   " carried values and " + std::to_string(n.num_outputs()) + " node outputs");
  }

  void compute(KernelContext& ctx) override {
    const int64_t trips = ctx.input(0) ? ctx.input(0)->get_as_int(0) : INT64_MAX;
    TORQ_CHECK(!ctx.input(0) || ctx.input(0)->numel() == 1, "Loop's trip count M must have one element");
    bool cond = ctx.input(1) ? scalar_true(*ctx.input(1), "Loop's cond") : true;
    std::vector<Tensor> carried;
    for (size_t i = 0; i < carried_; ++i) carried.push_back(ctx.in(2 + i));
    const size_t scans = ctx.num_outputs() - carried_;
    std::vector<std::vector<Tensor>> scanned(scans);
    cost_ = {};
    for (int64_t it = 0; it < trips && cond; ++it) {
      std::vector<Tensor> in{Tensor::scalar<int64_t>(it), Tensor::scalar<bool>(cond)};
      in.insert(in.end(), carried.begin(), carried.end());
      std::vector<Tensor> out = run_subgraph(body_, std::move(in), ctx, &cost_);
      cond = scalar_true(out[0], "Loop body's cond output");
      for (size_t i = 0; i < carried_; ++i) carried[i] = std::move(out[1 + i]);
      for (size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(out[1 + carried_ + k]));
    }
    for (size_t i = 0; i < carried_; ++i) ctx.output(i) = carried[i];
    for (size_t k = 0; k < scans; ++k) ctx.output(carried_ + k) = stack(scanned[k], k);
  }
  bool handles_bf16() const override { return true; }
  LayerCost nested_cost() const override { return cost_; }

 private:
  // The scan output's per-iteration values stacked along a new axis 0.
  Tensor stack(const std::vector<Tensor>& parts, size_t k) const {
    if (parts.empty()) {
      // No iteration ran: an empty tensor of the body's declared type.
      const DType t = body_.session->outputs()[1 + carried_ + k].dtype;
      return Tensor(t == DType::kUndefined ? DType::kF32 : t, Shape{0});
    }
    const Tensor& first = parts[0];
    Shape shape{static_cast<int64_t>(parts.size())};
    shape.insert(shape.end(), first.shape().begin(), first.shape().end());
    Tensor out(first.dtype(), shape);
    auto* dst = static_cast<uint8_t*>(out.raw());
    for (const Tensor& p : parts) {
      TORQ_CHECK(p.dtype() == first.dtype() && p.shape() == first.shape(),
                 "Loop scan output " + std::to_string(k) + " changes from " + shape_str(first.shape()) + " to " +
                     shape_str(p.shape()) + " between iterations");
      std::memcpy(dst, p.raw(), p.nbytes());
      dst += p.nbytes();
    }
    return out;
  }

  size_t carried_ = 0;
  Subgraph body_;
  LayerCost cost_;
};

}  // namespace

void register_control_kernels(KernelRegistry& r) {
  r.add("If", 1, 21, make_kernel<IfKernel>());
  r.add("Loop", 1, 21, make_kernel<LoopKernel>());
}

}  // namespace torq::engine
