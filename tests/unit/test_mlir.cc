// MLIR locations: torch-mlir import text emitted from an ONNX model maps the
// i-th non-Constant node to the i-th `torch.operator "onnx.<Op>"` line;
// count and op-type mismatches are reported.
#include <gtest/gtest.h>

#include <sstream>

#include "pipeline/model/mlir.h"
#include "pipeline/core/types.h"

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

  // Initializers and the Constant node are onnx.Constant operator lines, as
  // the real importer writes them; the mapping skips them.
  size_t operator_lines = 0;
  for (const auto& line : lines_of(text)) operator_lines += line.find("torch.operator \"onnx.") != std::string::npos;
  EXPECT_EQ(operator_lines, 6u) << text;

  const MlirMapping m = map_mlir_locations(text, ops);
  EXPECT_TRUE(m.problems.empty()) << m.problems[0];
  ASSERT_EQ(m.locations.size(), 3u);
  EXPECT_EQ(m.locations[0], location_of(text, "\"onnx.Conv\""));
  EXPECT_EQ(m.locations[1], location_of(text, "\"onnx.Relu\""));
  EXPECT_EQ(m.locations[2], location_of(text, "\"onnx.Reshape\""));
  // module, func, two initializers, %none, then Conv as %2: column 10.
  EXPECT_EQ(m.locations[0], "6:10") << text;
  EXPECT_EQ(m.locations[1], "7:10") << text;
  EXPECT_EQ(m.locations[2], "9:10") << text;  // line 8 is the Constant node
}

TEST(EmitMlir, TorchMlirTextualForm) {
  const std::string text = emit_torch_mlir(small_model());
  const auto lines = lines_of(text);
  ASSERT_GE(lines.size(), 12u);
  EXPECT_EQ(lines[0], "module {");
  // The function is named after the graph, as iree-import-onnx names it.
  EXPECT_EQ(lines[1],
            "  func.func @g(%arg0: !torch.vtensor<[?,3,8,8],f32>) -> !torch.vtensor<[?,256],f32> attributes "
            "{torch.onnx_meta.ir_version = 8 : si64, torch.onnx_meta.opset_version = 13 : si64, "
            "torch.onnx_meta.producer_name = \"test\", torch.onnx_meta.producer_version = \"\"} {");
  // Initializers in typed fields are written inline.
  EXPECT_EQ(lines[3],
            "    %1 = torch.operator \"onnx.Constant\"() {torch.onnx.value = dense<5.000000e-01> : tensor<4xf32>} : () "
            "-> !torch.vtensor<[4],f32> ");
  EXPECT_EQ(lines[4], "    %none = torch.constant.none");
  // Shapes from shape inference; attributes sorted, si64 lists.
  EXPECT_EQ(lines[5],
            "    %2 = torch.operator \"onnx.Conv\"(%arg0, %0, %1) {torch.onnx.kernel_shape = [3 : si64, 3 : si64], "
            "torch.onnx.pads = [1 : si64, 1 : si64, 1 : si64, 1 : si64]} : (!torch.vtensor<[?,3,8,8],f32>, "
            "!torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[4],f32>) -> !torch.vtensor<[?,4,8,8],f32> ");
  EXPECT_EQ(lines[7],
            "    %4 = torch.operator \"onnx.Constant\"() {torch.onnx.value = dense<[0, -1]> : tensor<2xsi64>} : () -> "
            "!torch.vtensor<[2],si64> ");
  EXPECT_EQ(lines[9], "    return %5 : !torch.vtensor<[?,256],f32>");
}

TEST(EmitMlir, FunctionNameIsTheGraphsQuotedWhenNotAnIdentifier) {
  onnx::ModelProto m = small_model();
  m.mutable_graph()->set_name("torch_jit");
  EXPECT_TRUE(lines_of(emit_torch_mlir(m))[1].starts_with("  func.func @torch_jit(%a")) << lines_of(emit_torch_mlir(m))[1];
  EXPECT_EQ(mlir_function_name(m), "torch_jit");
  m.mutable_graph()->set_name("torch-jit-export");
  EXPECT_TRUE(lines_of(emit_torch_mlir(m))[1].starts_with("  func.func @\"torch-jit-export\"(%arg")) << lines_of(emit_torch_mlir(m))[1];
  EXPECT_EQ(mlir_function_name(m), "torch-jit-export");
}

TEST(EmitMlir, NoneIsAlwaysThereAndRawInitializersAreResources) {
  onnx::ModelProto m = small_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  std::string raw(4 * 4 * 3 * 3 * 3, '\0');
  w->clear_float_data();
  w->set_raw_data(raw);
  w->set_name("conv.weight");
  m.mutable_graph()->mutable_node(0)->set_input(1, "conv.weight");
  const auto lines = lines_of(emit_torch_mlir(m));
  EXPECT_EQ(lines[2],
            "    %0 = torch.operator \"onnx.Constant\"() {torch.onnx.value = dense_resource<_conv.weight> : "
            "tensor<4x3x3x3xf32>} : () -> !torch.vtensor<[4,3,3,3],f32> ");
  EXPECT_EQ(lines[4], "    %none = torch.constant.none");
  // "conv.weight" is no Python identifier: the importer's _sanitize_name
  // prefixes '_' and keeps the dot.
}

// x -> TopK (two results) -> If(cond) { Relu } else { Neg } -> Sigmoid
TEST(EmitMlir, MultipleResultsAndRegionsAreNumberedAsMlirPrints) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("regions");
  set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {4});
  set_tensor_type(g->add_input(), "k", onnx::TensorProto::INT64, {1});
  set_tensor_type(g->add_input(), "c", onnx::TensorProto::BOOL, {});
  add_node(g, "TopK", {"x", "k"}, {"v", "i"});
  auto* iff = add_node(g, "If", {"c"}, {"y"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = iff->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* b = a->mutable_g();
    b->set_name(branch);
    add_node(b, std::string(branch) == "then_branch" ? "Relu" : "Neg", {"v"}, {std::string(branch) + "_out"});
    set_tensor_type(b->add_output(), std::string(branch) + "_out", onnx::TensorProto::FLOAT, {-1});
  }
  add_node(g, "Sigmoid", {"y"}, {"z"});
  set_tensor_type(g->add_output(), "z", onnx::TensorProto::FLOAT, {-1});
  const std::string text = emit_torch_mlir(m);
  const auto lines = lines_of(text);
  ASSERT_GE(lines.size(), 11u) << text;
  EXPECT_TRUE(lines[3].starts_with("    %0:2 = torch.operator \"onnx.T")) << lines[3] << text;
  EXPECT_TRUE(lines[4].starts_with("    %1 = torch.operator \"onnx.")) << lines[4] << text;
  // Regions sorted by attribute name (else_branch first), each numbered
  // from where the enclosing region's values end (%0, %1, %2 -> %3).
  EXPECT_TRUE(lines[5].starts_with("      %3 = torch.operator \"onnx.Neg\"(")) << lines[5] << text;
  EXPECT_TRUE(lines[6].starts_with("      torch.operator_terminator %3 : ")) << lines[6] << text;
  EXPECT_EQ(lines[7], "    }, {") << text;
  EXPECT_TRUE(lines[8].starts_with("      %3 = torch.operator \"onnx.Relu\"(")) << lines[8] << text;
  EXPECT_EQ(lines[10], "    }") << text;
  EXPECT_TRUE(lines[11].starts_with("    %2 = torch.operator \"onnx.Sigmoid\"(%1)")) << lines[11] << text;
  // Top-level nodes map to top-level lines; the ops in the regions are not
  // nodes of the graph.
  const MlirMapping mm = map_mlir_locations(text, non_constant_op_types(m));
  EXPECT_TRUE(mm.problems.empty()) << mm.problems[0];
  EXPECT_EQ(mm.locations, (std::vector<std::string>{"4:12", "5:10", "12:10"}));
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
