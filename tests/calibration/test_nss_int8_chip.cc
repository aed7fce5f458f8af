// The nss profile's integer rules against the SL2610 chip's int8 report
// (../shared/reference/sl2610, efficientnet_b1 timm export, 224x224 input).
// Layer shapes come from the torchvision efficientnet_b1 of ../shared/models
// inferred at 224x224: the two graphs align node for node (the timm SE
// pooling is a ReduceMean, untested on the chip, where torchvision has a
// GlobalAveragePool), which every Conv's mac_count confirms. Each layer is
// judged as the integer kernel of its QDQ layer: int8 data and weights,
// int32 bias, as a session passes them to the profile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "pipeline/base/error.h"
#include "worker/engine/kernel.h"
#include "worker/engine/profile.h"

using namespace torq::engine;

namespace {

const std::string kShared = TORQ_SHARED_DIR;

onnx::ModelProto model_at_224() {
  onnx::ModelProto m;
  std::ifstream f(kShared + "/models/efficientnet_b1/model.onnx", std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&f));
  auto* shape = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->mutable_dim(2)->set_dim_value(224);
  shape->mutable_dim(3)->set_dim_value(224);
  for (auto& o : *m.mutable_graph()->mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  m.mutable_graph()->clear_value_info();
  onnx::shape_inference::InferShapes(m);
  return m;
}

std::map<std::string, Shape> shapes_of(const onnx::GraphProto& g) {
  std::map<std::string, Shape> s;
  for (const auto& t : g.initializer()) s[t.name()] = Shape(t.dims().begin(), t.dims().end());
  auto add = [&](const onnx::ValueInfoProto& v) {
    Shape d;
    for (const auto& dim : v.type().tensor_type().shape().dim()) d.push_back(dim.dim_value());
    s[v.name()] = d;
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.value_info()) add(v);
  return s;
}

// The chip's layers in node order.
std::vector<nlohmann::json> chip_layers() {
  std::ifstream f(kShared + "/reference/sl2610/torq_gen_config_efficientnet_b1_Opset17_timm_quant.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  std::vector<nlohmann::json> layers(j["ops"].size());
  for (const auto& [id, layer] : j["ops"].items()) {
    nlohmann::json l = layer;
    l["id"] = id;
    layers.at(layer["_node_index"].get<size_t>()) = l;
  }
  return layers;
}

// Why nss refuses node `np` as an integer kernel ("" when it runs it).
std::string nss_refusal(const ExecutorProfile& nss, const onnx::NodeProto& np, const std::map<std::string, Shape>& s) {
  std::vector<Tensor> tensors;
  for (int i = 0; i < np.input_size(); ++i) {
    const bool bias = i == 2 && (np.op_type() == "Conv" || np.op_type() == "Gemm");
    tensors.emplace_back(bias ? DType::kI32 : DType::kI8, s.at(np.input(i)));
  }
  std::vector<const Tensor*> in;
  for (const Tensor& t : tensors) in.push_back(&t);
  QuantView q;
  q.dequantized.assign(in.size(), true);
  try {
    nss.check(NodeInfo(np, 17), in, &q);
  } catch (const EngineError& e) {
    return e.reason();
  }
  return "";
}

}  // namespace

TEST(NssInt8Chip, EveryLayerTheChipTestedAgreesWithTheProfile) {
  const onnx::ModelProto m = model_at_224();
  const auto shapes = shapes_of(m.graph());
  const auto chip = chip_layers();
  const ExecutorProfile nss = ExecutorProfile::resolve("nss");
  size_t index = 0, compared = 0, refused = 0;
  std::string disagreements;
  for (const auto& np : m.graph().node()) {
    if (np.op_type() == "Constant") continue;
    const nlohmann::json& layer = chip.at(index++);
    const std::string id = layer["id"];
    if (!layer["executors"].contains("nss")) continue;  // not tested on the chip (ReduceMean)
    ASSERT_EQ(id.substr(0, id.find('_')), np.op_type()) << id;
    if (np.op_type() == "Conv" && layer.contains("mac_count")) {
      const Shape& y = shapes.at(np.output(0));
      const Shape& w = shapes.at(np.input(1));
      ASSERT_EQ(layer["mac_count"].get<int64_t>(), shape_numel(y) * (shape_numel(w) / w[0])) << id;
    }
    const bool chip_runs = layer["executors"]["nss"]["status"] != "error";
    const std::string why = nss_refusal(nss, np, shapes);
    ++compared;
    refused += !why.empty();
    if (chip_runs != why.empty())
      disagreements += "\n  " + id + ": chip " + (chip_runs ? "runs" : "fails") + ", profile " +
                       (why.empty() ? "runs" : why);
  }
  EXPECT_EQ(index, chip.size());
  EXPECT_EQ(compared, 318u);  // 341 layers, 23 ReduceMean untested
  EXPECT_EQ(refused, 2u);     // blocks.1.0 and blocks.2.0 conv_dw
  EXPECT_EQ(disagreements, "");
  std::printf("nss int8 rules vs the SL2610 int8 report (efficientnet_b1): %zu of %zu layers agree\n",
              compared - static_cast<size_t>(std::count(disagreements.begin(), disagreements.end(), '\n')), compared);
}
