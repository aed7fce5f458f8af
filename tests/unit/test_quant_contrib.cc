// com.microsoft quantized contrib kernels (quant_contrib*.cc) against
// hand-computed values, and the session's handling of the com.microsoft
// domain: its registered ops load and run, an unknown one is a clean
// Unsupported error naming it, other domains stay rejected.
#include "kernel_harness.h"

#include "worker/engine/session.h"

namespace torq::engine::test {
namespace {

Tensor f32(float v) { return Tensor::from_vector<float>({v}, {}); }

// A com.microsoft node as the kernel registry keys it.
onnx::NodeProto ms_node(const std::string& op, size_t inputs) {
  onnx::NodeProto n = make_node(kernel_key("com.microsoft", op), inputs);
  n.set_domain("com.microsoft");
  return n;
}

TEST(QLinearAdd, BroadcastTieAndZeroPoints) {
  KernelRunner k;
  // A = [0, 5], B = 4 -> [4, 9]; / 2 = [2, 4.5 -> 4]; + 1.
  Tensor y = k.run(ms_node("QLinearAdd", 8), 1,
                   {vec<uint8_t>({10, 20}), f32(0.5f), vec<uint8_t>({10}, {}), vec<uint8_t>({4}, {1}), f32(1),
                    vec<uint8_t>({0}, {}), f32(2), vec<uint8_t>({1}, {})});
  EXPECT_EQ(y.dtype(), DType::kU8);
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{3, 5}));
}

TEST(QLinearMul, TiesAndSaturationInInt8) {
  KernelRunner k;
  // [2, -2] * 4.5 = [9, -9]; / 2 = [4.5, -4.5] -> [4, -4].
  std::vector<Tensor> in{vec<int8_t>({4, -4}), f32(0.5f), vec<int8_t>({0}, {}), vec<int8_t>({3}, {}), f32(1.5f),
                         vec<int8_t>({0}, {}), f32(2), vec<int8_t>({0}, {})};
  EXPECT_EQ(values<int8_t>(k.run(ms_node("QLinearMul", 8), 1, in)), (std::vector<int8_t>{4, -4}));
  in[6] = f32(0.01f);
  EXPECT_EQ(values<int8_t>(k.run(ms_node("QLinearMul", 8), 1, in)), (std::vector<int8_t>{127, -128}));
}

TEST(QLinearSigmoid, HalfAndSaturatedOne) {
  KernelRunner k;
  // sigmoid(0) = 0.5 -> 128 at 1/256; sigmoid(255) = 1 -> 256 -> 255.
  Tensor y = k.run(ms_node("QLinearSigmoid", 5), 1,
                   {vec<uint8_t>({0, 255}), f32(1), vec<uint8_t>({0}, {}), f32(1.0f / 256), vec<uint8_t>({0}, {})});
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{128, 255}));
}

TEST(QLinearLeakyRelu, AlphaOnNegativesOnly) {
  KernelRunner k;
  onnx::NodeProto n = ms_node("QLinearLeakyRelu", 5);
  add_float(n, "alpha", 0.1f);
  // [-5, 3] -> [-0.5, 3] -> / 0.1 = [-5, 30].
  Tensor y = k.run(n, 1, {vec<int8_t>({-50, 30}), f32(0.1f), vec<int8_t>({0}, {}), f32(0.1f), vec<int8_t>({0}, {})});
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{-5, 30}));
}

TEST(QLinearConcat, RequantizesEachInputOntoTheOutputGrid) {
  KernelRunner k;
  onnx::NodeProto n = ms_node("QLinearConcat", 8);
  add_int(n, "axis", 1);
  // [10] at 0.5 -> 5; [3, 4] at (2, zp 1) -> [4, 6].
  Tensor y = k.run(n, 1, {f32(1), vec<uint8_t>({0}, {}), vec<uint8_t>({10}, {1, 1}), f32(0.5f), vec<uint8_t>({0}, {}),
                          vec<uint8_t>({3, 4}, {1, 2}), f32(2), vec<uint8_t>({1}, {})});
  EXPECT_EQ(y.shape(), (Shape{1, 3}));
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{5, 4, 6}));
}

TEST(QLinearAveragePool, AverageThenQuantizeWithTie) {
  KernelRunner k;
  onnx::NodeProto n = ms_node("QLinearAveragePool", 5);
  add_ints(n, "kernel_shape", {2, 2});
  // (0 + 1 + 2 + 4) / 4 = 1.75; / 0.5 = 3.5 -> 4.
  Tensor y = k.run(n, 1, {vec<uint8_t>({0, 1, 2, 4}, {1, 1, 2, 2}), f32(1), vec<uint8_t>({0}, {}), f32(0.5f),
                          vec<uint8_t>({0}, {})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{4}));
}

TEST(QLinearGlobalAveragePool, ChannelsLast) {
  KernelRunner k;
  onnx::NodeProto n = ms_node("QLinearGlobalAveragePool", 5);
  add_int(n, "channels_last", 1);
  // [N=1, S=2, C=2]: channel 0 = [1, 3] -> 2, channel 1 = [10, 20] -> 15.
  Tensor y = k.run(n, 1, {vec<uint8_t>({1, 10, 3, 20}, {1, 2, 2}), f32(1), vec<uint8_t>({0}, {}), f32(1),
                          vec<uint8_t>({0}, {})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2}));
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{2, 15}));
}

// A model of one node `op` in `domain` on a uint8 [2] input "x".
onnx::ModelProto ms_model(const std::string& op, const std::string& domain) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* ms = m.add_opset_import();
  ms->set_domain(domain);
  ms->set_version(1);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::UINT8);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::UINT8);
  auto scalar = [&](const std::string& name, int type, float v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    if (type == onnx::TensorProto::FLOAT) t->add_float_data(v);
    else t->add_int32_data(static_cast<int32_t>(v));
  };
  scalar("s", onnx::TensorProto::FLOAT, 1.0f);
  scalar("z", onnx::TensorProto::UINT8, 0);
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_domain(domain);
  n->set_name("q");
  for (const char* i : {"x", "s", "z", "x", "s", "z", "s", "z"}) n->add_input(i);
  n->add_output("y");
  return m;
}

TEST(SessionDomains, ComMicrosoftOpsRunAndUnknownOnesAreNamed) {
  auto s = Session::from_proto(ms_model("QLinearAdd", "com.microsoft"));
  std::vector<Tensor> out = s->run({vec<uint8_t>({3, 200})});
  EXPECT_EQ(values<uint8_t>(out[0]), (std::vector<uint8_t>{6, 255}));
  try {
    Session::from_proto(ms_model("QLinearSoftmaxFancy", "com.microsoft"));
    ADD_FAILURE() << "expected Unsupported";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_EQ(e.node(), "q");
    EXPECT_EQ(e.reason(), "operator com.microsoft.QLinearSoftmaxFancy is not supported");
  }
  try {
    Session::from_proto(ms_model("QLinearAdd", "org.example"));
    ADD_FAILURE() << "expected Unsupported";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_EQ(e.reason(), "operator domain 'org.example' is not supported");
  }
}

}  // namespace
}  // namespace torq::engine::test
