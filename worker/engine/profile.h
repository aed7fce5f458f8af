// Executor profiles in the engine: the data (what an executor accepts, with
// what numerics, and what it costs; configs/targets/*.yaml) are
// pipeline/targets/target_profile.h; here they are loaded against the
// engine's kernels (an op type a profile names must have one) and consulted
// in one place, check(), before a kernel runs.
//
// Quantized nodes are judged as the integer kernels they are: a QOperator
// node (QLinearConv...) against the rule of its float op (Conv) with its
// integer inputs (quant_ops.h); a quantized node of a QDQ graph (the session
// fuses its Q/DQ neighbours, quant_fusion.h) with the integer tensors its
// DequantizeLinear inputs read and its QuantizeLinear outputs write
// (QuantView). Where the data (input 0) is an integer, a rule's `int:`
// constraints replace its float ones, and MACs run at the integer rate.
#pragma once

#include <string>
#include <vector>

#include "pipeline/base/dtype.h"
#include "pipeline/targets/target_profile.h"
#include "worker/engine/tensor.h"

namespace torq::engine {

class NodeInfo;

using targets::CostModel;
using targets::LayerCost;
using targets::OpCatalog;
using targets::OpRule;

// The op types the engine's kernels run, for a profile's op names.
const OpCatalog& kernel_catalog();

// What the integer kernel of a quantized node in a QDQ graph reads and
// writes, beyond the node's own inputs and outputs (the session fills it).
struct QuantView {
  // Per input: true when a fused DequantizeLinear wrote it, so the kernel
  // reads (and the caller passes) that DQ's integer input instead.
  std::vector<bool> dequantized;
  // Per output: the type a fused QuantizeLinear writes it as, or
  // kUndefined when no fused Q reads it.
  std::vector<DType> outputs;
};

class ExecutorProfile : public targets::TargetProfile {
 public:
  ExecutorProfile() = default;
  explicit ExecutorProfile(targets::TargetProfile p) : targets::TargetProfile(std::move(p)) {}
  // TargetProfile's load, parse and resolve against the engine's kernels
  // (kernel_catalog()).
  static ExecutorProfile load(const std::string& path);
  static ExecutorProfile parse(const std::string& text, const std::string& filename);
  static ExecutorProfile resolve(const std::string& name_or_path);

  // Throws EngineError(kUnsupported) with the reason when the executor
  // cannot run this node on these inputs. `quant`: the node is a quantized
  // node of a QDQ graph; `inputs` are then what its integer kernel reads.
  void check(const NodeInfo& node, const std::vector<const Tensor*>& inputs,
             const QuantView* quant = nullptr) const;
  // Simulated cost of the node given its inputs and outputs (`quant` as for
  // check(): a fused Q's output counts as the integer type it writes).
  LayerCost cost_of(const NodeInfo& node, const std::vector<const Tensor*>& inputs,
                    const std::vector<Tensor>& outputs, const QuantView* quant = nullptr) const;
};

}  // namespace torq::engine
