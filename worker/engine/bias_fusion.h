// Bias fusion: a MatMul whose only reader is an Add of a constant (a
// Linear layer as PyTorch exports it: MatMul, then Add(bias, y)) runs the
// Add as oneDNN's matmul bias (ConvNeXt: 36 Adds over its MLP outputs).
// The session passes the constant as KernelContext::residual(); the MatMul
// applies it only where the product is fp32 and the constant is fp32 with
// one element per output column (shape [N], or [1, ..., 1, N] of no higher
// rank than the product): the same IEEE sum of the product's fp32 value and
// the bias as the Add kernel's, bit-identical (tests/unit/test_bias_fusion.cc).
// Otherwise it declines and the Add runs by itself. fp32 only (in bf16
// numerics the unfused product is rounded before the Add). Never across a
// product that is a graph output or has another reader.
#pragma once

#include <vector>

#include "worker/engine/act_fusion.h"

namespace torq::engine {

// Bias chains over `nodes` (same meaning as plan_act_fusion's arguments)
// whose nodes are in none of `taken`.
std::vector<ActChain> plan_bias_fusion(const std::vector<ActNode>& nodes, const std::vector<Tensor>& constants,
                                       const std::vector<bool>& keep, const std::vector<ActChain>& taken);

}  // namespace torq::engine
