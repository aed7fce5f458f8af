// A read-only index over a QDQ model's graph (as quantize_qdq writes it),
// for rewrites that match "DequantizeLinear -> op -> QuantizeLinear" groups:
// who produces and who reads each tensor, which quantized tensor a
// DequantizeLinear output stands for, the QuantizeLinear that alone reads an
// op's float output, and the values of scale / zero-point initializers.
//
// The index holds pointers into the graph it was built on: the graph must
// outlive it and stay unchanged while it is used. Node indices are
// positions in graph.node().
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "worker/quant/quant_params.h"

namespace torq::quant {

// A quantized tensor as a QuantizeLinear writes or a DequantizeLinear reads
// it: the integer tensor and its scale and zero-point tensors (axis set when
// the parameters are per axis).
struct QTensor {
  std::string q, scale, zero_point;
  std::optional<int64_t> axis;
};

class QdqGraph {
 public:
  explicit QdqGraph(const onnx::GraphProto& g);

  const onnx::GraphProto& graph() const { return g_; }
  const onnx::NodeProto& node(int i) const { return g_.node(i); }
  // The node index that writes `tensor`, or -1 (graph input, initializer).
  int producer(const std::string& tensor) const;
  // Indices of the nodes reading `tensor`, in graph order.
  const std::vector<int>& consumers(const std::string& tensor) const;
  bool is_graph_output(const std::string& tensor) const { return outputs_.count(tensor) > 0; }
  // nullptr when `name` is not an initializer.
  const onnx::TensorProto* initializer(const std::string& name) const;

  // What the DequantizeLinear writing `tensor` reads; nullopt when `tensor`
  // is not a DequantizeLinear output or its zero point is omitted.
  std::optional<QTensor> dequantized(const std::string& tensor) const;
  // The QuantizeLinear node that is the only reader of `tensor` (which is not
  // a graph output), or -1.
  int sole_quantizer(const std::string& tensor) const;
  // The quantized tensor that QuantizeLinear node `i` writes.
  QTensor quantized_by(int i) const;

  // Values of an initializer (any numeric type); empty when `name` is not one.
  std::vector<float> floats(const std::string& name) const;
  std::vector<int32_t> ints(const std::string& name) const;
  // Per-tensor parameters of `t` (scalar scale and zero point initializers).
  std::optional<QParams> per_tensor_params(const QTensor& t) const;
  // True when the tensor (by name) is an initializer of data type `type`.
  bool is_initializer_of(const std::string& name, int32_t type) const;

 private:
  const onnx::GraphProto& g_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  std::map<std::string, const onnx::TensorProto*> inits_;
  std::set<std::string> outputs_;
};

// Drops QuantizeLinear / DequantizeLinear nodes whose outputs nothing reads,
// then initializers nothing reads (the fp32 weights a rewrite replaced; with
// their graph-input entries) and the value_info of tensors no longer there.
void prune_unread(onnx::GraphProto* g);

}  // namespace torq::quant
