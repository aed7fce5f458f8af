// Integer kernels of a QDQ graph: which nodes an executor runs as one
// quantized kernel.
//
// A quantized node is a compute node (any node but QuantizeLinear /
// DequantizeLinear) whose input 0 a DequantizeLinear writes. Fused into its
// integer kernel are the DequantizeLinear nodes that feed a quantized node
// and the QuantizeLinear nodes that read its outputs. Fused too, as part of
// the kernel next to them, are the other Q/DQ nodes with a compute
// neighbour (QOperator models: the Q before a QLinearConv, the requantizing
// Q after MatMulInteger -> Add, the DQ after a QLinear op), a Q read only by
// fused DQs (a graph input's quantization) and a DQ reading a fused Q (a
// graph output's dequantization). A Q/DQ with none of these is standalone:
// an op like any other. Pure graph analysis, no tensors; the session uses
// it to show executor profiles the integer kernel and to keep the kernel's
// float path in fp32.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace torq::engine {

enum class QuantRole {
  kPlain,      // not part of an integer kernel
  kQuantized,  // the compute node of an integer kernel
  kFused,      // a Q/DQ node fused into an integer kernel
};

// A node as the analysis needs it: op type (default domain) and value ids
// of its inputs and outputs (-1: omitted).
struct GraphNode {
  std::string op_type;
  std::vector<int> in, out;
};

struct QuantFusion {
  std::vector<QuantRole> roles;       // per node
  std::vector<int> dequantized_from;  // per value: the integer value a fused DQ read to write it, or -1
  std::vector<int> quantized_by;      // per value: the fused Q node reading this quantized-node output, or -1
  std::vector<bool> keep_fp32;        // per value: the float inside an integer kernel (never rounded to bf16)
};

// `nodes` in topological order; value ids are below `num_values`.
QuantFusion plan_quant_fusion(const std::vector<GraphNode>& nodes, size_t num_values);

}  // namespace torq::engine
