// Static int8 quantization of an fp32 model in QDQ format: a
// QuantizeLinear -> DequantizeLinear pair on every float activation a
// quantizable op reads (and on every float graph output), int8 weights
// (symmetric, per tensor or per output channel) and int32 biases behind a
// DequantizeLinear. Ops outside the quantizable set keep reading fp32, as
// onnxruntime's quantizer leaves them. Node order stays topological: a Q/DQ
// pair follows its producer, a weight's DQ precedes its first consumer.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "worker/quant/quant_params.h"

namespace torq::quant {

struct QdqOptions {
  bool per_channel = false;
};

struct QdqResult {
  onnx::ModelProto model;
  // Original tensor name -> the name its dequantized value has in model
  // (graph outputs keep their names).
  std::map<std::string, std::string> dequantized;
  int weights = 0, biases = 0, activations = 0;  // tensors quantized
  std::vector<std::string> notes;                // what stayed fp32 and why
};

// The ops whose float data inputs are quantized.
const std::set<std::string>& quantizable_ops();
// True when the model already holds quantization ops (Q/DQ, QLinear*,
// *Integer): quantizing twice is refused.
bool is_quantized(const onnx::ModelProto& model, std::string* which);

// A scale or zero-point initializer: FLOAT from `f`, INT8 / INT32 from `i`,
// a scalar or (with `vector`) a 1-D tensor.
onnx::TensorProto scalar_or_vector(const std::string& name, int32_t type, const std::vector<float>& f,
                                   const std::vector<int32_t>& i, bool vector);

// Throws std::invalid_argument for a model this cannot quantize (opset
// < 10; per_channel below opset 13 when an op of the model changed in 13).
QdqResult quantize_qdq(const onnx::ModelProto& fp32, const std::map<std::string, Range>& ranges,
                       const QdqOptions& opts);

}  // namespace torq::quant
