// GELU fusion: the erf form of GELU as exported by PyTorch (nn.GELU, opset
// 17 and before), five element-wise nodes over x,
//   d = Div(x, c)   e = Erf(d)   a = Add(e, k1)   m = Mul(x, a)   y = Mul(m, k2)
// (c, k1, k2 constant float scalars, the Add's and Muls' operands in either
// order), runs as one pass over x headed by the Div (ActKind::kGelu, with
// k1 and k2 in FusedActivation::alpha and beta): per element the same IEEE
// division, libmvec erf (vec_math.h), addition and two multiplications as
// the five kernels one by one, so the result is bit-identical, NaN, Inf and
// -0 included (tests/unit/test_gelu_fusion.cc). In bf16 (bf16 numerics, on
// a CPU where the kernels compute bf16 natively) the pass rounds each step
// to bf16 with the session's rounding, as the unfused nodes' outputs are,
// and is bit-identical to them too. The Div declines (the nodes then run one
// by one) when x is not a dense fp32 or bf16 tensor or c is not one value of
// its type. Never across a value that is a graph
// output or has another reader (d, e, a, m must be private to the chain; x
// may have any readers). ConvNeXt's 18 GELUs: 5 passes over 8.5 M floats
// become one.
#pragma once

#include <vector>

#include "worker/engine/act_fusion.h"

namespace torq::engine {

// GELU chains over `nodes` (same meaning as plan_act_fusion's arguments)
// whose nodes are in none of `taken`.
std::vector<ActChain> plan_gelu_fusion(const std::vector<ActNode>& nodes, const std::vector<Tensor>& constants,
                                       const std::vector<bool>& keep, const std::vector<ActChain>& taken);

}  // namespace torq::engine
