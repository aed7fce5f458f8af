// The quantization ops as executor profiles and the session see them.
//
// A QOperator node (QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger
// and the com.microsoft QLinearAdd / Mul / Sigmoid / LeakyRelu / Concat /
// AveragePool / GlobalAveragePool) is the integer kernel of a float op:
// profiles check and price it against that op's rule, with the float op's
// inputs picked out of the node's (scales and zero points are parameters,
// not data). The float scale inputs of every quantization op are listed so
// that bf16 numerics never round them. Pure functions of op types.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace torq::engine {

// A QOperator op as its float op: `inputs` are the positions, in the
// QOperator node, of the float op's inputs in the float op's order.
struct QOperatorForm {
  std::string float_op;
  std::vector<size_t> inputs;
};

// The float form of a QOperator node of type `op_type` with `num_inputs`
// inputs (positions past the node's inputs dropped); nullopt for any other op.
std::optional<QOperatorForm> qoperator_form(const std::string& op_type, size_t num_inputs);

// True for input `i` of `float_op` that is added into the accumulator (the
// bias of Conv, ConvTranspose, Gemm): int32 in an integer kernel, not data.
bool is_accumulator_input(const std::string& float_op, size_t i);

// Positions of the float scale inputs of quantization op `op_type`
// (QuantizeLinear, DequantizeLinear and the QOperator ops); empty otherwise.
std::vector<size_t> scale_inputs(const std::string& op_type, size_t num_inputs);

}  // namespace torq::engine
