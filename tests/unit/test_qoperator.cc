// The QOperator rewrite (worker/quant/qoperator_rewrite.h) of the demo CNN,
// calibrated for real: which ops it writes, that ONNX's checker accepts it,
// and that on the engine each integer op gives the QDQ model's int8 values
// fed the same int8 inputs, within what the order of rounding allows:
//  - an integer op computes in one step what the QDQ model computes as
//    dequantize -> float op -> quantize; the two differ by float rounding
//    only, which moves a value by at most 1 step (a tie rounding the other
//    way). MaxPool and Flatten on int8 are exact.
//  - where a Relu was folded, the QDQ model rounds twice (to the op's own
//    output scale s_in, then, after the Relu, to s_out) and the integer op
//    once, so they differ by at most 1 + ceil(s_in / (2 s_out)) steps.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "worker/engine/session.h"
#include "worker/engine/tensor_io.h"
#include "worker/quant/calibrate.h"
#include "worker/quant/qoperator_rewrite.h"
#include "worker/quant/quantize_model.h"
#include "worker/sim/demo_model.h"

namespace torq::quant {
namespace {

using Values = std::map<std::string, engine::Tensor>;

onnx::ModelProto demo() {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(sim::build_demo_model()));
  return m;
}

struct Quantized {
  QdqResult qdq;
  QOperatorResult qop;
};

Quantized quantize(const onnx::ModelProto& m, bool per_channel) {
  Quantized q;
  q.qdq = quantize_qdq(m, calibrate(m, 4, 0), QdqOptions{per_channel});
  q.qop = to_qoperator(q.qdq);
  return q;
}

// The demo quantized both ways, once for the whole suite.
const Quantized& demo_quantized(bool per_channel) {
  static const std::map<bool, Quantized> q = {{false, quantize(demo(), false)}, {true, quantize(demo(), true)}};
  return q.at(per_channel);
}

std::map<std::string, int> op_counts(const onnx::ModelProto& m) {
  std::map<std::string, int> c;
  for (const auto& n : m.graph().node()) ++c[n.op_type()];
  return c;
}

Values run_all(const onnx::ModelProto& m, uint64_t seed) {
  auto s = engine::Session::from_proto(m);
  return s->run_all(s->random_inputs(seed, -1.f, 1.f));
}

class QOperatorDemo : public ::testing::TestWithParam<bool> {};

TEST_P(QOperatorDemo, WritesTheIntegerOpsOnnxruntimeWrites) {
  const Quantized& q = demo_quantized(GetParam());
  const std::map<std::string, int> want = {
      {"QuantizeLinear", 3},  // the graph input, Gemm's int32 sum, Softmax's output
      {"DequantizeLinear", 2},  // Softmax's input, the graph output
      {"QLinearConv", 4},         {"MaxPool", 1},  {"QLinearSigmoid", 1}, {"QLinearMul", 1},
      {"QLinearAdd", 1},          {"QLinearGlobalAveragePool", 1},        {"Flatten", 1},
      {"MatMulInteger", 1},       {"Add", 1},      {"Softmax", 1}};
  EXPECT_EQ(op_counts(q.qop.model), want);
  EXPECT_EQ(q.qop.integer_ops, (std::map<std::string, int>{{"MatMulInteger", 1}, {"QLinearAdd", 1},
                                                            {"QLinearConv", 4}, {"QLinearGlobalAveragePool", 1},
                                                            {"QLinearMul", 1}, {"QLinearSigmoid", 1}}));
  EXPECT_EQ(q.qop.on_int8, (std::map<std::string, int>{{"Flatten", 1}, {"MaxPool", 1}}));
  EXPECT_EQ(q.qop.folded, (std::map<std::string, int>{{"Relu", 2}}));
  EXPECT_EQ(q.qop.stayed_qdq, (std::map<std::string, int>{{"Softmax", 1}}));
  std::map<std::string, int64_t> opsets;
  for (const auto& imp : q.qop.model.opset_import()) opsets[imp.domain()] = imp.version();
  EXPECT_EQ(opsets, (std::map<std::string, int64_t>{{"", 13}, {"com.microsoft", 1}}));
  for (const auto& n : q.qop.model.graph().node())
    EXPECT_EQ(n.domain(), n.op_type().rfind("QLinear", 0) == 0 && n.op_type() != "QLinearConv" ? "com.microsoft" : "")
        << n.op_type();
}

TEST_P(QOperatorDemo, KeepsFloatEndsTopologicalOrderAndOnlyWhatIsRead) {
  const onnx::GraphProto& g = demo_quantized(GetParam()).qop.model.graph();
  std::set<std::string> known, read;
  for (const auto& t : g.initializer()) known.insert(t.name());
  for (const auto& i : g.input()) known.insert(i.name());
  std::map<std::string, const onnx::NodeProto*> producer;
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) {
      EXPECT_TRUE(in.empty() || known.count(in)) << n.name() << " reads " << in << " before it exists";
      read.insert(in);
    }
    for (const auto& o : n.output()) {
      known.insert(o);
      producer[o] = &n;
    }
  }
  for (const auto& t : g.initializer()) EXPECT_TRUE(read.count(t.name())) << "unread initializer " << t.name();
  ASSERT_EQ(g.input_size(), 1);
  EXPECT_EQ(g.input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(g.node(0).op_type(), "QuantizeLinear");
  EXPECT_EQ(g.node(0).input(0), "input");
  for (const auto& o : g.output()) {
    EXPECT_EQ(o.type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
    EXPECT_EQ(producer.at(o.name())->op_type(), "DequantizeLinear");
  }
  // Names kept: the folded conv1 + relu1 writes relu1's quantized tensor.
  EXPECT_EQ(producer.at("relu1_quantized")->op_type(), "QLinearConv");
  EXPECT_EQ(producer.at("relu1_quantized")->name(), "Conv_conv1_quant");
  EXPECT_EQ(producer.at("pool1_quantized")->op_type(), "MaxPool");
  EXPECT_EQ(producer.at("logits_quantized")->op_type(), "QuantizeLinear");
  EXPECT_EQ(producer.at("logits_int32")->op_type(), "Add");
}

// onnx::checker knows no com.microsoft schema and checks those nodes'
// structure only; every default-domain node is checked against its schema.
TEST_P(QOperatorDemo, PassesTheOnnxChecker) {
  EXPECT_NO_THROW(onnx::checker::check_model(demo_quantized(GetParam()).qop.model));
}

onnx::ValueInfoProto value_info(const std::string& name, const engine::Tensor& t) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(base::dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) tt->mutable_shape()->add_dim()->set_dim_value(d);
  return v;
}

// `m` cut down to the nodes that compute `tensor` from values in `known`
// (a chain: the Gemm's MatMulInteger -> Add -> QuantizeLinear, else one node).
onnx::ModelProto cut(const onnx::ModelProto& m, const std::string& tensor, const Values& known,
                     std::vector<engine::Tensor>* inputs) {
  std::map<std::string, const onnx::NodeProto*> producer;
  for (const auto& n : m.graph().node())
    for (const auto& o : n.output()) producer[o] = &n;
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  onnx::ModelProto sub = m;
  auto* g = sub.mutable_graph();
  g->clear_node();
  g->clear_input();
  g->clear_output();
  g->clear_value_info();
  std::vector<const onnx::NodeProto*> chain;
  std::set<std::string> fed;
  for (std::string t = tensor; !t.empty();) {
    chain.insert(chain.begin(), producer.at(t));
    t.clear();
    for (const auto& in : chain.front()->input()) {
      if (in.empty() || inits.count(in)) continue;
      if (!known.count(in)) t = in;
      else if (fed.insert(in).second) {
        *g->add_input() = value_info(in, known.at(in));
        inputs->push_back(known.at(in));
      }
    }
  }
  for (const auto* n : chain) *g->add_node() = *n;
  *g->add_output() = value_info(tensor, known.at(tensor));
  return sub;
}

int max_step_diff(const engine::Tensor& a, const engine::Tensor& b) {
  int d = 0;
  for (int64_t i = 0; i < a.numel(); ++i) d = std::max(d, std::abs(a.data<int8_t>()[i] - b.data<int8_t>()[i]));
  return d;
}

// The allowed difference at `tensor` (see the top of the file): the QDQ
// model quantizes it after a Relu that the QOperator model folded away.
int allowed_steps(const QdqResult& qdq, const std::string& tensor) {
  std::map<std::string, const onnx::NodeProto*> producer;
  std::map<std::string, float> scalars;
  for (const auto& n : qdq.model.graph().node())
    for (const auto& o : n.output()) producer[o] = &n;
  for (const auto& t : qdq.model.graph().initializer())
    if (t.data_type() == onnx::TensorProto::FLOAT && t.dims_size() == 0)
      scalars[t.name()] = engine::tensor_from_proto(t).to_float_vector()[0];
  const onnx::NodeProto* q = producer.at(tensor);
  const onnx::NodeProto* relu = producer.count(q->input(0)) ? producer.at(q->input(0)) : nullptr;
  if (!relu || relu->op_type() != "Relu") return 1;
  const onnx::NodeProto* dq = producer.at(relu->input(0));
  return 1 + static_cast<int>(std::ceil(scalars.at(dq->input(1)) / (2 * scalars.at(q->input(1)))));
}

TEST_P(QOperatorDemo, EachIntegerOpGivesTheQdqModelsInt8ValuesWithinTheRoundingBound) {
  const Quantized& q = demo_quantized(GetParam());
  const Values ref = run_all(q.qdq.model, 0);
  int checked = 0, folded = 0;
  for (const auto& n : q.qop.model.graph().node()) {
    const std::string& y = n.output(0);
    auto r = ref.find(y);
    if (r == ref.end() || r->second.dtype() != engine::DType::kI8) continue;
    std::vector<engine::Tensor> inputs;
    const onnx::ModelProto sub = cut(q.qop.model, y, ref, &inputs);
    const engine::Tensor got = engine::Session::from_proto(sub)->run(inputs).at(0);
    ASSERT_EQ(got.shape(), r->second.shape()) << y;
    const int bound = allowed_steps(q.qdq, y);
    const bool exact = n.op_type() == "MaxPool" || n.op_type() == "Flatten";
    EXPECT_LE(max_step_diff(got, r->second), exact ? 0 : bound) << n.op_type() << " writing " << y;
    ++checked;
    folded += bound > 1;
  }
  EXPECT_EQ(checked, 13);  // the input's Q, 10 integer ops, the Gemm's requantization, Softmax's Q
  EXPECT_EQ(folded, 2);
}

double pcc(const engine::Tensor& a, const engine::Tensor& b) {
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
  const auto n = static_cast<double>(a.numel());
  for (int64_t i = 0; i < a.numel(); ++i) mx += x[i] / n, my += y[i] / n;
  for (int64_t i = 0; i < a.numel(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

// End to end the per-op differences add up along the graph; on the held-out
// input the outputs still agree.
TEST_P(QOperatorDemo, GraphOutputsAgreeWithTheQdqModel) {
  const Quantized& q = demo_quantized(GetParam());
  const engine::Tensor a = run_all(q.qdq.model, 0).at("probabilities");
  const engine::Tensor b = run_all(q.qop.model, 0).at("probabilities");
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_GE(pcc(a, b), 0.9999);
}

INSTANTIATE_TEST_SUITE_P(PerTensorAndPerChannel, QOperatorDemo, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "PerChannel" : "PerTensor"; });

onnx::NodeProto* node_named(onnx::ModelProto* m, const std::string& name) {
  for (auto& n : *m->mutable_graph()->mutable_node())
    if (n.name() == name) return &n;
  ADD_FAILURE() << "no node " << name;
  return nullptr;
}

void add_scalar(onnx::ModelProto* m, const std::string& name, float v) {
  auto* t = m->mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_float_data(v);
}

// A clamp is folded only where saturation is the clamp: Clip(0, 6) is,
// Clip(0.5, inf) is not (0.5 does not quantize to -128) and stays in QDQ
// form, its Conv still becoming a QLinearConv.
TEST(QOperator, FoldsAClipOnlyWhereSaturationIsTheClamp) {
  onnx::ModelProto m = demo();
  add_scalar(&m, "zero", 0.f);
  add_scalar(&m, "six", 6.f);
  add_scalar(&m, "half", 0.5f);
  node_named(&m, "Relu_relu1")->set_op_type("Clip");
  node_named(&m, "Relu_relu1")->add_input("half");
  node_named(&m, "Relu_relu2")->set_op_type("Clip");
  node_named(&m, "Relu_relu2")->add_input("zero");
  node_named(&m, "Relu_relu2")->add_input("six");
  const QOperatorResult r = quantize(m, false).qop;
  EXPECT_EQ(r.folded, (std::map<std::string, int>{{"Clip", 1}}));
  EXPECT_EQ(r.stayed_qdq, (std::map<std::string, int>{{"Clip", 1}, {"Softmax", 1}}));
  EXPECT_EQ(r.integer_ops.at("QLinearConv"), 4);
  EXPECT_NO_THROW(onnx::checker::check_model(r.model));
  EXPECT_EQ(run_all(r.model, 0).at("probabilities").numel(), 10);
}

// Gemm without a bias is one QLinearMatMul (its transB weight transposed);
// with alpha != 1 it has no integer form and stays in QDQ form.
TEST(QOperator, GemmWithoutBiasIsQLinearMatMulAndAScaledGemmStaysQdq) {
  onnx::ModelProto m = demo();
  node_named(&m, "Gemm_logits")->mutable_input()->RemoveLast();
  const QOperatorResult plain = quantize(m, true).qop;
  EXPECT_EQ(plain.integer_ops.at("QLinearMatMul"), 1);
  EXPECT_EQ(plain.integer_ops.count("MatMulInteger"), 0u);
  EXPECT_EQ(op_counts(plain.model).count("Gemm"), 0u);
  EXPECT_NO_THROW(onnx::checker::check_model(plain.model));
  const Quantized q = quantize(m, true);
  EXPECT_GE(pcc(run_all(q.qdq.model, 0).at("probabilities"), run_all(q.qop.model, 0).at("probabilities")), 0.9999);
  auto* alpha = node_named(&m, "Gemm_logits")->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(0.5f);
  const QOperatorResult scaled = quantize(m, true).qop;
  EXPECT_EQ(scaled.stayed_qdq, (std::map<std::string, int>{{"Gemm", 1}, {"Softmax", 1}}));
  EXPECT_EQ(op_counts(scaled.model).at("Gemm"), 1);
}

// The command's report: the QOperator model is the one measured, its
// per-tensor errors read from int8 tensors (relu1 via the folded QLinearConv;
// conv1 no longer exists), and its outputs stay close to fp32.
TEST(QOperator, QuantizeModelMeasuresTheQOperatorModel) {
  QuantizeOptions o;
  o.format = "qoperator";
  o.num_calib = 4;
  const QuantizeReport r = quantize_model(demo(), o);
  ASSERT_TRUE(r.qoperator.has_value());
  EXPECT_EQ(&r.model(), &r.qoperator->model);
  std::set<std::string> measured;
  for (const auto& e : r.errors) measured.insert(e.tensor);
  EXPECT_TRUE(measured.count("relu1") && measured.count("pool1") && measured.count("probabilities"));
  EXPECT_FALSE(measured.count("conv1"));
  EXPECT_EQ(measured.size(), r.qoperator->quantized.size());
  for (const auto& e : r.errors) EXPECT_LT(e.rmse, 0.1) << e.tensor;
  EXPECT_GE(r.output_pcc, 0.99);
}

}  // namespace
}  // namespace torq::quant
