// Activation fusion (act_fusion.h): a Conv's only reader Relu / Clip /
// HardSwish / HardSigmoid / Sigmoid*x runs as the Conv's post-op, and a
// residual Add (+ Relu) in the Conv's pass over its output. run() fuses,
// run_all() never does, so the two give the fused and the unfused result of
// the same session: they must be bit-identical, in fp32 and (Relu, Clip) in
// bf16 numerics; the follower keeps its NodeStat with wall time 0 and its
// profile cost. A Conv output that is a graph output or has another reader
// is not fused; an Add that broadcasts runs by itself.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <functional>
#include <stdexcept>
#include <random>
#include <string>
#include <vector>

#include "worker/engine/kernels/vec_sigmoid.h"
#include "worker/engine/profile.h"
#include "worker/engine/session.h"
#include "tests/unit/graph_builder.h"

using namespace torq::engine;

using namespace torq::test;

namespace {

// x [1,8,hw,hw] -> Conv(3x3, pad 1, bias) -> c [1,16,hw,hw], then `act`
// builds the rest and names the outputs.
onnx::ModelProto conv_model(const std::function<std::vector<std::string>(onnx::GraphProto*)>& act, int64_t hw = 10) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x", {1, 8, hw, hw});
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
  for (const auto& o : act(g)) add_value(g->mutable_output(), o, {1, 16, hw, hw});
  return m;
}

struct Fused {
  std::vector<Tensor> fused, unfused;  // outputs of run() and run_all()
  RunStats stats;                       // of run()
};

// `edit` may change the random inputs before the runs.
Fused run_both(const onnx::ModelProto& m, Numerics num = Numerics::kAsModel,
               const std::function<void(std::vector<Tensor>&)>& edit = {}) {
  SessionOptions so;
  so.numerics = num;
  so.profile = std::make_shared<const ExecutorProfile>(ExecutorProfile::resolve("host"));
  auto s = Session::from_proto(m, so);
  auto in = s->random_inputs(3, -2.f, 2.f);
  if (edit) edit(in);
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
  const std::vector<Case> cases{{"Relu", Numerics::kAsModel, true},        {"Relu", Numerics::kBF16, true},
                                {"Clip", Numerics::kAsModel, true},        {"Clip", Numerics::kBF16, true},
                                {"HardSwish", Numerics::kAsModel, true},   {"HardSwish", Numerics::kBF16, false},
                                {"HardSigmoid", Numerics::kAsModel, true}, {"HardSigmoid", Numerics::kBF16, false},
                                {"Swish", Numerics::kAsModel, true},       {"Swish", Numerics::kBF16, false}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op + (c.num == Numerics::kBF16 ? " bf16" : " fp32"));
    const auto m = conv_model([&](onnx::GraphProto* g) -> std::vector<std::string> {
      if (c.op == "Clip") {
        add_init(g, "lo", {}, {0.f});
        add_init(g, "hi", {}, {0.75f});
        add_node(g, "Clip", {"c", "lo", "hi"}, {"y"});
      } else if (c.op == "HardSigmoid") {  // torchvision's (x + 3) / 6: both bounds reached
        auto* n = add_node(g, "HardSigmoid", {"c"}, {"y"});
        auto* a = n->add_attribute();
        a->set_name("alpha");
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(1.f / 6);
        a = n->add_attribute();
        a->set_name("beta");
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(0.5f);
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
  // The engine's own sigmoid (AVX-512) is within 2 ulp; oneDNN's swish
  // post-op, which runs without it, within ~10 (5.8e-7 seen under SSE4.1).
  const double rel = vm::fast_sigmoid() ? 4e-7 : 1.2e-6;
  int negative = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double x = cp[i], want = x / (1.0 + std::exp(-x));
    ASSERT_NEAR(yp[i], want, rel * std::fabs(want) + 1e-30) << i;
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

TEST(ActFusion, HardSigmoidAfterASqueezeExciteConv) {
  // MobileNetV3's squeeze-excite: GlobalAveragePool -> 1x1 Conv on a 1x1
  // image -> HardSigmoid, channel counts not a multiple of 16.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x", {1, 72, 5, 5});
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  std::vector<float> w(40 * 72), b(40);
  for (float& x : w) x = u(rng);
  for (float& x : b) x = u(rng);
  add_init(g, "w", {40, 72, 1, 1}, w);
  add_init(g, "b", {40}, b);
  add_node(g, "GlobalAveragePool", {"x"}, {"p"});
  add_node(g, "Conv", {"p", "w", "b"}, {"c"});
  add_node(g, "HardSigmoid", {"c"}, {"y"});
  add_value(g->mutable_output(), "y", {1, 40, 1, 1});
  const Fused r = run_both(m);
  expect_identical(r.fused[0], r.unfused[0]);
  EXPECT_EQ(stat_of(r.stats, "HardSigmoid").wall_ms, 0);
  // The output reaches both bounds and lies between them.
  const std::vector<float> y = r.fused[0].to_float_vector();
  EXPECT_EQ(*std::min_element(y.begin(), y.end()), 0.f);
  EXPECT_EQ(*std::max_element(y.begin(), y.end()), 1.f);
  EXPECT_TRUE(std::any_of(y.begin(), y.end(), [](float v) { return v > 0.f && v < 1.f; }));
}

TEST(ActFusion, FusedHardSigmoidGateReadsTheSameForEveryReader) {
  // The gate of a squeeze-excite block is read by a Mul; a sum over all its
  // elements and a pooling read it too, fused as unfused. (oneDNN keeps a
  // blocked output's padded channels 0 under the linear + clip post-ops,
  // where HardSigmoid(0) is 0.5: checked by hand on nChw16c, 20 channels;
  // this CPU's Convs pick nhwc here.)
  for (const std::string reader : {"Mul", "ReduceSum", "GlobalAveragePool"}) {
    SCOPED_TRACE(reader);
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x", {1, 8, 9, 9});
    std::vector<float> w(20 * 8 * 9);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.03f * static_cast<float>(i % 37) - 0.5f;
    add_init(g, "w", {20, 8, 3, 3}, w);
    auto* conv = add_node(g, "Conv", {"x", "w"}, {"c"});
    auto* a = conv->add_attribute();
    a->set_name("pads");
    a->set_type(onnx::AttributeProto::INTS);
    for (int i = 0; i < 4; ++i) a->add_ints(1);
    add_node(g, "HardSigmoid", {"c"}, {"h"});
    if (reader == "Mul") {
      add_value(g->mutable_input(), "z", {1, 20, 9, 9});
      add_node(g, "Mul", {"h", "z"}, {"y"});
      add_value(g->mutable_output(), "y", {1, 20, 9, 9});
    } else {
      add_node(g, reader, {"h"}, {"y"});
      add_value(g->mutable_output(), "y", {1, reader == "ReduceSum" ? 1 : 20, 1, 1});
    }
    const Fused r = run_both(m);
    expect_identical(r.fused[0], r.unfused[0]);
    EXPECT_EQ(stat_of(r.stats, "HardSigmoid").wall_ms, 0);
  }
}

// conv_model's c plus a value `r` of c's shape (a second Conv of x, or a
// graph input), in operand order `r_first`, then Relu when `relu`.
onnx::ModelProto residual_model(bool from_conv, bool r_first, bool relu, int64_t hw = 10) {
  return conv_model(
      [&](onnx::GraphProto* g) -> std::vector<std::string> {
        if (from_conv) {
          // A 1x1 Conv listed before the head: its output exists when c runs.
          std::vector<float> w(16 * 8);
          for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(i % 11) - 0.25f;
          add_init(g, "wr", {16, 8, 1, 1}, w);
          auto* nodes = g->mutable_node();
          auto* p = add_node(g, "Conv", {"x", "wr"}, {"r"});
          nodes->SwapElements(0, nodes->size() - 1);  // r's Conv first
          (void)p;
        } else {
          add_value(g->mutable_input(), "r", {1, 16, hw, hw});
        }
        add_node(g, "Add", r_first ? std::vector<std::string>{"r", "c"} : std::vector<std::string>{"c", "r"},
                 {relu ? "a" : "y"});
        if (relu) add_node(g, "Relu", {"a"}, {"y"});
        return {"y"};
      },
      hw);
}

TEST(ActFusion, ConvAddReluIsBitIdenticalToUnfused) {
  for (bool from_conv : {false, true})
    for (bool r_first : {false, true})
      for (bool relu : {false, true})
        for (int64_t hw : {10, 48}) {  // 48: 36864 outputs, more than one thread's share
          SCOPED_TRACE(std::string(from_conv ? "conv" : "input") + (r_first ? " r+c" : " c+r") +
                       (relu ? " relu " : " ") + std::to_string(hw));
          const Fused r = run_both(residual_model(from_conv, r_first, relu, hw));
          expect_identical(r.fused[0], r.unfused[0]);
          EXPECT_EQ(stat_of(r.stats, "Add").wall_ms, 0);
          EXPECT_GT(stat_of(r.stats, "Add").cost.cycles, 0u);
          if (relu) {
            EXPECT_EQ(stat_of(r.stats, "Relu").wall_ms, 0);
          }
          EXPECT_EQ(r.stats.nodes.size(), (from_conv ? 3u : 2u) + (relu ? 1u : 0u));
          const std::vector<float> y = r.fused[0].to_float_vector();
          EXPECT_EQ(std::count(y.begin(), y.end(), 0.f) > 0, relu);
        }
}

TEST(ActFusion, ConvAddKeepsNaNInfAndNegativeZeroOfTheUnfusedNodes) {
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "relu" : "add");
    const Fused r = run_both(residual_model(false, true, relu), Numerics::kAsModel, [](std::vector<Tensor>& in) {
      float* v = in[1].data<float>();
      v[0] = std::nanf("");
      v[1] = -std::numeric_limits<float>::infinity();
      v[2] = std::numeric_limits<float>::infinity();
      v[3] = -0.f;
    });
    expect_identical(r.fused[0], r.unfused[0]);
    EXPECT_EQ(stat_of(r.stats, "Add").wall_ms, 0);
    const std::vector<float> y = r.fused[0].to_float_vector();
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_EQ(y[1], relu ? 0.f : -std::numeric_limits<float>::infinity());
    EXPECT_EQ(y[2], std::numeric_limits<float>::infinity());
  }
}

TEST(ActFusion, ConvAddRunsUnfusedWhereItCannotFuse) {
  // The Add broadcasts ([16,1,1]): the Conv declines, the Add runs by itself.
  const Fused bcast = run_both(conv_model([](onnx::GraphProto* g) -> std::vector<std::string> {
    add_value(g->mutable_input(), "r", {16, 1, 1});
    add_node(g, "Add", {"c", "r"}, {"a"});
    add_node(g, "Relu", {"a"}, {"y"});
    return {"y"};
  }));
  expect_identical(bcast.fused[0], bcast.unfused[0]);
  EXPECT_GT(stat_of(bcast.stats, "Add").wall_ms, 0);
  EXPECT_GT(stat_of(bcast.stats, "Relu").wall_ms, 0);
  // The other operand is computed after the Conv: not planned.
  const Fused late = run_both(conv_model([](onnx::GraphProto* g) -> std::vector<std::string> {
    add_value(g->mutable_input(), "z", {1, 16, 10, 10});
    add_node(g, "Sigmoid", {"z"}, {"r"});
    add_node(g, "Add", {"c", "r"}, {"y"});
    return {"y"};
  }));
  expect_identical(late.fused[0], late.unfused[0]);
  EXPECT_GT(stat_of(late.stats, "Add").wall_ms, 0);
  // bf16 numerics: the unfused Conv rounds before the Add.
  const Fused bf16 = run_both(residual_model(false, false, true), Numerics::kBF16);
  expect_identical(bf16.fused[0], bf16.unfused[0]);
  EXPECT_GT(stat_of(bf16.stats, "Add").wall_ms, 0);
  // c is also read by a second node: the Add is not fused.
  const Fused two = run_both(conv_model([](onnx::GraphProto* g) -> std::vector<std::string> {
    add_value(g->mutable_input(), "r", {1, 16, 10, 10});
    add_node(g, "Add", {"c", "r"}, {"a"});
    add_node(g, "Mul", {"a", "c"}, {"y"});
    return {"y"};
  }));
  expect_identical(two.fused[0], two.unfused[0]);
  EXPECT_GT(stat_of(two.stats, "Add").wall_ms, 0);
}

}  // namespace
