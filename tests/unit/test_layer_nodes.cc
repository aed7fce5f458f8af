// Layers of QDQ models (pipeline/model/layer_nodes.h): a compute op with its
// Q/DQ neighbours, on hand-built graphs and on the quantized demo CNN.
#include <gtest/gtest.h>

#include <set>

#include <onnx/onnx_pb.h>

#include "pipeline/model/layer_nodes.h"
#include "pipeline/model/mlir.h"
#include "pipeline/model/model_import.h"
#include "pipeline/plan/plan.h"
#include "pipeline/model/subgraph.h"
#include "worker/quant/quantize_model.h"
#include "worker/sim/demo_model.h"

using namespace torq::pipeline;

namespace {

// A tiny graph builder: node(op, inputs, outputs).
struct G {
  onnx::ModelProto m;
  G() {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
  }
  G& node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + out[0]);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return *this;
  }
  G& output(const std::string& name) {
    m.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  const onnx::GraphProto& g() const { return m.graph(); }
};

// input -> Q -> DQ -> Conv(DQ(w)) -> Q -> DQ -> Relu -> Q -> DQ -> output
G conv_relu() {
  G b;
  b.node("QuantizeLinear", {"x", "s", "z"}, {"x_q"})          // 0
      .node("DequantizeLinear", {"x_q", "s", "z"}, {"x_dq"})  // 1
      .node("DequantizeLinear", {"w_q", "ws"}, {"w_dq"})      // 2
      .node("Conv", {"x_dq", "w_dq"}, {"c"})                  // 3
      .node("QuantizeLinear", {"c", "s", "z"}, {"c_q"})       // 4
      .node("DequantizeLinear", {"c_q", "s", "z"}, {"c_dq"})  // 5
      .node("Relu", {"c_dq"}, {"r"})                          // 6
      .node("QuantizeLinear", {"r", "s", "z"}, {"r_q"})       // 7
      .node("DequantizeLinear", {"r_q", "s", "z"}, {"y"})     // 8
      .output("y");
  return b;
}

}  // namespace

TEST(LayerNodes, APlainModelHasOneLayerPerNonConstantNode) {
  G b;
  b.node("Constant", {}, {"k"}).node("Relu", {"x"}, {"a"}).node("Add", {"a", "k"}, {"y"}).output("y");
  const auto l = layer_nodes(b.g());
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].compute, 1);
  EXPECT_EQ(l[0].operator_index, 0);
  EXPECT_EQ(l[1].nodes, std::vector<int>{2});
  EXPECT_EQ(l[1].owned, std::vector<int>{2});
  EXPECT_FALSE(has_grouped_layers(l));
}

TEST(LayerNodes, AQdqLayerIsTheComputeOpWithItsInputDqsAndOutputQ) {
  const G b = conv_relu();
  const auto l = layer_nodes(b.g());
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].compute, 3);
  EXPECT_EQ(l[0].operator_index, 3);
  // The graph input's Q and DQ, the weight's DQ, Conv and its output Q.
  EXPECT_EQ(l[0].nodes, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(l[0].owned, (std::vector<int>{3, 4}));
  // The DQ of Conv's output, Relu, its Q and the graph output's DQ.
  EXPECT_EQ(l[1].nodes, (std::vector<int>{5, 6, 7, 8}));
  EXPECT_EQ(l[1].owned, (std::vector<int>{6, 7, 8}));
  EXPECT_TRUE(has_grouped_layers(l));
  // Layer outputs are integer: Conv's is its Q output; the last layer ends
  // in the graph output.
  EXPECT_EQ(range_outputs(b.g(), l, 0, 0), std::vector<std::string>{"c_q"});
  EXPECT_EQ(range_outputs(b.g(), l, 1, 1), std::vector<std::string>{"y"});
  EXPECT_EQ(range_outputs(b.g(), l, 0, 1), std::vector<std::string>{"y"});
  EXPECT_EQ(range_nodes(l, 0, 1), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

// Ids name the value a layer computes: Relu's is the graph output y its own
// Q -> DQ pair writes (a quantizer renamed Relu's output so y keeps its
// name), whatever Relu's own output is called; Conv's is its own output.
TEST(LayerNodes, ALayerWhoseQdqPairWritesAGraphOutputIsNamedAfterIt) {
  G b = conv_relu();
  std::vector<LayerInfo> ids = list_layers(b.m, nullptr);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0].id, "Conv_c");
  EXPECT_EQ(ids[1].id, "Relu_y");
  // Also read by a later op (whose layer then borrows the DQ): still y.
  G both = conv_relu();
  both.node("Sigmoid", {"y"}, {"z"}).output("z");
  ids = list_layers(both.m, nullptr);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1].id, "Relu_y");
  EXPECT_EQ(ids[2].id, "Sigmoid_z");
  // Read by another node instead of being a graph output: Relu's own name.
  b.m.mutable_graph()->clear_output();
  b.node("Sigmoid", {"y"}, {"z"}).output("z");
  ids = list_layers(b.m, nullptr);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1].id, "Relu_r");
  EXPECT_EQ(ids[2].id, "Sigmoid_z");
}

TEST(LayerNodes, ADqSharedByTwoConsumersRunsInBothAndIsOutputOfNeither) {
  G b;
  b.node("Relu", {"x"}, {"a"})                                 // 0
      .node("QuantizeLinear", {"a", "s", "z"}, {"a_q"})        // 1
      .node("DequantizeLinear", {"a_q", "s", "z"}, {"a_dq"})   // 2
      .node("Sigmoid", {"a_dq"}, {"p"})                        // 3
      .node("Mul", {"a_dq", "p"}, {"y"})                       // 4
      .output("y");
  const auto l = layer_nodes(b.g());
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(l[1].nodes, (std::vector<int>{2, 3}));
  EXPECT_EQ(l[2].nodes, (std::vector<int>{2, 4}));
  EXPECT_EQ(range_outputs(b.g(), l, 0, 0), std::vector<std::string>{"a_q"});
  EXPECT_EQ(range_outputs(b.g(), l, 1, 1), std::vector<std::string>{"p"});
  EXPECT_EQ(range_nodes(l, 1, 2), (std::vector<int>{2, 3, 4}));
}

TEST(LayerNodes, AQdqWithNoComputeNeighbourIsALayerOfItsOwn) {
  G b;
  b.node("Relu", {"x"}, {"y"}).node("DequantizeLinear", {"i_q", "s", "z"}, {"i"}).output("y").output("i");
  const auto l = layer_nodes(b.g());
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[1].compute, 1);
  EXPECT_EQ(l[1].nodes, std::vector<int>{1});
  // A model of Q/DQ alone (a conformance case) is plain: one node a layer.
  G q;
  q.node("QuantizeLinear", {"x", "s"}, {"x_q"}).node("DequantizeLinear", {"x_q", "s"}, {"y"}).output("y");
  EXPECT_EQ(layer_nodes(q.g()).size(), 2u);
}

class QuantizedDemo : public ::testing::Test {
 protected:
  void SetUp() override {
    fp32 = ImportedModel::from_bytes(torq::sim::build_demo_model(), "demo");
    torq::quant::QuantizeOptions o;
    o.num_calib = 2;
    const auto r = torq::quant::quantize_model(fp32->proto(), o);
    int8 = ImportedModel::from_bytes(r.qdq.model.SerializeAsString(), "demo_quant");
  }
  std::unique_ptr<ImportedModel> fp32, int8;
};

TEST_F(QuantizedDemo, HasTheLayersOfItsFp32OriginalInOrder) {
  ASSERT_EQ(int8->layers().size(), fp32->layers().size());
  for (size_t i = 0; i < fp32->layers().size(); ++i) {
    EXPECT_EQ(int8->layers()[i].op_type, fp32->layers()[i].op_type) << i;
    // The same ids too, the producer of the graph output (renamed by the
    // quantizer so the output keeps its name) included.
    EXPECT_EQ(int8->layers()[i].id, fp32->layers()[i].id) << i;
    EXPECT_EQ(int8->layers()[i].index, static_cast<int>(i));
    EXPECT_EQ(int8->proto().graph().node(int8->node_positions()[i]).op_type(), fp32->layers()[i].op_type);
  }
  EXPECT_TRUE(has_grouped_layers(int8->layer_nodes()));
  // Every node of the graph runs in some layer.
  EXPECT_EQ(range_nodes(int8->layer_nodes(), 0, static_cast<uint32_t>(int8->layers().size() - 1)).size(),
            static_cast<size_t>(int8->proto().graph().node_size()));
}

TEST_F(QuantizedDemo, MlirLocationsAreTheComputeOpsLines) {
  const std::string mlir = emit_torch_mlir(int8->proto());
  const MlirMapping m = map_layer_locations(mlir, int8->proto());
  EXPECT_TRUE(m.problems.empty()) << m.problems[0];
  ASSERT_EQ(m.locations.size(), int8->layers().size());
  for (size_t i = 0; i < m.locations.size(); ++i) {
    const size_t line = std::stoul(m.locations[i]);
    size_t at = 0;
    for (size_t k = 1; k < line; ++k) at = mlir.find('\n', at) + 1;
    const std::string text = mlir.substr(at, mlir.find('\n', at) - at);
    EXPECT_NE(text.find("torch.operator \"onnx." + int8->layers()[i].op_type + "\""), std::string::npos)
        << i << ": " << text;
  }
}

TEST_F(QuantizedDemo, SignaturesTellQuantizationParametersApart) {
  // Same op, attributes and shapes, different scales: different layers.
  std::set<std::string> sigs;
  for (const auto& l : int8->layers())
    sigs.insert(layer_signature(int8->proto(), int8->layer_nodes(), l.index, DedupMode::kSignature));
  std::set<std::string> fp32_sigs;
  for (const auto& l : fp32->layers())
    fp32_sigs.insert(layer_signature(fp32->proto(), fp32->layer_nodes(), l.index, DedupMode::kSignature));
  EXPECT_GE(sigs.size(), fp32_sigs.size());
}

TEST_F(QuantizedDemo, AllSignaturesAtOnceAreEachLayersOwnInEveryMode) {
  for (const ImportedModel* m : {int8.get(), fp32.get()})
    for (DedupMode mode : {DedupMode::kSignature, DedupMode::kExact}) {
      const auto all = layer_signatures(m->proto(), m->layer_nodes(), mode);
      ASSERT_EQ(all.size(), m->layers().size());
      for (const auto& l : m->layers())
        EXPECT_EQ(all[static_cast<size_t>(l.index)], layer_signature(m->proto(), m->layer_nodes(), l.index, mode))
            << l.id;
      EXPECT_NE(all.front(), all.back());
    }
}

TEST_F(QuantizedDemo, ASubgraphKeepsWholeLayers) {
  const LayerRange r{1, 3};
  const onnx::ModelProto sub = extract_subgraph(*int8, r);
  const auto again = layer_nodes(sub.graph());
  ASSERT_EQ(again.size(), 3u);
  for (size_t i = 0; i < again.size(); ++i)
    EXPECT_EQ(sub.graph().node(again[i].compute).op_type(), int8->layers()[1 + i].op_type);
  // Its inputs and outputs are the int8 tensors between layers.
  for (const auto& in : sub.graph().input())
    EXPECT_EQ(in.type().tensor_type().elem_type(), onnx::TensorProto::INT8) << in.name();
  for (const auto& out : sub.graph().output())
    EXPECT_EQ(out.type().tensor_type().elem_type(), onnx::TensorProto::INT8) << out.name();
}

// The outputs of every range of layers, as the definition says, walking
// the whole graph for each range: values the range's owned nodes produce
// that a node of a layer outside the range reads, or graph outputs.
std::vector<std::string> outputs_by_definition(const onnx::GraphProto& g, const std::vector<LayerNodes>& l,
                                               uint32_t first, uint32_t last) {
  std::set<std::string> read_outside;
  for (size_t i = 0; i < l.size(); ++i)
    if (i < first || i > last)
      for (int p : l[i].nodes)
        for (const auto& in : g.node(p).input()) read_outside.insert(in);
  for (const auto& o : g.output()) read_outside.insert(o.name());
  std::set<int> owned;
  for (uint32_t i = first; i <= last; ++i) owned.insert(l[i].owned.begin(), l[i].owned.end());
  std::vector<std::string> outs;
  for (int p : owned)
    for (const auto& o : g.node(p).output())
      if (!o.empty() && read_outside.count(o)) outs.push_back(o);
  if (outs.empty() && !owned.empty()) outs.push_back(g.node(*owned.rbegin()).output(0));
  return outs;
}

TEST_F(QuantizedDemo, IndexedRangeOutputsAreThoseOfTheDefinitionForEveryRange) {
  for (const ImportedModel* m : {fp32.get(), int8.get()}) {
    const auto& g = m->proto().graph();
    const auto& l = m->layer_nodes();
    const RangeOutputs outputs_of(g, l);
    size_t ranges = 0, multi = 0;
    for (uint32_t first = 0; first < l.size(); ++first)
      for (uint32_t last = first; last < l.size(); ++last) {
        const auto want = outputs_by_definition(g, l, first, last);
        ASSERT_EQ(outputs_of(first, last), want) << m->name() << " layers " << first << ".." << last;
        ++ranges;
        multi += want.size() > 1;
      }
    EXPECT_EQ(ranges, l.size() * (l.size() + 1) / 2);
    EXPECT_GT(multi, 0u) << m->name() << ": some range has several outputs (a branch leaves it)";
  }
}

TEST(LayerNodes, AnIfLayerReadsTheOuterScopeValuesOfItsBranches) {
  // a = Relu(x); b = Neg(x); z = If(c) then a + b else a. The If node names
  // only c; its branches read a and b, so the Relu and Neg layers output
  // them and the If layer's sub-model takes them as inputs.
  G b;
  b.node("Relu", {"x"}, {"a"}).node("Neg", {"x"}, {"b"}).node("If", {"c"}, {"z"}).output("z");
  auto* n = b.m.mutable_graph()->mutable_node(2);
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* attr = n->add_attribute();
    attr->set_name(branch);
    attr->set_type(onnx::AttributeProto::GRAPH);
    auto* g = attr->mutable_g();
    if (std::string(branch) == "then_branch") {
      auto* add = g->add_node();
      add->set_op_type("Add");
      add->add_input("a");
      add->add_input("b");
      add->add_output("s");
      g->add_output()->set_name("s");
    } else {
      g->add_output()->set_name("a");
    }
  }
  const auto layers = layer_nodes(b.g());
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(range_outputs(b.g(), layers, 0, 0), (std::vector<std::string>{"a"}));
  EXPECT_EQ(range_outputs(b.g(), layers, 0, 1), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(range_outputs(b.g(), layers, 2, 2), (std::vector<std::string>{"z"}));
}
