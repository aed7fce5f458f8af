// Which graph nodes make up each layer (DESIGN §4). A plain model: one layer
// per non-Constant node. A quantized model in QDQ form: a layer is one
// compute op together with its QuantizeLinear / DequantizeLinear neighbours,
// as the seed tool groups a `_quant` model, so the layer ids and
// `_node_index` of an int8 model are those of its fp32 original:
//  - a DequantizeLinear (and the unowned Q/DQ chain above it, e.g. the
//    QuantizeLinear of a graph input) belongs to every layer whose compute
//    op reads it: a DQ shared by two consumers runs in both;
//  - a QuantizeLinear of a compute op's output is owned by that layer (its
//    int8 output is the layer's output), and so is a DequantizeLinear after
//    it that feeds no compute op (a graph output);
//  - a Q/DQ that belongs to no compute op is a layer of its own.
// A layer's outputs come from the nodes it owns; borrowed DQs never supply
// outputs. Pure logic over the graph: no tensors.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace onnx {
class GraphProto;
class NodeProto;
}  // namespace onnx

namespace torq::pipeline {

struct LayerNodes {
  int compute = 0;          // graph position of the node that names the layer
  int operator_index = 0;   // its position among the non-Constant nodes (MLIR operators)
  std::vector<int> nodes;   // every node the layer runs, in graph order
  std::vector<int> owned;   // the nodes whose outputs are the layer's
};

// QuantizeLinear / DequantizeLinear of the default domain.
bool is_qdq_node(const onnx::NodeProto& n);

// A Constant of the default domain (no MLIR operator of its own).
bool is_constant_node(const onnx::NodeProto& n);

// The layers of a graph in graph order of their compute nodes.
std::vector<LayerNodes> layer_nodes(const onnx::GraphProto& g);

// True when some layer groups more than one node (a QDQ model).
bool has_grouped_layers(const std::vector<LayerNodes>& layers);

// Graph positions of the nodes of layers [first, last], sorted, unique.
std::vector<int> range_nodes(const std::vector<LayerNodes>& layers, uint32_t first, uint32_t last);

// Outputs of layers [first, last]: values their owned nodes produce that a
// node of another layer reads or that are graph outputs; when there are
// none, the first output of the last layer's last owned node.
std::vector<std::string> range_outputs(const onnx::GraphProto& g, const std::vector<LayerNodes>& layers,
                                       uint32_t first, uint32_t last);

// range_outputs() for many ranges of one graph (a worker's layer jobs): the
// layers reading each value are indexed once, so a range costs its own
// nodes, not a walk of the whole graph. Keeps references to g and layers.
class RangeOutputs {
 public:
  RangeOutputs(const onnx::GraphProto& g, const std::vector<LayerNodes>& layers);
  std::vector<std::string> operator()(uint32_t first, uint32_t last) const;

 private:
  const onnx::GraphProto& g_;
  const std::vector<LayerNodes>& layers_;
  // The first and last layer reading each value; a graph output is read
  // by "layer" UINT32_MAX, past any range.
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> readers_;
};

}  // namespace torq::pipeline
