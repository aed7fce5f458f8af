// Activation fusion: a Conv whose only reader is an activation runs with the
// activation as a oneDNN post-op (one pass over the output, one node less to
// dispatch). Planned at load; the session applies a chain only where the
// result is the same as running its nodes one by one:
//  - Relu, and Clip with bounds exact in bf16 (lo <= hi): in fp32 and in
//    bf16 numerics alike (rounding to bf16 and clamping at 0 or at a bf16
//    bound commute), on every number; oneDNN's max/min turn a NaN into the
//    bound where the engine's Relu/Clip keep it, and a -0 into +0, so a
//    NaN output of the Conv (NaN/Inf inputs or overflow) reads 0 after a
//    fused Relu (documented deviation, seen only with non-finite values);
//  - HardSwish, HardSigmoid (oneDNN's linear then clip, as the unfused
//    kernel runs it; MobileNetV3's squeeze-excite gates), and Sigmoid
//    followed by Mul by the Conv's output (swish): fp32 only (in bf16
//    numerics the unfused path rounds in between). The HardSwish and
//    HardSigmoid post-ops run the same jit code as the unfused eltwise
//    primitive (a NaN output of the Conv reads 0 after a fused HardSigmoid,
//    as after a fused Relu). The Swish runs, on AVX-512, as the engine's
//    vector pass over the Conv's output (kernels/vec_sigmoid.h: the Sigmoid
//    kernel's very numbers, times x): ~14 cycles a vector where oneDNN
//    2.6's swish took ~30, even as a post-op (2.3 of efficientnet_b1's
//    12.5 ms); where the output is padded (a blocked layout) or the CPU has
//    no AVX-512, as oneDNN's post-op, whose numbers are those of its
//    logistic (the unfused Sigmoid's there) times x.
// A Conv whose only reader is an Add with a value computed before the Conv
// (a residual connection), optionally followed by a Relu that is the Add's
// only reader, runs the Add and the Relu in one pass over the Conv's output
// (the same IEEE sum and the same Relu as the unfused kernels, NaN and -0
// included): fp32 only, and only where the other value has the output's
// shape (no broadcast); otherwise the Conv declines and the Add and Relu
// run by themselves. Not as oneDNN's sum post-op: its jit convolutions add
// the destination into a partial sum over input channels, a different
// order of the same additions (not bit-identical on grouped 3x3 Convs).
// A Concat on axis 1 whose only reader is a BatchNormalization with constant
// parameters, whose only reader is a Relu, runs the three as one pass
// (kernels/concat_norm.h): when every input is fp32, or every input is bf16
// and the Concat finds it can match the unfused nodes (else it declines;
// the session runs the nodes one by one when the inputs mix types); its
// numbers are those of the oneDNN BatchNormalization the unfused node runs,
// followed by Relu.
// Never across a value that is a graph output or read by any other node, nor
// when the caller asks for every value (Session::run_all runs unfused).
// Every node of a chain keeps its profile judgement and its NodeStat (a
// follower's wall time is 0: the head's time covers the chain).
#pragma once

#include <vector>

#include "worker/engine/kernel.h"
#include "worker/engine/tensor.h"

namespace torq::engine {

struct ActChain {
  int head = -1;               // the Conv or Concat (node index)
  std::vector<int> followers;  // the activation's nodes, in order
  FusedActivation act;
  bool exact_in_bf16 = false;  // may fuse when the Conv computes in bf16
  int norm = -1;               // a Concat head's BatchNormalization follower, else -1
  bool norm_to_convs = false;  // a Concat head's Relu output is read by Convs alone
  // A Conv head whose follower is an Add (then `act` is unused): the Add's
  // other input (value id), whether it is the Add's first operand, and
  // whether a Relu follows the Add (the chain's last follower).
  int residual = -1;
  bool residual_first = false;
  bool residual_relu = false;
};

// What the planner needs of a node.
struct ActNode {
  const NodeInfo* info = nullptr;
  std::vector<int> in, out;  // value ids (-1: omitted)
  bool runs = false;         // not folded, not part of a quantized kernel
  bool fuses = false;        // its kernel applies a fused activation
};

// Chains over `nodes` (topological order). `constants`: by value id
// (undefined if not constant); `keep`: values that must exist as tensors
// (graph outputs, values the integer kernels keep in fp32).
std::vector<ActChain> plan_act_fusion(const std::vector<ActNode>& nodes, const std::vector<Tensor>& constants,
                                      const std::vector<bool>& keep);

}  // namespace torq::engine
