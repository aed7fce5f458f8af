// Sessions on QDQ layers: the fused Q/DQ nodes cost nothing of their own
// (one dispatch for the integer kernel, its integer bytes, integer MACs),
// and bf16 numerics leave the integer results of a QDQ layer exactly as in
// fp32 numerics (scales never rounded, the DQ -> op -> Q path in fp32).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/unit/quant_graphs.h"
#include "worker/engine/profile.h"
#include "worker/engine/session.h"

using namespace torq::engine;
using namespace torq::engine::test;

namespace {

std::shared_ptr<const ExecutorProfile> profile(const char* name) {
  return std::make_shared<ExecutorProfile>(ExecutorProfile::resolve(name));
}

// Runs `m` on seeded inputs; returns the session (its last_stats()).
std::unique_ptr<Session> run_once(const onnx::ModelProto& m, SessionOptions so) {
  auto s = Session::from_proto(m, so);
  s->run(s->random_inputs(1));
  return s;
}

Tensor run_conv(const onnx::ModelProto& m, Numerics numerics, const char* profile_name = nullptr) {
  SessionOptions so;
  so.numerics = numerics;
  so.rounding = Rounding::kTruncate;
  if (profile_name) so.profile = profile(profile_name);
  auto s = Session::from_proto(m, so);
  const Shape shape = s->inputs()[0].dims;
  return s->run({Tensor::from_vector<int8_t>(seeded_values<int8_t>(shape_numel(shape), -128, 127, 3), shape)})[0];
}

int64_t differing(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), DType::kI8);
  EXPECT_EQ(b.dtype(), DType::kI8);
  EXPECT_EQ(a.shape(), b.shape());
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel(); ++i) n += a.data<int8_t>()[i] != b.data<int8_t>()[i];
  return n;
}

// The model with its fp32 scale initializers stored as bf16 (their values
// must be bf16-exact), as a bf16 conversion of the model file would.
onnx::ModelProto with_bf16_scales(onnx::ModelProto m) {
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.data_type() != kF32 || t.name().find("_scale") == std::string::npos) continue;
    float v;
    std::memcpy(&v, t.raw_data().data(), sizeof v);
    const bf16_t b = f32_to_bf16(v, Rounding::kTruncate);
    EXPECT_EQ(bf16_to_f32(b), v) << t.name();
    t.set_data_type(onnx::TensorProto::BFLOAT16);
    t.set_raw_data(std::string(reinterpret_cast<const char*>(&b), sizeof b));
  }
  return m;
}

const ConvSpec kBig{{1, 64, 32, 32}, {64, 64, 3, 3}, 1, 1, 1};  // compute-bound on nss

}  // namespace

TEST(QdqCost, Int8ConvIsCheaperThanTheBf16ConvByTheMacRatio) {
  const auto nss = profile("nss");
  const CostModel& m = nss->cost();
  SessionOptions so;
  so.profile = nss;
  const LayerCost q = run_once(qdq_conv(kBig), so)->last_stats().nodes.at(0).cost;
  so.numerics = Numerics::kBF16;
  const LayerCost f = run_once(float_conv(kBig), so)->last_stats().nodes.at(0).cost;
  const uint64_t macs = 64u * 32 * 32 * (64 * 3 * 3);
  EXPECT_EQ(q.macs, macs);
  EXPECT_EQ(f.macs, macs);
  EXPECT_TRUE(q.integer_macs);
  EXPECT_FALSE(f.integer_macs);
  const uint64_t overhead = static_cast<uint64_t>(m.dispatch_overhead_cycles);
  EXPECT_EQ(q.cycles, overhead + macs / 512);  // 256 int8 MACs a cycle on each of 2 slices
  EXPECT_EQ(f.cycles, overhead + macs / 256);  // 128 bf16 MACs
  EXPECT_DOUBLE_EQ(static_cast<double>(f.cycles - overhead) / static_cast<double>(q.cycles - overhead),
                   m.int8_macs_per_cycle_per_slice / m.macs_per_cycle_per_slice);
}

TEST(QdqCost, FusedQdqAddNoDispatchAndMoveIntegerBytes) {
  SessionOptions so;
  so.profile = profile("nss");
  auto s = run_once(qdq_conv(kBig), so);
  const RunStats& st = s->last_stats();
  // One kernel: x's DQ and y's Q are part of the Conv (the weight and bias
  // DQs are folded at load).
  ASSERT_EQ(st.nodes.size(), 1u);
  EXPECT_EQ(st.nodes[0].op_type, "Conv");
  EXPECT_EQ(st.sim_cycles, st.nodes[0].cost.cycles);
  // int8 x, int8 weights, int32 bias, int8 y: not the fp32 between them.
  EXPECT_EQ(st.nodes[0].cost.bytes, 65536u + 36864u + 64u * 4 + 65536u);
  // A standalone Q is an op of its own, with its own dispatch.
  so.profile = profile("host");
  auto q = run_once(standalone_q(), so);
  ASSERT_EQ(q->last_stats().nodes.size(), 1u);
  EXPECT_EQ(q->last_stats().nodes[0].op_type, "QuantizeLinear");
  EXPECT_GE(q->last_stats().nodes[0].cost.cycles, static_cast<uint64_t>(so.profile->cost().dispatch_overhead_cycles));
}

TEST(QdqCost, QOperatorConvCountsIntegerMacsAndItsQAndDqNoDispatch) {
  SessionOptions so;
  so.profile = profile("nss");
  const LayerCost c = run_once(qlinear_conv(kBig), so)->last_stats().nodes.at(0).cost;
  EXPECT_EQ(c.macs, 64u * 32 * 32 * (64 * 3 * 3));
  EXPECT_TRUE(c.integer_macs);
  auto boundary = run_once(qoperator_boundary(kBig), so);
  ASSERT_EQ(boundary->last_stats().nodes.size(), 1u);
  EXPECT_EQ(boundary->last_stats().nodes[0].op_type, "QLinearConv");
  auto gemm = run_once(matmul_integer_gemm(), so);
  ASSERT_EQ(gemm->last_stats().nodes.size(), 2u);
  EXPECT_EQ(gemm->last_stats().nodes[0].op_type, "MatMulInteger");
  EXPECT_EQ(gemm->last_stats().nodes[1].op_type, "Add");
}

TEST(QdqNumerics, Bf16NumericsGivesTheFp32IntegersWhenScalesAreNotBf16) {
  ConvSpec s{{1, 8, 10, 10}, {16, 8, 3, 3}, 1, 1, 1};
  s.x_scale = 0.0123457f;  // none of these is a bf16 value
  s.w_scale = 0.00731f;
  s.y_scale = 0.0456789f;
  const Tensor fp32 = run_conv(qdq_conv(s), Numerics::kAsModel);
  EXPECT_EQ(differing(run_conv(qdq_conv(s), Numerics::kBF16), fp32), 0);
  EXPECT_EQ(differing(run_conv(qdq_conv(s), Numerics::kBF16, "nss"), fp32), 0);
  // The check can tell: scales rounded to bf16 change the integers.
  ConvSpec r = s;
  for (float* v : {&r.x_scale, &r.w_scale, &r.y_scale}) *v = round_to_bf16(*v, Rounding::kTruncate);
  EXPECT_GT(differing(run_conv(qdq_conv(r), Numerics::kAsModel), fp32), 0);
}

TEST(QdqNumerics, FloatPathBetweenDqAndQStaysFp32WhenScalesAreBf16) {
  ConvSpec s{{1, 8, 10, 10}, {16, 8, 3, 3}, 1, 1, 1};
  s.x_scale = 0.015625f;  // bf16-exact scales, whose products are too
  s.w_scale = 0.0078125f;
  s.y_scale = 0.046875f;
  const Tensor fp32 = run_conv(qdq_conv(s), Numerics::kAsModel);
  // bf16 scale tensors make the DQs read bf16; their fp32 outputs and the
  // Conv's (the int32 accumulator) are still never rounded to bf16.
  EXPECT_EQ(differing(run_conv(with_bf16_scales(qdq_conv(s)), Numerics::kAsModel), fp32), 0);
  EXPECT_EQ(differing(run_conv(with_bf16_scales(qdq_conv(s)), Numerics::kBF16, "nss"), fp32), 0);
}
