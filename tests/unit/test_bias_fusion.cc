// Bias fusion (bias_fusion.h): a MatMul whose only reader is an Add of a
// constant runs the Add as oneDNN's matmul bias. run() fuses, run_all()
// never does: the two must be bit-identical (long inner dimensions that
// oneDNN splits, batched and 2-D products, either operand order, NaN/Inf
// in the input), the Add keeps its NodeStat with wall time 0, and the
// values are the product plus the bias. A bias that broadcasts otherwise,
// a product with a second reader and bf16 numerics run the Add by itself.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/engine/profile.h"
#include "worker/engine/session.h"
#include "tests/unit/graph_builder.h"

using namespace torq::engine;

using namespace torq::test;

namespace {

struct Case {
  std::vector<int64_t> x;  // [..., K]
  int64_t n = 16;
  std::vector<int64_t> bias_dims;  // empty: {n}
  bool bias_first = true;
  bool second_reader = false;  // the product is also a graph output
};

onnx::ModelProto bias_model(const Case& c, std::vector<float>* w = nullptr, std::vector<float>* bias = nullptr) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x", c.x);
  const auto wv = add_random_init(g, "w", {c.x.back(), c.n}, 3);
  const auto bv = add_random_init(g, "b", c.bias_dims.empty() ? std::vector<int64_t>{c.n} : c.bias_dims, 4);
  if (w) *w = wv;
  if (bias) *bias = bv;
  add_node(g, "MatMul", {"x", "w"}, {"p"});
  add_node(g, "Add", c.bias_first ? std::vector<std::string>{"b", "p"} : std::vector<std::string>{"p", "b"}, {"y"});
  std::vector<int64_t> out = c.x;
  out.back() = c.n;
  if (c.bias_dims.size() > out.size()) out.insert(out.begin(), c.bias_dims.size() - out.size(), 1);
  add_value(g->mutable_output(), "y", out);
  if (c.second_reader) {
    std::vector<int64_t> p = c.x;
    p.back() = c.n;
    add_value(g->mutable_output(), "p", p);
  }
  return m;
}

struct Both {
  std::vector<Tensor> in, fused, unfused;
  RunStats stats;
};

Both run_both(const onnx::ModelProto& m, Numerics num = Numerics::kAsModel, bool specials = false) {
  SessionOptions so;
  so.numerics = num;
  so.profile = std::make_shared<const ExecutorProfile>(ExecutorProfile::resolve("host"));
  auto s = Session::from_proto(m, so);
  Both r;
  r.in = s->random_inputs(11, -2.f, 2.f);
  if (specials) {
    float* x = r.in[0].data<float>();
    x[0] = std::numeric_limits<float>::quiet_NaN();
    x[r.in[0].numel() - 1] = std::numeric_limits<float>::infinity();
  }
  r.fused = s->run(r.in);
  r.stats = s->last_stats();
  const auto all = s->run_all(r.in);
  for (const auto& o : s->outputs()) r.unfused.push_back(all.at(o.name));
  return r;
}

void expect_identical(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

double add_wall(const RunStats& s) {
  for (const auto& n : s.nodes)
    if (n.op_type == "Add") return n.wall_ms;
  throw std::runtime_error("no Add stat");
}

}  // namespace

TEST(BiasFusion, BitIdenticalToTheUnfusedAdd) {
  const std::vector<Case> cases{
      {{1, 56, 56, 96}, 384, {}, true, false},  // ConvNeXt's first MLP layer, batched rows
      {{1, 14, 14, 1536}, 384, {}, false, false},  // a long K that oneDNN splits
      {{7, 3000}, 40, {}, true, false},          // 2-D
      {{2, 3, 5, 64}, 33, {1, 1, 33}, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("K " + std::to_string(c.x.back()) + " N " + std::to_string(c.n));
    const Both r = run_both(bias_model(c), Numerics::kAsModel, true);
    expect_identical(r.fused[0], r.unfused[0]);
    EXPECT_EQ(add_wall(r.stats), 0);  // ran fused
    EXPECT_EQ(r.stats.nodes.size(), 2u);
  }
}

TEST(BiasFusion, ValuesAreTheProductPlusTheBias) {
  Case c{{3, 5}, 4, {}, true, false};
  std::vector<float> w, bias;
  const auto m = bias_model(c, &w, &bias);
  const Both r = run_both(m);
  ASSERT_EQ(add_wall(r.stats), 0);
  const float* x = r.in[0].data<float>();
  const float* y = r.fused[0].data<float>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      double want = bias[static_cast<size_t>(j)];
      for (int k = 0; k < 5; ++k) want += static_cast<double>(x[i * 5 + k]) * w[static_cast<size_t>(k * 4 + j)];
      EXPECT_NEAR(y[i * 4 + j], want, 1e-5) << i << "," << j;
    }
}

TEST(BiasFusion, RunsTheAddByItselfWhereItCannotFuse) {
  // A bias of higher rank than the product (the Add widens the output).
  Case wide{{5, 8}, 6, {1, 1, 6}, true, false};
  const Both a = run_both(bias_model(wide));
  expect_identical(a.fused[0], a.unfused[0]);
  EXPECT_EQ(a.fused[0].shape(), (Shape{1, 5, 6}));
  EXPECT_GT(add_wall(a.stats), 0);
  // A per-row bias [M, 1] broadcasts over columns, not a bias.
  Case rows{{5, 8}, 6, {5, 1}, true, false};
  const Both b = run_both(bias_model(rows));
  expect_identical(b.fused[0], b.unfused[0]);
  EXPECT_GT(add_wall(b.stats), 0);
  // The product is also a graph output.
  Case two{{5, 8}, 6, {}, true, false};
  two.second_reader = true;
  const Both c = run_both(bias_model(two));
  for (size_t i = 0; i < 2; ++i) expect_identical(c.fused[i], c.unfused[i]);
  EXPECT_GT(add_wall(c.stats), 0);
  // bf16 numerics.
  const Both d = run_both(bias_model({{5, 8}, 6, {}, true, false}), Numerics::kBF16);
  expect_identical(d.fused[0], d.unfused[0]);
  EXPECT_GT(add_wall(d.stats), 0);
}
