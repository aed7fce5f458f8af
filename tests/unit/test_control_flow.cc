// Control flow (kernels/control.cc, pipeline/base/onnx_scope.h): If runs the branch its
// condition picks, reading outer-scope values (also from two scopes up,
// through a nested If), with outputs whose shape differs per branch; Loop
// carries values and stacks scan outputs; an op a subgraph lacks is an
// unsupported error naming it; a profile judges the If node itself (nss
// refuses it) and prices the nodes its branch ran.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "pipeline/base/error.h"
#include "worker/engine/profile.h"
#include "worker/engine/session.h"

using namespace torq::engine;

namespace {

void set_type(onnx::ValueInfoProto* v, const std::string& name, int elem, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& in,
                          const std::vector<std::string>& out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + out[0]);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

// A graph attribute `name` of node n, with outputs `outs` (untyped, as
// exporters often leave branch outputs).
onnx::GraphProto* add_graph(onnx::NodeProto* n, const std::string& name, const std::vector<std::string>& outs) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  auto* g = a->mutable_g();
  g->set_name(name);
  for (const auto& o : outs) g->add_output()->set_name(o);
  return g;
}

// Inputs cond (bool scalar), x and y (float [3]); output z.
onnx::ModelProto if_model(int opset = 11) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  set_type(g->add_input(), "cond", onnx::TensorProto::BOOL, {});
  set_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {3});
  set_type(g->add_input(), "y", onnx::TensorProto::FLOAT, {3});
  set_type(g->add_output(), "z", onnx::TensorProto::FLOAT, {});
  return m;
}

Tensor floats(const std::vector<float>& v) { return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}); }

std::vector<float> values_of(const Tensor& t) {
  const float* p = t.data<float>();
  return {p, p + t.numel()};
}

std::vector<Tensor> feeds(bool cond) {
  return {Tensor::scalar<bool>(cond), floats({1, 2, 3}), floats({10, 20, 30})};
}

// If(cond): then z = x + y ([3]); else z = Concat(y, x) ([6]).
onnx::ModelProto add_or_concat() {
  onnx::ModelProto m = if_model();
  auto* n = add_node(m.mutable_graph(), "If", {"cond"}, {"z"});
  add_node(add_graph(n, "then_branch", {"sum"}), "Add", {"x", "y"}, {"sum"});
  auto* cat = add_node(add_graph(n, "else_branch", {"cat"}), "Concat", {"y", "x"}, {"cat"});
  auto* axis = cat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  return m;
}

EngineError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const EngineError& e) {
    return e;
  }
  return EngineError(ErrorKind::kRuntime, "no error");
}

}  // namespace

TEST(ControlFlow, IfRunsTheBranchItsConditionPicksOnOuterScopeValues) {
  auto s = Session::from_proto(add_or_concat());
  EXPECT_EQ(values_of(s->run(feeds(true))[0]), (std::vector<float>{11, 22, 33}));
  const Tensor cat = s->run(feeds(false))[0];  // the other branch, another shape
  EXPECT_EQ(cat.shape(), (Shape{6}));
  EXPECT_EQ(values_of(cat), (std::vector<float>{10, 20, 30, 1, 2, 3}));
  // The session stays usable across both branches, in either order.
  EXPECT_EQ(values_of(s->run(feeds(true))[0]), (std::vector<float>{11, 22, 33}));
}

TEST(ControlFlow, IfBranchMayOutputAnOuterValueOrAConstantDirectly) {
  onnx::ModelProto m = if_model(13);
  auto* n = add_node(m.mutable_graph(), "If", {"cond"}, {"z"});
  add_graph(n, "then_branch", {"y"});  // no nodes: the outer y itself
  auto* els = add_graph(n, "else_branch", {"c"});
  auto* c = els->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_dims(2);
  c->add_float_data(-1);
  c->add_float_data(-2);
  auto s = Session::from_proto(m);
  EXPECT_EQ(values_of(s->run(feeds(true))[0]), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(values_of(s->run(feeds(false))[0]), (std::vector<float>{-1, -2}));
}

TEST(ControlFlow, NestedIfReadsValuesOfBothEnclosingScopes) {
  // then: t = x * y; z = If(cond2) then t + x (x from two scopes up) else Neg(t)
  // else: z = y
  onnx::ModelProto m = if_model();
  auto* g = m.mutable_graph();
  set_type(g->add_input(), "cond2", onnx::TensorProto::BOOL, {});
  auto* n = add_node(g, "If", {"cond"}, {"z"});
  auto* then = add_graph(n, "then_branch", {"inner"});
  add_node(then, "Mul", {"x", "y"}, {"t"});
  auto* inner = add_node(then, "If", {"cond2"}, {"inner"});
  add_node(add_graph(inner, "then_branch", {"u"}), "Add", {"t", "x"}, {"u"});
  add_node(add_graph(inner, "else_branch", {"v"}), "Neg", {"t"}, {"v"});
  add_graph(n, "else_branch", {"y"});
  auto s = Session::from_proto(m);
  const auto run = [&](bool c1, bool c2) {
    std::vector<Tensor> in = feeds(c1);
    in.push_back(Tensor::scalar<bool>(c2));
    return values_of(s->run(in)[0]);
  };
  EXPECT_EQ(run(true, true), (std::vector<float>{11, 42, 93}));
  EXPECT_EQ(run(true, false), (std::vector<float>{-10, -40, -90}));
  EXPECT_EQ(run(false, true), (std::vector<float>{10, 20, 30}));
}

TEST(ControlFlow, IfWithAConstantConditionRunsOnFedOuterValues) {
  // cond from a Constant (folded at load); the values the branch reads are
  // fed, so the If is not folded and runs per run.
  onnx::ModelProto m = add_or_concat();
  auto* g = m.mutable_graph();
  g->mutable_input()->DeleteSubrange(0, 1);  // cond is no longer fed
  auto* k = add_node(g, "Constant", {}, {"cond"});
  auto* v = k->add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  v->mutable_t()->add_int32_data(0);
  auto s = Session::from_proto(m);
  EXPECT_EQ(values_of(s->run({floats({1, 2, 3}), floats({10, 20, 30})})[0]),
            (std::vector<float>{10, 20, 30, 1, 2, 3}));
}

TEST(ControlFlow, IfConditionMustBeOneElement) {
  auto s = Session::from_proto(add_or_concat());
  std::vector<Tensor> in = feeds(true);
  in[0] = Tensor::from_vector<bool>({true, false}, {2});
  EngineError e = error_of([&] { s->run(in); });
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
  EXPECT_NE(std::string(e.what()).find("If's condition must have one element"), std::string::npos) << e.what();
}

TEST(ControlFlow, AnOpABranchLacksIsUnsupportedNamingItAndTheBranch) {
  onnx::ModelProto m = add_or_concat();
  m.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g()->mutable_node(0)->set_op_type("FancyOp");
  EngineError e = error_of([&] { Session::from_proto(m); });
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_EQ(e.op(), "If");
  EXPECT_NE(std::string(e.what()).find("else_branch: node 'Concat_cat' (FancyOp): operator FancyOp is not supported"),
            std::string::npos)
      << e.what();
}

TEST(ControlFlow, BranchOutputCountMustMatchTheNode) {
  onnx::ModelProto m = add_or_concat();
  m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g()->add_output()->set_name("x");
  EngineError e = error_of([&] { Session::from_proto(m); });
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
  EXPECT_NE(std::string(e.what()).find("then_branch has 2 outputs, the If node 1"), std::string::npos) << e.what();
}

TEST(ControlFlow, NssRefusesTheIfNodeItself) {
  SessionOptions so;
  so.numerics = Numerics::kBF16;
  so.profile = std::make_shared<ExecutorProfile>(ExecutorProfile::resolve("nss"));
  auto s = Session::from_proto(add_or_concat(), so);
  EngineError e = error_of([&] { s->run(feeds(true)); });
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_EQ(e.op(), "If");
  EXPECT_EQ(e.reason(), "If is not supported on nss");
}

TEST(ControlFlow, IfCostsItsOwnDispatchPlusTheNodesItsBranchRan) {
  // then: z = x + y; else: z = x (no node). Same inputs and output sizes, so
  // the If's own cost is the same both ways; the difference is the Add's.
  SessionOptions so;
  so.profile = std::make_shared<ExecutorProfile>(ExecutorProfile::resolve("host"));
  onnx::ModelProto m = if_model();
  auto* n = add_node(m.mutable_graph(), "If", {"cond"}, {"z"});
  add_node(add_graph(n, "then_branch", {"sum"}), "Add", {"x", "y"}, {"sum"});
  add_graph(n, "else_branch", {"x"});
  auto s = Session::from_proto(m, so);
  s->run(feeds(false));
  ASSERT_EQ(s->last_stats().nodes.size(), 1u);
  const uint64_t own = s->last_stats().nodes[0].cost.cycles;
  s->run(feeds(true));
  const uint64_t with_add = s->last_stats().nodes[0].cost.cycles;
  EXPECT_EQ(s->last_stats().sim_cycles, with_add);

  onnx::ModelProto add = if_model();
  add.mutable_graph()->mutable_input()->DeleteSubrange(0, 1);
  add_node(add.mutable_graph(), "Add", {"x", "y"}, {"z"});
  auto a = Session::from_proto(add, so);
  a->run({floats({1, 2, 3}), floats({10, 20, 30})});
  EXPECT_GT(a->last_stats().sim_cycles, 0u);
  EXPECT_EQ(with_add, own + a->last_stats().sim_cycles);
}

TEST(ControlFlow, LoopCarriesValuesAndStacksScanOutputs) {
  // for i in range(M) while cond: acc = acc + x * i; scan = acc; cond = i < 2
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  set_type(g->add_input(), "M", onnx::TensorProto::INT64, {});
  set_type(g->add_input(), "acc0", onnx::TensorProto::FLOAT, {3});
  set_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {3});
  set_type(g->add_output(), "acc", onnx::TensorProto::FLOAT, {3});
  set_type(g->add_output(), "scan", onnx::TensorProto::FLOAT, {});
  auto* loop = add_node(g, "Loop", {"M", "", "acc0"}, {"acc", "scan"});
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  auto* body = a->mutable_g();
  set_type(body->add_input(), "i", onnx::TensorProto::INT64, {1});
  set_type(body->add_input(), "c_in", onnx::TensorProto::BOOL, {});
  set_type(body->add_input(), "acc_in", onnx::TensorProto::FLOAT, {3});
  auto* two = body->add_initializer();
  two->set_name("two");
  two->set_data_type(onnx::TensorProto::INT64);
  two->add_int64_data(2);
  add_node(body, "Cast", {"i"}, {"fi"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto to;
    to.set_name("to");
    to.set_type(onnx::AttributeProto::INT);
    to.set_i(onnx::TensorProto::FLOAT);
    return to;
  }());
  add_node(body, "Mul", {"x", "fi"}, {"xi"});
  add_node(body, "Add", {"acc_in", "xi"}, {"acc_out"});
  add_node(body, "Less", {"i", "two"}, {"c_out"});
  add_node(body, "Identity", {"acc_out"}, {"scan_out"});
  for (const char* o : {"c_out", "acc_out", "scan_out"}) body->add_output()->set_name(o);
  auto s = Session::from_proto(m);
  const auto run = [&](int64_t trips) {
    return s->run({Tensor::scalar<int64_t>(trips), floats({0, 0, 0}), floats({1, 2, 3})});
  };
  // M = 2: i = 0, 1.
  std::vector<Tensor> out = run(2);
  EXPECT_EQ(values_of(out[0]), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of(out[1]), (std::vector<float>{0, 0, 0, 1, 2, 3}));
  // M = 10: the body's cond stops it after i = 2 (2 < 2 is false).
  out = run(10);
  EXPECT_EQ(values_of(out[0]), (std::vector<float>{3, 6, 9}));
  EXPECT_EQ(out[1].shape(), (Shape{3, 3}));
  // M = 0: no iteration, the initial value and an empty scan.
  out = run(0);
  EXPECT_EQ(values_of(out[0]), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(out[1].numel(), 0);
}
