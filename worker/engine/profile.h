// Executor profiles: what an executor (nss, css, host) accepts, with what
// numerics, and what it costs. Profiles are data (configs/targets/*.yaml),
// validated strictly at load and consulted in one place, check(), before a
// kernel runs.
//
// Quantized nodes are judged as the integer kernels they are: a QOperator
// node (QLinearConv...) against the rule of its float op (Conv) with its
// integer inputs (quant_ops.h); a quantized node of a QDQ graph (the session
// fuses its Q/DQ neighbours, quant_fusion.h) with the integer tensors its
// DequantizeLinear inputs read and its QuantizeLinear outputs write
// (QuantView). Where the data (input 0) is an integer, a rule's `int:`
// constraints replace its float ones, and MACs run at the integer rate.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/base/dtype.h"
#include "worker/engine/tensor.h"

namespace torq::engine {

class NodeInfo;

// Constraints on one op type. An unset field constrains nothing.
struct OpRule {
  std::set<DType> dtypes;               // allowed dtypes of the node's data inputs
  std::set<std::string> conv_groups;    // standard | depthwise | grouped
  std::set<int64_t> spatial_ranks;      // conv/pool spatial rank (1 = 1-D, 2 = 2-D)
  std::optional<int64_t> max_kernel;    // largest kernel extent per axis
  std::optional<int64_t> max_stride;
  std::optional<int64_t> max_dilation;
  std::optional<int64_t> max_rank;      // largest input rank
  std::optional<int64_t> min_kernel;    // smallest kernel extent per axis (conv/pool)
  std::optional<int64_t> min_spatial;   // smallest spatial extent (H, W...) of input 0 (conv/pool)
  std::optional<int64_t> max_input_elements;  // largest element count of input 0
  // Largest element count of input 0 when a stride is > 1 (conv/pool).
  std::optional<int64_t> max_strided_input_elements;
  bool widen_output = false;            // bf16 in, f32 out (no output rounding)
  std::string note;                     // why the rule is what it is
  // The rule for integer data (input 0 an integer): this rule with the
  // constraints of its `int:` block in place of these; null: this rule.
  std::shared_ptr<const OpRule> int_rule;
};

// Simulated device cost of a layer.
struct LayerCost;

struct CostModel {
  double clock_mhz = 1000;
  int64_t slices = 1;
  double macs_per_cycle_per_slice = 1;  // float multiply-accumulates per cycle per slice
  double int8_macs_per_cycle_per_slice = 0;  // integer MACs per cycle per slice; 0: the float rate
  double eltwise_per_cycle = 1;         // elements per cycle for non-MAC ops
  double dma_bytes_per_cycle = 1;       // bytes moved per cycle
  int64_t dispatch_overhead_cycles = 0; // fixed cost of launching one layer

  // Compute cycles of a layer: its MACs over the MAC rate of all slices
  // (the integer rate when c.integer_macs), else its output elements over
  // eltwise_per_cycle.
  double compute_cycles(const LayerCost& c) const;
};

struct LayerCost {
  uint64_t macs = 0, elements = 0, bytes = 0, cycles = 0;
  bool integer_macs = false;  // the MACs ran on integer data
  double time_ms = 0;
};

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

class ExecutorProfile {
 public:
  // Parses and validates a profile file. Throws EngineError(kInvalidInput)
  // with "file:line:col: message" on any unknown key, duplicate key, bad
  // value or type.
  static ExecutorProfile load(const std::string& path);
  static ExecutorProfile parse(const std::string& text, const std::string& filename);
  // Resolves "nss" / "css" / "host" to configs/targets/<name>.yaml (looked up
  // in $TORQ_CONFIG_DIR, then the source tree), or loads a path.
  static ExecutorProfile resolve(const std::string& name_or_path);
  // Directory holding the built-in target profiles.
  static std::string targets_dir();

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  // The chip the profile models ("sl2610"); empty: none named. Results
  // record it, so results of two chip profiles never mix.
  const std::string& chip() const { return chip_; }
  DType float_type() const { return float_type_; }
  std::optional<Rounding> rounding() const { return rounding_; }
  bool all_ops() const { return all_ops_; }
  const std::map<std::string, OpRule>& ops() const { return ops_; }
  const CostModel& cost() const { return cost_; }
  const OpRule* rule(const std::string& op_type) const;

  // Throws EngineError(kUnsupported) with the reason when the executor
  // cannot run this node on these inputs. `quant`: the node is a quantized
  // node of a QDQ graph; `inputs` are then what its integer kernel reads.
  void check(const NodeInfo& node, const std::vector<const Tensor*>& inputs,
             const QuantView* quant = nullptr) const;
  // Simulated cost of the node given its inputs and outputs (`quant` as for
  // check(): a fused Q's output counts as the integer type it writes).
  LayerCost cost_of(const NodeInfo& node, const std::vector<const Tensor*>& inputs,
                    const std::vector<Tensor>& outputs, const QuantView* quant = nullptr) const;

 private:
  std::string name_, description_, chip_;
  DType float_type_ = DType::kF32;
  std::optional<Rounding> rounding_;
  std::string fp32_error_;
  bool all_ops_ = false;
  std::map<std::string, OpRule> ops_;
  CostModel cost_;
};

}  // namespace torq::engine
