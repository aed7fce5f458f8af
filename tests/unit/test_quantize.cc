// Static int8 quantization (worker/quant): the arithmetic of ONNX
// QuantizeLinear, parameter choice, and the QDQ rewrite of the demo CNN.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include <onnx/onnx_pb.h>

#include "tests/unit/graph_builder.h"
#include "worker/engine/session.h"
#include "worker/quant/calibrate.h"
#include "worker/quant/qdq_rewrite.h"
#include "worker/quant/quant_params.h"
#include "worker/sim/demo_model.h"

namespace torq::quant {
namespace {

TEST(QuantParams, RoundsHalfToEvenAndSaturates) {
  const QParams one{1.f, 0};
  EXPECT_EQ(quantize_value(2.5f, one, -128, 127), 2);
  EXPECT_EQ(quantize_value(3.5f, one, -128, 127), 4);
  EXPECT_EQ(quantize_value(-2.5f, one, -128, 127), -2);
  EXPECT_EQ(quantize_value(-0.5f, one, -128, 127), 0);
  EXPECT_EQ(quantize_value(300.f, one, -128, 127), 127);
  EXPECT_EQ(quantize_value(-300.f, one, -128, 127), -128);
  EXPECT_EQ(quantize_value(1.f, QParams{0.5f, 10}, -128, 127), 12);
  EXPECT_EQ(quantize_value(NAN, QParams{0.5f, 10}, -128, 127), 10);
}

TEST(QuantParams, ActivationRangeKeepsZeroExact) {
  const QParams p = activation_params(Range{-1.f, 3.f});
  EXPECT_FLOAT_EQ(p.scale, 4.f / 255.f);
  EXPECT_EQ(p.zero_point, -64);  // round(-128 + 1 / (4/255)) = round(-64.25)
  const int32_t q0 = quantize_value(0.f, p, -128, 127);
  EXPECT_EQ(q0, p.zero_point);
  // Both ends representable within half a step.
  EXPECT_NEAR((quantize_value(-1.f, p, -128, 127) - p.zero_point) * p.scale, -1.f, p.scale / 2);
  EXPECT_NEAR((quantize_value(3.f, p, -128, 127) - p.zero_point) * p.scale, 3.f, p.scale / 2);
  // A positive-only range still includes 0: zero point at the bottom.
  EXPECT_EQ(activation_params(Range{0.5f, 2.f}).zero_point, -128);
  EXPECT_FLOAT_EQ(activation_params(Range{0.5f, 2.f}).scale, 2.f / 255.f);
  // A constant-zero tensor: scale 1, zero point 0.
  EXPECT_FLOAT_EQ(activation_params(Range{0.f, 0.f}).scale, 1.f);
}

TEST(QuantParams, WeightsPerTensorAndPerChannel) {
  const float w[6] = {0.5f, -1.f, 0.25f, 2.f, -0.5f, 1.f};  // [2, 3]
  auto t = quantize_weights(w, {2, 3}, 0, false);
  ASSERT_EQ(t.scales.size(), 1u);
  EXPECT_FLOAT_EQ(t.scales[0], 2.f / 127.f);
  EXPECT_EQ(t.values, (std::vector<int8_t>{32, -64, 16, 127, -32, 64}));  // 31.75 -> 32, 15.875 -> 16
  auto c = quantize_weights(w, {2, 3}, 0, true);
  ASSERT_EQ(c.scales.size(), 2u);
  EXPECT_FLOAT_EQ(c.scales[0], 1.f / 127.f);
  EXPECT_FLOAT_EQ(c.scales[1], 2.f / 127.f);
  EXPECT_EQ(c.values, (std::vector<int8_t>{64, -127, 32, 127, -32, 64}));  // 63.5 -> 64 (even), 31.75 -> 32
  auto a1 = quantize_weights(w, {2, 3}, 1, true);  // per column
  ASSERT_EQ(a1.scales.size(), 3u);
  EXPECT_FLOAT_EQ(a1.scales[1], 1.f / 127.f);
}

// The demo CNN rewritten: every quantizable op reads dequantized values,
// weights are int8 behind a DequantizeLinear, biases int32, and the node
// order is still topological.
TEST(QdqRewrite, DemoModelIsQuantizedAroundEveryQuantizableOp) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(sim::build_demo_model()));
  std::map<std::string, Range> ranges;
  for (const auto& gi : m.graph().input()) ranges[gi.name()] = Range{-1.f, 1.f};
  for (const auto& n : m.graph().node())
    for (const auto& o : n.output()) ranges[o] = Range{-2.f, 2.f};
  for (bool per_channel : {false, true}) {
    QdqResult r = quantize_qdq(m, ranges, QdqOptions{per_channel});
    std::map<std::string, const onnx::NodeProto*> producer;
    std::map<std::string, const onnx::TensorProto*> inits;
    for (const auto& t : r.model.graph().initializer()) inits[t.name()] = &t;
    std::set<std::string> seen;
    for (const auto& gi : r.model.graph().input()) seen.insert(gi.name());
    int convs = 0;
    for (const auto& n : r.model.graph().node()) {
      for (const auto& in : n.input())
        EXPECT_TRUE(in.empty() || seen.count(in) || inits.count(in)) << n.name() << " reads " << in << " before it exists";
      for (const auto& o : n.output()) {
        seen.insert(o);
        producer[o] = &n;
      }
      if (!quantizable_ops().count(n.op_type())) continue;
      const auto* dq = producer.count(n.input(0)) ? producer[n.input(0)] : nullptr;
      ASSERT_NE(dq, nullptr) << n.name();
      EXPECT_EQ(dq->op_type(), "DequantizeLinear") << n.name() << " input 0";
      if (n.op_type() == "Conv" || n.op_type() == "Gemm") {
        ++convs;
        const auto* wdq = producer[n.input(1)];
        ASSERT_NE(wdq, nullptr);
        EXPECT_EQ(wdq->op_type(), "DequantizeLinear");
        EXPECT_EQ(inits.at(wdq->input(0))->data_type(), onnx::TensorProto::INT8);
        EXPECT_EQ(inits.at(wdq->input(1))->dims_size(), per_channel ? 1 : 0);
        if (n.input_size() > 2) {
          const auto* bdq = producer[n.input(2)];
          ASSERT_NE(bdq, nullptr) << n.name() << " bias";
          EXPECT_EQ(inits.at(bdq->input(0))->data_type(), onnx::TensorProto::INT32);
        }
      }
    }
    EXPECT_GE(convs, 3);
    EXPECT_GT(r.weights, 0);
    EXPECT_GT(r.activations, 0);
    // Graph outputs keep their names and are dequantized values.
    for (const auto& go : r.model.graph().output()) EXPECT_EQ(producer.at(go.name())->op_type(), "DequantizeLinear");
  }
}

TEST(QdqRewrite, RefusesQuantizedInputAndOldOpsets) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(sim::build_demo_model()));
  std::string which;
  EXPECT_FALSE(is_quantized(m, &which));
  QdqResult r = quantize_qdq(m, {}, QdqOptions{});
  EXPECT_TRUE(is_quantized(r.model, &which));
  EXPECT_NE(which.find("DequantizeLinear"), std::string::npos) << which;
  // Opset 11 with a Softmax (changed in 13): per-channel is refused, naming it.
  for (auto& imp : *m.mutable_opset_import())
    if (imp.domain().empty()) imp.set_version(11);
  try {
    quantize_qdq(m, {}, QdqOptions{true});
    ADD_FAILURE() << "per-channel at opset 11 with a Softmax was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Softmax"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(quantize_qdq(m, {}, QdqOptions{false}));
  // Without it the opset is raised to 13, and said so.
  auto* g = m.mutable_graph();
  for (int i = 0; i < g->node_size(); ++i)
    if (g->node(i).op_type() == "Softmax") {
      g->mutable_node()->DeleteSubrange(i, 1);
      break;
    }
  QdqResult up = quantize_qdq(m, {}, QdqOptions{true});
  for (const auto& imp : up.model.opset_import())
    if (imp.domain().empty()) {
      EXPECT_EQ(imp.version(), 13);
    }
  ASSERT_EQ(up.notes.size(), 1u);
  EXPECT_NE(up.notes[0].find("opset raised from 11 to 13"), std::string::npos);
  m.mutable_opset_import(0)->set_version(9);
  EXPECT_THROW(quantize_qdq(m, {}, QdqOptions{false}), std::invalid_argument);
}

TEST(Calibration, SeedsAreHeldOutFromDiscoverysInput) {
  for (uint64_t s : {0ull, 1ull, 42ull})
    for (int k = 0; k < 64; ++k) EXPECT_NE(calibration_seed(s, k), s);
}

// What calibrate() must give, taken the plain way: every non-constant fp32
// value of a whole run_all per calibration input, 0 and its finite elements
// in order. Signs of zero bounds aside (no parameter sees them), the same
// floats.
std::map<std::string, Range> ranges_by_run_all(const onnx::ModelProto& m, int n, uint64_t seed) {
  auto s = engine::Session::from_proto(m);
  std::map<std::string, Range> want;
  for (int k = 0; k < n; ++k)
    for (const auto& [name, t] : s->run_all(s->random_inputs(calibration_seed(seed, k), -1.f, 1.f))) {
      if (t.dtype() != engine::DType::kF32 || s->is_constant(name) || t.numel() == 0) continue;
      const float* p = t.data<float>();
      auto it = want.try_emplace(name, Range{0.f, 0.f}).first;
      for (int64_t i = 0; i < t.numel(); ++i)
        if (std::isfinite(p[i])) it->second.add(p[i]);
    }
  return want;
}

void expect_same_ranges(const std::map<std::string, Range>& got, const std::map<std::string, Range>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    auto g = got.find(name);
    ASSERT_NE(g, got.end()) << name;
    EXPECT_EQ(g->second.lo, w.lo) << name;  // == : -0 equals +0
    EXPECT_EQ(g->second.hi, w.hi) << name;
  }
}

TEST(Calibration, RangesAreEveryActivationsOverWholeRuns) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(sim::build_demo_model()));
  const auto got = calibrate(m, 3, 7, 1);
  expect_same_ranges(got, ranges_by_run_all(m, 3, 7));
  EXPECT_GT(got.size(), 5u);
}

TEST(Calibration, NaNAndInfinityWidenNoRange) {
  // x (uniform [-1, 1], 37 elements: vector lanes and a tail) -> Log -> l:
  // NaN for x < 0, -inf at 0 is never drawn but Log(x * 0) is (z); a range
  // of finite elements only.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  test::add_value(g->mutable_input(), "x", {37});
  test::add_init(g, "zero", {}, {0.f});
  test::add_node(g, "Log", {"x"}, {"l"});
  test::add_node(g, "Mul", {"x", "zero"}, {"z0"});
  test::add_node(g, "Log", {"z0"}, {"z"});
  test::add_node(g, "Add", {"l", "z"}, {"y"});  // NaN or -inf everywhere
  test::add_value(g->mutable_output(), "y", {37});
  const auto got = calibrate(m, 4, 1, 1);
  expect_same_ranges(got, ranges_by_run_all(m, 4, 1));
  const Range& l = got.at("l");
  EXPECT_TRUE(std::isfinite(l.lo) && std::isfinite(l.hi)) << l.lo << " " << l.hi;
  EXPECT_LT(l.lo, -1.f);  // log of the smallest positive draw
  EXPECT_LE(l.hi, 0.f);
  EXPECT_GE(got.at("x").lo, -1.f);
  // y has no finite element at all: its range is 0 alone (it was NaN or
  // -inf when a range started at a value's first element).
  EXPECT_EQ(got.at("y").lo, 0.f);
  EXPECT_EQ(got.at("y").hi, 0.f);
}

}  // namespace
}  // namespace torq::quant
