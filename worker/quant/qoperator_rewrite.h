// Static int8 quantization in QOperator format, as onnxruntime writes it:
// the QDQ model of quantize_qdq() with every "DequantizeLinear -> op ->
// QuantizeLinear" group that has an exact integer form rewritten into it
// (QLinearConv, QLinearMatMul, com.microsoft QLinearAdd ..., or the op on
// the int8 tensor; the table is in qoperator_ops.h).
//
// Before that, a Relu or Clip between two quantizations is folded into the
// first, as onnxruntime's quantizer does, when quantizing to the clamp's
// output parameters already saturates at its bounds (Relu: zero point -128;
// Clip: min and max quantize to -128 and 127): the op before it then writes
// the clamp's quantized output directly, with one rounding where the QDQ
// model rounds twice. A clamp that cannot be folded stays in QDQ form.
//
// The result: graph inputs stay float with their QuantizeLinear, graph
// outputs float behind their DequantizeLinear; groups with no exact integer
// form stay "DequantizeLinear -> float op -> QuantizeLinear" (a valid
// QOperator model). DequantizeLinear / QuantizeLinear nodes and initializers
// nothing reads any more are dropped (the fp32 weights with them), and the
// com.microsoft opset (version 1) is imported when its ops are used. Node
// order stays topological; integer ops write the tensor names the QDQ
// model's QuantizeLinears wrote (<tensor>_quantized) and are named
// <float node>_quant.
#pragma once

#include <map>
#include <string>

#include <onnx/onnx_pb.h>

#include "worker/quant/qdq_rewrite.h"
#include "worker/quant/quant_params.h"

namespace torq::quant {

// An int8 tensor of the QOperator model and its (per-tensor) parameters.
struct QuantizedTensor {
  std::string name;
  QParams params;
};

struct QOperatorResult {
  onnx::ModelProto model;
  // Original tensor -> the int8 tensor that holds it in model, for the
  // tensors QdqResult::dequantized names that model still computes.
  std::map<std::string, QuantizedTensor> quantized;
  std::map<std::string, int> integer_ops;  // integer op written -> count (Gemm counts as its MatMulInteger)
  std::map<std::string, int> on_int8;      // float op now run on int8 -> count
  std::map<std::string, int> folded;       // Relu / Clip folded into a quantization -> count
  std::map<std::string, int> stayed_qdq;   // op still between DequantizeLinear and QuantizeLinear -> count
};

// Never throws for a model quantize_qdq() wrote; a group it does not
// recognise stays as it is.
QOperatorResult to_qoperator(const QdqResult& qdq);

}  // namespace torq::quant
