// GELU fusion (gelu_fusion.h): PyTorch's erf GELU, Div -> Erf -> Add -> Mul
// -> Mul, runs as one pass headed by the Div. run() fuses, run_all() never
// does: the two must be bit-identical (NaN, Inf, -0, the vector tail, the
// parallel path, either operand order; in bf16 numerics with either
// rounding too), the followers keep their NodeStat with wall time 0, and the
// values are GELU's. Not fused across a graph output or a second reader, or
// with a non-scalar divisor.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/engine/dnnl_util.h"
#include "worker/engine/profile.h"
#include "worker/engine/session.h"
#include "tests/unit/graph_builder.h"

using namespace torq::engine;

using namespace torq::test;

namespace {

void add_scalar(onnx::GraphProto* g, const std::string& name, float v, std::vector<int64_t> dims = {}) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  add_init(g, name, dims, std::vector<float>(static_cast<size_t>(n), v));
}

struct Options {
  std::vector<int64_t> dims{2, 3, 37, 41};  // 9102 floats: a vector tail, one thread
  bool swapped = false;                     // the Add's and Muls' operands the other way round
  bool erf_is_output = false;               // e also a graph output
  std::vector<int64_t> divisor_dims{};      // the divisor's shape (scalar by default)
  float k1 = 1.f, k2 = 0.5f;                // the Add's and the last Mul's constants
  // Which of c, k1, k2 are Constant nodes (which bf16 numerics keeps fp32)
  // rather than initializers (which it rounds to bf16).
  bool c_node = false, k1_node = false, k2_node = false;
};

// x -> Relu -> r (so the chain's x is computed), then the GELU of r.
onnx::ModelProto gelu_model(const Options& o) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x", o.dims);
  const auto scalar = [&](const std::string& name, float v, bool node, std::vector<int64_t> dims = {}) {
    if (!node) return add_scalar(g, name, v, dims);
    auto* n = add_node(g, "Constant", {}, {name});
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) a->mutable_t()->add_dims(d);
    a->mutable_t()->add_float_data(v);
  };
  scalar("c", 1.4142135381698608f, o.c_node, o.divisor_dims);
  scalar("one", o.k1, o.k1_node);
  scalar("half", o.k2, o.k2_node);
  add_node(g, "Neg", {"x"}, {"r"});
  add_node(g, "Div", {"r", "c"}, {"d"});
  add_node(g, "Erf", {"d"}, {"e"});
  if (o.swapped) {
    add_node(g, "Add", {"one", "e"}, {"a"});
    add_node(g, "Mul", {"a", "r"}, {"m"});
    add_node(g, "Mul", {"half", "m"}, {"y"});
  } else {
    add_node(g, "Add", {"e", "one"}, {"a"});
    add_node(g, "Mul", {"r", "a"}, {"m"});
    add_node(g, "Mul", {"m", "half"}, {"y"});
  }
  add_value(g->mutable_output(), "y", o.dims);
  if (o.erf_is_output) add_value(g->mutable_output(), "e", o.dims);
  return m;
}

struct Both {
  std::vector<Tensor> in, fused, unfused;
  RunStats stats;
};

Both run_both(const onnx::ModelProto& m, Numerics num = Numerics::kAsModel,
              Rounding rounding = Rounding::kNearestEven) {
  SessionOptions so;
  so.numerics = num;
  so.rounding = rounding;
  so.profile = std::make_shared<const ExecutorProfile>(ExecutorProfile::resolve("host"));
  auto s = Session::from_proto(m, so);
  Both r;
  r.in = s->random_inputs(7, -6.f, 6.f);
  // Special values at the start and in the last (padded) vector (n >= 11).
  const int64_t n = r.in[0].numel();
  const bool bf16 = r.in[0].dtype() == DType::kBF16;
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special{std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.f, -0.f, 1e-30f, -1e-30f,
                                   3e38f, -3e38f, 10.f, -10.f};
  for (size_t i = 0; i < special.size(); ++i)
    for (int64_t at : {static_cast<int64_t>(i), n - 1 - static_cast<int64_t>(i)}) {
      if (bf16) r.in[0].bf16()[at] = f32_to_bf16(special[i], Rounding::kNearestEven);
      else r.in[0].data<float>()[at] = special[i];
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

const NodeStat& stat_of(const RunStats& s, const std::string& op) {
  for (const auto& n : s.nodes)
    if (n.op_type == op) return n;
  throw std::runtime_error("no stat for " + op);
}

bool ran_fused(const RunStats& s) {
  return stat_of(s, "Erf").wall_ms == 0 && stat_of(s, "Add").wall_ms == 0;
}

}  // namespace

TEST(GeluFusion, BitIdenticalToTheUnfusedNodes) {
  for (bool swapped : {false, true})
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 3, 37, 41}, std::vector<int64_t>{1, 56, 56, 24},
                                             std::vector<int64_t>{19}}) {
      SCOPED_TRACE(std::string(swapped ? "swapped, " : "") + std::to_string(dims.size()) + "-D");
      Options o;
      o.dims = dims;
      o.swapped = swapped;
      const Both r = run_both(gelu_model(o));
      expect_identical(r.fused[0], r.unfused[0]);
      EXPECT_TRUE(ran_fused(r.stats));
      EXPECT_EQ(r.stats.nodes.size(), 6u);  // every node keeps its stat
      EXPECT_GT(stat_of(r.stats, "Erf").cost.cycles, 0u);
    }
}

// bf16 numerics: every step rounded to bf16 as the nodes round their
// outputs, with either rounding; fused only where the Div computes in bf16
// (a CPU with native bf16), else the nodes run one by one.
TEST(GeluFusion, BitIdenticalToTheUnfusedNodesInBf16WithEitherRounding) {
  for (Rounding rounding : {Rounding::kNearestEven, Rounding::kTruncate})
    for (bool swapped : {false, true})
      for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 3, 37, 41}, std::vector<int64_t>{1, 56, 56, 24},
                                               std::vector<int64_t>{19}}) {
        SCOPED_TRACE(std::string(rounding == Rounding::kTruncate ? "truncate, " : "rne, ") +
                     (swapped ? "swapped, " : "") + std::to_string(dims.size()) + "-D");
        Options o;
        o.dims = dims;
        o.swapped = swapped;
        const Both r = run_both(gelu_model(o), Numerics::kBF16, rounding);
        ASSERT_EQ(r.fused[0].dtype(), DType::kBF16);
        expect_identical(r.fused[0], r.unfused[0]);
        EXPECT_EQ(ran_fused(r.stats), dnnl_bf16_supported());
        const bf16_t* y = r.fused[0].bf16();
        EXPECT_TRUE(std::isnan(bf16_to_f32(y[0])));            // x = NaN
        EXPECT_EQ(bf16_to_f32(y[2]), std::numeric_limits<float>::infinity());  // r = +inf
        EXPECT_EQ(bf16_to_f32(y[10]), 10.f);                     // r = 10
      }
}

// Constants bf16 numerics leaves fp32 (Constant nodes): all three fp32,
// with k1 and k2 not exact in bf16, the chain fuses and reads them as the
// Add and Mul do (rounded to bf16); an fp32 k1 beside bf16 c and k2, or
// the other way round, does not fuse. Bit-identical either way.
TEST(GeluFusion, Bf16WithConstantsOfEitherTypeIsBitIdentical) {
  for (Rounding rounding : {Rounding::kNearestEven, Rounding::kTruncate}) {
    Options all_nodes;
    all_nodes.k1 = 1.1f;
    all_nodes.k2 = 0.3f;
    all_nodes.c_node = all_nodes.k1_node = all_nodes.k2_node = true;
    const Both a = run_both(gelu_model(all_nodes), Numerics::kBF16, rounding);
    expect_identical(a.fused[0], a.unfused[0]);
    EXPECT_EQ(ran_fused(a.stats), dnnl_bf16_supported());

    Options mixed = all_nodes;
    mixed.c_node = mixed.k2_node = false;  // k1 fp32, c and k2 bf16
    const Both b = run_both(gelu_model(mixed), Numerics::kBF16, rounding);
    expect_identical(b.fused[0], b.unfused[0]);
    EXPECT_FALSE(ran_fused(b.stats));
  }
}

TEST(GeluFusion, ValuesAreGelu) {
  const Both r = run_both(gelu_model({}));
  ASSERT_TRUE(ran_fused(r.stats));
  const float* x = r.in[0].data<float>();
  const float* y = r.fused[0].data<float>();
  const int64_t n = r.in[0].numel();
  EXPECT_TRUE(std::isnan(y[0]));  // x = NaN
  EXPECT_TRUE(std::isnan(y[1]));  // r = -inf: -inf * 0
  EXPECT_EQ(y[2], std::numeric_limits<float>::infinity());  // r = +inf
  EXPECT_EQ(y[9], 0.f);                                     // r = -10
  EXPECT_EQ(y[10], 10.f);                                   // r = 10
  int checked = 0;
  for (int64_t i = 11; i < n - 11; ++i) {
    const double v = -static_cast<double>(x[i]), want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    ASSERT_NEAR(y[i], want, 1e-6 * std::fabs(v) + 1e-7) << i;
    ++checked;
  }
  EXPECT_GT(checked, 9000);
}

TEST(GeluFusion, NotAcrossAGraphOutputNorWithATensorDivisor) {
  Options out;
  out.erf_is_output = true;
  const Both a = run_both(gelu_model(out));
  for (size_t i = 0; i < 2; ++i) expect_identical(a.fused[i], a.unfused[i]);
  EXPECT_FALSE(ran_fused(a.stats));


  Options vec;
  vec.dims = {2, 3, 5, 4};
  vec.divisor_dims = {4};  // a per-channel divisor is not the GELU pattern
  const Both c = run_both(gelu_model(vec));
  expect_identical(c.fused[0], c.unfused[0]);
  EXPECT_FALSE(ran_fused(c.stats));
}
