// MLIR locations: torch-mlir import text emitted from an ONNX model maps the
// i-th non-Constant node to the i-th `torch.operator "onnx.<Op>"` line;
// count and op-type mismatches are reported.
#include <gtest/gtest.h>

#include <sstream>

#include "pipeline/mlir.h"
#include "pipeline/types.h"

using namespace torq::pipeline;

namespace {

void set_tensor_type(onnx::ValueInfoProto* v, const std::string& name, int32_t dt, std::vector<int64_t> dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dt);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    if (d < 0) {
      shape->add_dim()->set_dim_param("N");
    } else {
      shape->add_dim()->set_dim_value(d);
    }
  }
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_node");
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

void add_ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// x[?,3,8,8] -> Conv(W, B) -> Relu -> Reshape(Constant [0,-1]) -> y
onnx::ModelProto small_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("test");
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {-1, 3, 8, 8});
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {4, 3, 3, 3}) w->add_dims(d);
  for (int i = 0; i < 4 * 3 * 3 * 3; ++i) w->add_float_data(0.01f * i);
  auto* b = g->add_initializer();
  b->set_name("B");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(4);
  for (int i = 0; i < 4; ++i) b->add_float_data(0.5f);

  auto* conv = add_node(g, "Conv", {"x", "W", "B"}, {"c"});
  add_ints(conv, "kernel_shape", {3, 3});
  add_ints(conv, "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c"}, {"r"});
  auto* k = add_node(g, "Constant", {}, {"shape"});
  auto* value = k->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(2);
  value->mutable_t()->add_int64_data(0);
  value->mutable_t()->add_int64_data(-1);
  add_node(g, "Reshape", {"r", "shape"}, {"y"});
  set_tensor_type(g->add_output(), "y", onnx::TensorProto::FLOAT, {-1, 256});
  return m;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// "line:col" of the first line containing `needle`, computed from the text.
std::string location_of(const std::string& text, const std::string& needle) {
  const auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find(needle) != std::string::npos)
      return std::to_string(i + 1) + ":" + std::to_string(lines[i].find("torch.operator") + 1);
  return "";
}

const char* kHandWritten =
    "module {\n"
    "  func.func @main_graph(%arg0: !torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32> {\n"
    "    %0 = torch.operator \"onnx.Constant\"() {torch.onnx.value = dense<1.0> : tensor<f32>} : () -> "
    "!torch.vtensor<[],f32>\n"
    "    %1 = torch.operator \"onnx.Add\"(%arg0, %0) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],f32>) -> "
    "!torch.vtensor<[1,4],f32>\n"
    "    %2 = torch.operator \"onnx.Relu\"(%1) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>\n"
    "    %10 = torch.operator \"onnx.Sigmoid\"(%2) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>\n"
    "    return %10 : !torch.vtensor<[1,4],f32>\n"
    "  }\n"
    "}\n";

}  // namespace

TEST(EmitMlir, NonConstantNodesAreTheOperatorLinesInOrder) {
  const onnx::ModelProto model = small_model();
  const std::string text = emit_torch_mlir(model);
  const auto ops = non_constant_op_types(model);
  ASSERT_EQ(ops, (std::vector<std::string>{"Conv", "Relu", "Reshape"}));

  // The Constant node is not an onnx operator line.
  EXPECT_EQ(text.find("onnx.Constant"), std::string::npos) << text;
  size_t operator_lines = 0;
  for (const auto& line : lines_of(text)) operator_lines += line.find("torch.operator \"onnx.") != std::string::npos;
  EXPECT_EQ(operator_lines, 3u);

  const MlirMapping m = map_mlir_locations(text, ops);
  EXPECT_TRUE(m.problems.empty()) << m.problems[0];
  ASSERT_EQ(m.locations.size(), 3u);
  EXPECT_EQ(m.locations[0], location_of(text, "\"onnx.Conv\""));
  EXPECT_EQ(m.locations[1], location_of(text, "\"onnx.Relu\""));
  EXPECT_EQ(m.locations[2], location_of(text, "\"onnx.Reshape\""));
  // module, func, two weight literals, then Conv as %2: column 10.
  EXPECT_EQ(m.locations[0], "5:10") << text;
  EXPECT_EQ(m.locations[1], "6:10") << text;
  EXPECT_EQ(m.locations[2], "8:10") << text;  // line 7 is the Constant literal
}

TEST(EmitMlir, TorchMlirTextualForm) {
  const std::string text = emit_torch_mlir(small_model());
  const auto lines = lines_of(text);
  ASSERT_GE(lines.size(), 10u);
  EXPECT_EQ(lines[0], "module {");
  EXPECT_EQ(lines[1],
            "  func.func @main_graph(%arg0: !torch.vtensor<[?,3,8,8],f32>) -> !torch.vtensor<[?,256],f32> attributes "
            "{torch.onnx_meta.ir_version = 8 : si64, torch.onnx_meta.opset_version = 13 : si64, "
            "torch.onnx_meta.producer_name = \"test\", torch.onnx_meta.producer_version = \"\"} {");
  EXPECT_EQ(lines[2],
            "    %0 = torch.vtensor.literal(dense_resource<__elided__> : tensor<4x3x3x3xf32>) : "
            "!torch.vtensor<[4,3,3,3],f32>");
  // Shapes from shape inference; attributes sorted, si64 lists.
  EXPECT_EQ(lines[4],
            "    %2 = torch.operator \"onnx.Conv\"(%arg0, %0, %1) {torch.onnx.kernel_shape = [3 : si64, 3 : si64], "
            "torch.onnx.pads = [1 : si64, 1 : si64, 1 : si64, 1 : si64]} : (!torch.vtensor<[?,3,8,8],f32>, "
            "!torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[4],f32>) -> !torch.vtensor<[?,4,8,8],f32>");
  EXPECT_EQ(lines[6],
            "    %4 = torch.vtensor.literal(dense_resource<__elided__> : tensor<2xsi64>) : !torch.vtensor<[2],si64>");
  EXPECT_EQ(lines[8], "    return %5 : !torch.vtensor<[?,256],f32>");
}

TEST(EmitMlir, OmittedOptionalInputIsNone) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {2, 3});
  add_node(g, "Clip", {"x", "", ""}, {"y"});
  set_tensor_type(g->add_output(), "y", onnx::TensorProto::FLOAT, {2, 3});
  const std::string text = emit_torch_mlir(m);
  EXPECT_NE(text.find("    %none = torch.constant.none\n"), std::string::npos) << text;
  EXPECT_NE(text.find("torch.operator \"onnx.Clip\"(%arg0, %none, %none) : (!torch.vtensor<[2,3],f32>, !torch.none, "
                      "!torch.none) -> !torch.vtensor<[2,3],f32>"),
            std::string::npos)
      << text;
}

TEST(EmitMlir, UndefinedInputIsAPipelineError) {
  onnx::ModelProto m;
  m.add_opset_import()->set_version(13);
  add_node(m.mutable_graph(), "Relu", {"ghost"}, {"y"});
  EXPECT_THROW(emit_torch_mlir(m), PipelineError);
}

TEST(MapMlir, RealImportSkipsConstantOps) {
  const MlirMapping m = map_mlir_locations(kHandWritten, {"Add", "Relu", "Sigmoid"});
  EXPECT_TRUE(m.problems.empty());
  EXPECT_EQ(m.locations, (std::vector<std::string>{"4:10", "5:10", "6:11"}));
}

TEST(MapMlir, OpTypeMismatchIsReportedAndOthersStillMapped) {
  std::string text = kHandWritten;
  text.replace(text.find("onnx.Relu"), 9, "onnx.Clip");
  const MlirMapping m = map_mlir_locations(text, {"Add", "Relu", "Sigmoid"});
  ASSERT_EQ(m.problems.size(), 1u);
  EXPECT_EQ(m.problems[0], "OP TYPE MISMATCHES: node 1 is Relu but MLIR line 5 is onnx.Clip");
  EXPECT_EQ(m.locations, (std::vector<std::string>{"4:10", "", "6:11"}));
}

TEST(MapMlir, MissingOpIsACountMismatch) {
  std::string text = kHandWritten;
  const size_t start = text.find("    %2 = torch.operator");
  text.erase(start, text.find('\n', start) + 1 - start);
  const MlirMapping m = map_mlir_locations(text, {"Add", "Relu", "Sigmoid"});
  ASSERT_GE(m.problems.size(), 1u);
  EXPECT_EQ(m.problems[0], "COUNT MISMATCH: model has 3 non-Constant nodes, MLIR has 2 onnx operators");
  ASSERT_EQ(m.problems.size(), 2u);
  EXPECT_EQ(m.problems[1], "OP TYPE MISMATCHES: node 1 is Relu but MLIR line 5 is onnx.Sigmoid");
  EXPECT_EQ(m.locations, (std::vector<std::string>{"4:10", "", ""}));
}
