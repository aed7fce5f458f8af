// The integer form of one "DequantizeLinear -> op -> QuantizeLinear" group
// of a QDQ model, as onnxruntime's QOperator format writes it:
//   Conv                 -> QLinearConv (per-tensor or per-channel weights, int32 bias)
//   MatMul               -> QLinearMatMul
//   Gemm (alpha 1, transA 0, int8 weight)
//                        -> QLinearMatMul without a bias; with an int32 bias
//                           MatMulInteger -> Add (int32 bias) -> QuantizeLinear
//                           (the int32 sum at scale y_scale / (x_scale * w_scale)),
//                           one rounding as in QLinearConv. onnxruntime writes
//                           com.microsoft QGemm, which the engine does not run;
//                           QLinearMatMul + QLinearAdd would round twice through
//                           an uncalibrated intermediate.
//   Add, Mul             -> com.microsoft QLinearAdd, QLinearMul
//   Sigmoid, LeakyRelu   -> com.microsoft QLinearSigmoid, QLinearLeakyRelu
//   Concat               -> com.microsoft QLinearConcat
//   AveragePool, GlobalAveragePool
//                        -> com.microsoft QLinearAveragePool, QLinearGlobalAveragePool
//   MaxPool (opset >= 12), Flatten (>= 9), Reshape, Transpose
//                        -> the same op on the int8 tensor, only when the output's
//                           scale and zero point equal the input's (then exact).
// Every integer op reads the int8 tensors the group's DequantizeLinears read
// and writes the tensor its QuantizeLinear wrote (names kept). A group with
// no exact integer form (a float bias, an fp32 input, a per-axis activation,
// an attribute the integer op lacks) gets nullopt and stays in QDQ form.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "worker/quant/qdq_graph.h"

namespace torq::quant {

// One group: a float op, what each of its inputs dequantizes (nullopt: the
// input is not a DequantizeLinear output), and what the QuantizeLinear that
// alone reads its output writes.
struct QdqGroup {
  int node = -1;
  std::vector<std::optional<QTensor>> in;
  int quantizer = -1;
  QTensor out;
};

// What replaces a group: nodes in order, new initializers, and for the
// report the op written (the integer op, or the op now run on int8).
struct IntegerForm {
  std::vector<onnx::NodeProto> nodes;
  std::vector<onnx::TensorProto> initializers;
  std::string op;
  bool on_int8 = false;  // the float op itself, now reading and writing int8
};

// The op types that have an integer form.
bool has_integer_form(const std::string& op_type);
// nullopt when the group is not clean (see above). `opset`: the model's
// default-domain opset.
std::optional<IntegerForm> integer_form(const QdqGraph& g, const QdqGroup& group, int64_t opset);

}  // namespace torq::quant
