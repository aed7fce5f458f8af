// PointGraph: the builder of one probe point's single-op graph
// (probe_model.cc), in fp32 or in int8 QDQ form. Each add returns the name
// the compute node reads, and remembers its shape for the node's features.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace torq::pipeline::probe {

using Shape = std::vector<int64_t>;

class PointGraph {
 public:
  // shapes_only: no weight data (features alone: probe_refine's search).
  PointGraph(bool int8, uint64_t seed, bool shapes_only = false);

  // The largest tensor a point may have (input or weight): 2^26 elements
  // (256 MiB of fp32), so a hostile or careless spec cannot make a model
  // or a worker's inputs of gigabytes.
  static constexpr int64_t kMaxElements = int64_t{1} << 26;
  // The first tensor over kMaxElements ("w of 150994944 elements"), or "".
  const std::string& too_big() const { return too_big_; }

  // A float graph input (int8: quantized then dequantized).
  std::string input(const std::string& name, const Shape& shape);
  // A seeded float weight, uniform in +-1/sqrt(fan_in) (int8: an int8
  // initializer and its DequantizeLinear).
  std::string weight(const std::string& name, const Shape& shape, int64_t fan_in);
  // A bias of `n` (int8: int32 at the input scale x the weight scale).
  std::string bias(const std::string& name, int64_t n);
  // Integer (int64) and float constants that are parameters, never data.
  std::string ints(const std::string& name, const std::vector<int64_t>& values);
  std::string scalar(const std::string& name, float value);
  // The compute node, writing "y".
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs);
  // The graph output: "y" (int8 and float: quantized then dequantized).
  void output(bool is_float = true, int elem_type = onnx::TensorProto::FLOAT);
  static void attr(onnx::NodeProto* n, const std::string& name, int64_t v);
  static void attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v);

  // Shapes of what the compute node reads, in its input order ("" inputs skipped).
  std::vector<Shape> node_input_shapes() const;
  // The model's bytes, its output typed by shape inference; "" with
  // *invalid set when inference refuses the graph.
  std::string serialize(std::string* invalid) const;

 private:
  std::string qdq(const std::string& x, const std::string& stem, float scale);
  std::string dequantize(const std::string& q, const std::string& scale, const std::string& out, const Shape& shape,
                         const std::string& zp = "");
  float uniform(float lim);

  onnx::ModelProto model_;
  onnx::GraphProto* g_;
  bool int8_;
  bool shapes_only_;
  std::string too_big_;
  bool fits(const std::string& name, const Shape& shape);
  std::mt19937 rng_;
  std::map<std::string, Shape> shapes_;
  const onnx::NodeProto* compute_ = nullptr;
  static constexpr float kInputScale = 1.f / 64, kWeightScale = 1.f / 128, kOutputScale = 1.f / 16;
};

}  // namespace torq::pipeline::probe
