// Activation fusion (act_fusion.h): a Conv's only reader Relu / Clip /
// HardSwish / Sigmoid*x runs as the Conv's post-op. run() fuses, run_all()
// never does, so the two give the fused and the unfused result of the same
// session: they must be bit-identical, in fp32 and (Relu, Clip) in bf16
// numerics; the follower keeps its NodeStat with wall time 0 and its
// profile cost. A Conv output that is a graph output or has another reader
// is not fused.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <random>
#include <string>
#include <vector>

#include "worker/engine/profile.h"
#include "worker/engine/session.h"

using namespace torq::engine;

namespace {

void add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* vs, const std::string& name,
               std::vector<int64_t> dims) {
  auto* v = vs->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

void add_init(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float x : v) t->add_float_data(x);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + out[0]);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

// x [1,8,10,10] -> Conv(3x3, pad 1, bias) -> c, then `act` builds the rest
// and names the outputs.
onnx::ModelProto conv_model(const std::function<std::vector<std::string>(onnx::GraphProto*)>& act) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x", {1, 8, 10, 10});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> w(16 * 8 * 9), b(16);
  for (float& x : w) x = u(rng);
  for (float& x : b) x = u(rng);
  add_init(g, "w", {16, 8, 3, 3}, w);
  add_init(g, "b", {16}, b);
  auto* conv = add_node(g, "Conv", {"x", "w", "b"}, {"c"});
  auto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  for (const auto& o : act(g)) add_value(g->mutable_output(), o, {1, 16, 10, 10});
  return m;
}

struct Fused {
  std::vector<Tensor> fused, unfused;  // outputs of run() and run_all()
  RunStats stats;                       // of run()
};

Fused run_both(const onnx::ModelProto& m, Numerics num = Numerics::kAsModel) {
  SessionOptions so;
  so.numerics = num;
  so.profile = std::make_shared<const ExecutorProfile>(ExecutorProfile::resolve("host"));
  auto s = Session::from_proto(m, so);
  const auto in = s->random_inputs(3, -2.f, 2.f);
  Fused r;
  r.fused = s->run(in);
  r.stats = s->last_stats();
  const auto all = s->run_all(in);
  for (const auto& o : s->outputs()) r.unfused.push_back(all.at(o.name));
  return r;
}

void expect_identical(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

const NodeStat& stat_of(const RunStats& s, const std::string& op) {
  for (const auto& n : s.nodes)
    if (n.op_type == op) return n;
  throw std::runtime_error("no stat for " + op);
}

TEST(ActFusion, ConvActivationsAreBitIdenticalToUnfused) {
  struct Case {
    std::string op;
    Numerics num;
    bool fused;
  };
  const std::vector<Case> cases{{"Relu", Numerics::kAsModel, true},      {"Relu", Numerics::kBF16, true},
                                {"Clip", Numerics::kAsModel, true},      {"Clip", Numerics::kBF16, true},
                                {"HardSwish", Numerics::kAsModel, true}, {"HardSwish", Numerics::kBF16, false},
                                {"Swish", Numerics::kAsModel, true},     {"Swish", Numerics::kBF16, false}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op + (c.num == Numerics::kBF16 ? " bf16" : " fp32"));
    const auto m = conv_model([&](onnx::GraphProto* g) -> std::vector<std::string> {
      if (c.op == "Clip") {
        add_init(g, "lo", {}, {0.f});
        add_init(g, "hi", {}, {0.75f});
        add_node(g, "Clip", {"c", "lo", "hi"}, {"y"});
      } else if (c.op == "Swish") {
        add_node(g, "Sigmoid", {"c"}, {"s"});
        add_node(g, "Mul", {"c", "s"}, {"y"});
      } else {
        add_node(g, c.op, {"c"}, {"y"});
      }
      return {"y"};
    });
    const Fused r = run_both(m, c.num);
    expect_identical(r.fused[0], r.unfused[0]);
    const std::string follower = c.op == "Swish" ? "Sigmoid" : c.op;
    const NodeStat& f = stat_of(r.stats, follower);
    EXPECT_EQ(f.wall_ms == 0, c.fused);
    EXPECT_GT(f.cost.cycles, 0u);  // still priced by the profile
    EXPECT_EQ(r.stats.nodes.size(), c.op == "Swish" ? 3u : 2u);
  }
}

TEST(ActFusion, FusedSwishIsTheConvOutputTimesItsSigmoid) {
  const auto m = conv_model([](onnx::GraphProto* g) -> std::vector<std::string> {
    add_node(g, "Sigmoid", {"c"}, {"s"});
    add_node(g, "Mul", {"s", "c"}, {"y"});
    return {"y"};
  });
  SessionOptions so;
  so.profile = std::make_shared<const ExecutorProfile>(ExecutorProfile::resolve("host"));
  auto s = Session::from_proto(m, so);
  const auto in = s->random_inputs(9, -3.f, 3.f);
  const Tensor y = s->run(in)[0];
  EXPECT_EQ(stat_of(s->last_stats(), "Mul").wall_ms, 0);  // ran fused
  const Tensor c = s->run_all(in).at("c");
  ASSERT_EQ(y.shape(), c.shape());
  const float* yp = y.data<float>();
  const float* cp = c.data<float>();
  int negative = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double x = cp[i], want = x / (1.0 + std::exp(-x));
    ASSERT_NEAR(yp[i], want, 4e-7 * std::fabs(want) + 1e-30) << i;
    negative += x < 0;
  }
  EXPECT_GT(negative, 100);  // both branches of the sigmoid were taken
}

TEST(ActFusion, NotAcrossAGraphOutputOrASecondReader) {
  // c is a graph output.
  const Fused out = run_both(conv_model([](onnx::GraphProto* g) -> std::vector<std::string> {
    add_node(g, "Relu", {"c"}, {"y"});
    return {"y", "c"};
  }));
  for (size_t i = 0; i < 2; ++i) expect_identical(out.fused[i], out.unfused[i]);
  EXPECT_GT(stat_of(out.stats, "Relu").wall_ms, 0);
  // c is read by the Relu and by an Add.
  const Fused two = run_both(conv_model([](onnx::GraphProto* g) -> std::vector<std::string> {
    add_node(g, "Relu", {"c"}, {"r"});
    add_node(g, "Add", {"r", "c"}, {"y"});
    return {"y"};
  }));
  expect_identical(two.fused[0], two.unfused[0]);
  EXPECT_GT(stat_of(two.stats, "Relu").wall_ms, 0);
}

}  // namespace
