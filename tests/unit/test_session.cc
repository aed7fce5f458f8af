// Session: loading errors name the node, inputs are validated, numerics
// modes behave as documented, and the built-in demo model runs.
#include <gtest/gtest.h>

#include <cmath>

#include <onnx/onnx_pb.h>

#include "worker/engine/compare.h"
#include "pipeline/base/error.h"
#include "worker/engine/kernel.h"
#include "worker/engine/session.h"
#include "worker/engine/tensor_io.h"
#include "worker/sim/demo_model.h"

using namespace torq::engine;

namespace {

onnx::ModelProto one_node_model(const std::string& op, int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_version(opset);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("the_node");
  n->add_input("x");
  n->add_output("y");
  return m;
}

EngineError load_error(const onnx::ModelProto& m) {
  try {
    Session::from_proto(m);
  } catch (const EngineError& e) {
    return e;
  }
  return EngineError(ErrorKind::kRuntime, "no error");
}

}  // namespace

TEST(Session, UnknownOpIsUnsupportedAndNamesTheNode) {
  EngineError e = load_error(one_node_model("FancyOp"));
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_EQ(e.node(), "the_node");
  EXPECT_EQ(e.op(), "FancyOp");
  EXPECT_STREQ(e.what(), "node 'the_node' (FancyOp): operator FancyOp is not supported");
}

TEST(Session, UnknownAttributeIsUnsupportedNotIgnored) {
  onnx::ModelProto m = one_node_model("Relu");
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("mystery");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  EngineError e = load_error(m);
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_NE(std::string(e.what()).find("mystery"), std::string::npos) << e.what();
}

TEST(Session, GarbageBytesAreAnInvalidModel) {
  try {
    Session::from_bytes("this is not protobuf \x01\x02\x03");
    FAIL() << "no error";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
  }
}

TEST(Session, DanglingInputIsAnInvalidModel) {
  onnx::ModelProto m = one_node_model("Relu");
  m.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  EngineError e = load_error(m);
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
  EXPECT_NE(std::string(e.what()).find("'nowhere' is not produced"), std::string::npos) << e.what();
}

TEST(Session, InputTypeAndShapeAreChecked) {
  auto s = Session::from_proto(one_node_model("Relu"));
  try {
    s->run({Tensor::from_vector<int64_t>({1, 2, 3, 4}, {4})});
    FAIL() << "no error";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_STREQ(e.what(), "input 'x' expects f32, got i64");
  }
  try {
    s->run({Tensor::from_vector<float>({1, 2, 3}, {3})});
    FAIL() << "no error";
  } catch (const EngineError& e) {
    EXPECT_STREQ(e.what(), "input 'x' expects shape [4], got [3]");
  }
  auto y = s->run({Tensor::from_vector<float>({-1, 2, -3, 4}, {4})});
  EXPECT_EQ(y[0].to_float_vector(), (std::vector<float>{0, 2, 0, 4}));
}

TEST(Session, Bf16NumericsRoundsInputsAndOutputs) {
  SessionOptions so;
  so.numerics = Numerics::kBF16;
  so.rounding = Rounding::kTruncate;
  auto s = Session::from_proto(one_node_model("Relu"), so);
  EXPECT_EQ(s->inputs()[0].dtype, DType::kBF16);
  const float v = 1.0f + 0.00390625f + 0.001953125f;
  auto y = s->run({Tensor::from_vector<float>({v, -v, 2 * v, 0}, {4})});
  ASSERT_EQ(y[0].dtype(), DType::kBF16);
  EXPECT_EQ(y[0].to_float_vector(), (std::vector<float>{1.0f, 0.0f, 2.0f, 0.0f}));
}

TEST(Session, DemoModelRunsAndBf16StaysClose) {
  const std::string bytes = torq::sim::build_demo_model();
  SessionOptions so;
  so.profile = std::make_shared<ExecutorProfile>(ExecutorProfile::resolve("host"));
  auto fp32 = Session::from_bytes(bytes, so);
  auto inputs = fp32->random_inputs(1);
  auto y = fp32->run(inputs);
  ASSERT_EQ(y[0].shape(), (Shape{1, 10}));
  double sum = 0;
  for (float v : y[0].to_float_vector()) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-5);  // softmax output
  EXPECT_GT(fp32->last_stats().sim_cycles, 0u);
  EXPECT_GT(fp32->last_stats().sim_ms, 0.0);
  so.numerics = Numerics::kBF16;
  auto bf16 = Session::from_bytes(bytes, so);
  auto yb = bf16->run(inputs);
  TensorDiff d = compare_tensors(yb[0], y[0]);
  EXPECT_GT(d.pcc, 0.99);
  EXPECT_LT(d.max_abs, 0.05);
}

TEST(Session, NssRunsBf16ConvAndMaxPoolAndRejectsSoftmax) {
  SessionOptions so;
  so.numerics = Numerics::kBF16;
  so.profile = std::make_shared<ExecutorProfile>(ExecutorProfile::resolve("nss"));
  auto s = Session::from_bytes(torq::sim::build_demo_model(), so);
  try {
    s->run(s->random_inputs(1));
    FAIL() << "no error";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_EQ(e.op(), "Softmax");  // the demo's Conv, depthwise Conv, MaxPool, Sigmoid... ran
    EXPECT_NE(e.reason().find("Softmax is not supported on nss"), std::string::npos) << e.what();
  }
}

TEST(TensorIo, NpyAndPbRoundTrip) {
  Tensor t = Tensor::from_vector<float>({1.5f, -2.25f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
  const std::string dir = ::testing::TempDir();
  write_tensor_file(t, dir + "/t.npy");
  write_tensor_file(t, dir + "/t.pb");
  for (const char* f : {"/t.npy", "/t.pb"}) {
    Tensor r = read_tensor_file(dir + f);
    EXPECT_EQ(r.shape(), t.shape()) << f;
    EXPECT_EQ(r.to_float_vector(), t.to_float_vector()) << f;
  }
}

TEST(TensorIo, TruncatedNpyIsAClearError) {
  const std::string path = ::testing::TempDir() + "/bad.npy";
  {
    Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
    write_tensor_file(t, path);
    std::string bytes;
    FILE* f = std::fopen(path.c_str(), "rb");
    char buf[4096];
    size_t n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    f = std::fopen(path.c_str(), "wb");
    std::fwrite(buf, 1, n - 6, f);
    std::fclose(f);
  }
  try {
    read_tensor_file(path);
    FAIL() << "no error";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("truncated data"), std::string::npos) << e.what();
  }
}

TEST(Registry, EveryOpTheIssueListsIsRegisteredForOpsets7To17) {
  const char* ops[] = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu",
                       "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Softplus", "MaxPool",
                       "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization",
                       "LayerNormalization", "InstanceNormalization", "LRN", "Softmax", "LogSoftmax", "Add", "Sub",
                       "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Abs", "Neg", "Reciprocal", "Min", "Max", "Sum",
                       "Mean", "Equal", "Less", "Greater", "Where", "Not", "And", "Or", "Concat", "Split", "Slice",
                       "Gather", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Expand", "Tile", "Pad",
                       "Resize", "Upsample", "DepthToSpace", "SpaceToDepth", "ReduceMean", "ReduceSum", "ReduceMax",
                       "ReduceMin", "ReduceProd", "ReduceL2", "ArgMax", "Cast", "Shape", "Size", "Constant",
                       "ConstantOfShape", "Range", "Identity", "Dropout"};
  const auto& reg = KernelRegistry::global();
  for (const char* op : ops) {
    // Each op from the opset where it exists (within 7..17) up to 17.
    const int first = std::string(op) == "LayerNormalization" ? 17
                      : std::string(op) == "HardSwish"        ? 14
                      : std::string(op) == "Range"            ? 11
                      : std::string(op) == "Resize"           ? 10
                      : std::string(op) == "Erf"              ? 9
                      : std::string(op) == "Where" || std::string(op) == "Shape" || std::string(op) == "Size" ? 9
                      : std::string(op) == "ConstantOfShape"  ? 9
                      : std::string(op) == "Expand"           ? 8
                      : 7;
    const int last = std::string(op) == "Upsample" ? 9 : 17;  // Upsample was removed in opset 10
    for (int v = first; v <= last; ++v) EXPECT_NE(reg.find(op, v), nullptr) << op << " at opset " << v;
  }
}
