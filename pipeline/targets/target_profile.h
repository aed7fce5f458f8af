// Executor profiles as data: what an executor (nss, css, host) accepts and
// with what numerics (configs/targets/*.yaml), and what it costs. Parsed and
// validated strictly at load, with file:line:col: one YAML document, every
// number in its range (extents, strides, dilations >= 1, ranks 0..64,
// element counts >= 1, cost rates and clock in (0, 1e9]). This room knows no engine:
// the op types a profile may name come from an OpCatalog its caller gives
// (the engine's kernels, worker/engine/profile.h), and judging a node
// against a profile is the engine's (engine::ExecutorProfile::check).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/base/dtype.h"

namespace torq::targets {

using base::DType;
using base::Rounding;

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

// The op types a profile may name.
class OpCatalog {
 public:
  virtual ~OpCatalog() = default;
  virtual std::vector<std::string> op_types() const = 0;  // every known op type
  virtual bool knows(const std::string& op) const = 0;
  // The op whose rule judges `op` (QLinearConv: Conv), or "" when `op` is
  // judged by its own rule.
  virtual std::string judged_as(const std::string& op) const = 0;
};

class TargetProfile {
 public:
  // Parses and validates a profile file; op names must be known to `ops`.
  // Throws base::EngineError(kInvalidInput) with "file:line:col: message" on
  // any unknown key, duplicate key, bad value or type.
  static TargetProfile load(const std::string& path, const OpCatalog& ops);
  static TargetProfile parse(const std::string& text, const std::string& filename, const OpCatalog& ops);
  // Resolves "nss" / "css" / "host" to configs/targets/<name>.yaml (looked up
  // in $TORQ_CONFIG_DIR, then the source tree), or loads a path.
  static TargetProfile resolve(const std::string& name_or_path, const OpCatalog& ops);
  // Directory holding the built-in target profiles.
  static std::string targets_dir();

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  // The chip the profile models ("sl2610"); empty: none named. Results
  // record it, so results of two chip profiles never mix.
  const std::string& chip() const { return chip_; }
  DType float_type() const { return float_type_; }
  std::optional<Rounding> rounding() const { return rounding_; }
  // Why fp32 data cannot run here (a bf16 executor), for its error message.
  const std::string& fp32_error() const { return fp32_error_; }
  bool all_ops() const { return all_ops_; }
  const std::map<std::string, OpRule>& ops() const { return ops_; }
  const CostModel& cost() const { return cost_; }
  const OpRule* rule(const std::string& op_type) const;

 private:
  std::string name_, description_, chip_;
  DType float_type_ = DType::kF32;
  std::optional<Rounding> rounding_;
  std::string fp32_error_;
  bool all_ops_ = false;
  std::map<std::string, OpRule> ops_;
  CostModel cost_;
};

}  // namespace torq::targets
