// Kernels: one class per ONNX operator (or family), registered by
// (op type, opset range) in the KernelRegistry.
//
// Life cycle: the session builds one Kernel per node at load time through
// its factory (the factory parses and validates attributes and throws
// Unsupported for variants it cannot run), then calls compute() once per
// run. A kernel may cache shape-dependent state (oneDNN primitives, reordered
// weights) keyed on its input shapes; compute() is never called
// concurrently on one kernel object.
//
// Numerics: a kernel sees bf16 tensors only if handles_bf16() is true.
// Otherwise the session upcasts bf16 inputs to f32 and rounds the kernel's
// float outputs back to bf16 with the session's Rounding. Likewise it sees
// non-plain (oneDNN-blocked) inputs only if accepts_blocked_inputs().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/base/dtype.h"
#include "pipeline/base/error.h"
#include "worker/engine/profile.h"
#include "worker/engine/tensor.h"

namespace onnx {
class NodeProto;
class AttributeProto;
class TensorProto;
}  // namespace onnx

namespace torq::engine {

struct GraphScope;  // session.h

// A node as kernels see it: attributes, input arity, opset.
class NodeInfo {
 public:
  NodeInfo(const onnx::NodeProto& proto, int opset);

  const std::string& name() const { return name_; }
  const std::string& op_type() const { return op_type_; }
  int opset() const { return opset_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  // An input listed as "" (omitted optional input) is not present.
  bool has_input(size_t i) const { return i < inputs_.size() && !inputs_[i].empty(); }
  bool has_output(size_t i) const { return i < outputs_.size() && !outputs_[i].empty(); }
  const std::string& input_name(size_t i) const { return inputs_[i]; }
  const std::string& output_name(size_t i) const { return outputs_[i]; }

  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t def) const;
  float attr_float(const std::string& name, float def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name,
                                 const std::vector<int64_t>& def = {}) const;
  std::vector<float> attr_floats(const std::string& name,
                                 const std::vector<float>& def = {}) const;
  // The tensor attribute (e.g. Constant's value); nullptr when absent.
  const onnx::TensorProto* attr_tensor(const std::string& name) const;
  const onnx::AttributeProto* attr(const std::string& name) const;
  const onnx::NodeProto& proto() const { return *proto_; }

  // Throws Unsupported when the node has an attribute not in `known`, so a
  // new attribute variant is never silently ignored.
  void expect_attrs(std::initializer_list<const char*> known) const;

  // Where the node's graph attributes (If branches, a Loop body) load:
  // the enclosing session's options and opsets (set by the session before
  // the kernel is made; null outside a session).
  const GraphScope* scope() const { return scope_; }
  void set_scope(const GraphScope* scope) { scope_ = scope; }

 private:
  const onnx::NodeProto* proto_;
  const GraphScope* scope_ = nullptr;
  int opset_;
  std::string name_, op_type_;
  std::vector<std::string> inputs_, outputs_;
};

struct DnnlEnv;  // oneDNN engine + stream (dnnl_util.h)

// An activation the session fuses into the node before it (act_fusion.h):
// the kernel applies it to its output as a oneDNN post-op.
// kGelu: the erf GELU chain headed by a Div (gelu_fusion.h), alpha and beta
// its Add and last Mul constants.
enum class ActKind { kRelu, kClip, kHardSwish, kSwish, kHardSigmoid, kGelu };
struct FusedActivation {
  ActKind kind = ActKind::kRelu;
  float lo = 0, hi = 0;        // kClip's bounds
  float alpha = 0, beta = 0;  // kHardSigmoid's: clip(alpha * x + beta, 0, 1)
  bool operator==(const FusedActivation&) const = default;
};

// A BatchNormalization (inference) the session fuses, with the Relu after
// it, into the Concat before it (act_fusion.h): its per-channel parameters
// (constants) and epsilon. The Concat applies relu(BN(concat)) in one pass.
struct FusedNorm {
  const Tensor* scale = nullptr;
  const Tensor* bias = nullptr;
  const Tensor* mean = nullptr;
  const Tensor* var = nullptr;
  float epsilon = 1e-5f;
  // Every reader of the Relu's output is a Conv (whose numbers do not
  // depend on its input's layout): a bf16 chain may leave its output nhwc.
  bool any_layout = false;
};

// An Add the session fuses, with the Relu after it if any, into the Conv
// before it (act_fusion.h): the Conv's output plus `value` (the Add's other
// input, `value_first` when it is the Add's first operand), then Relu when
// `relu`. The Conv applies it only to an fp32 `value` of its output's shape,
// and otherwise calls KernelContext::decline_fusion().
struct FusedResidual {
  const Tensor* value = nullptr;
  bool value_first = false;
  bool relu = false;
};

class KernelContext {
 public:
  KernelContext(std::vector<const Tensor*> inputs, std::vector<bool> input_constant,
                std::vector<Tensor>* outputs, DnnlEnv* dnnl, Rounding rounding,
                int threads)
      : inputs_(std::move(inputs)),
        constant_(std::move(input_constant)),
        outputs_(outputs),
        dnnl_(dnnl),
        rounding_(rounding),
        threads_(threads) {}

  size_t num_inputs() const { return inputs_.size(); }
  // nullptr when the optional input is omitted.
  const Tensor* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  // The input, or an invalid-model error if absent.
  const Tensor& in(size_t i) const;
  // True when the input is an initializer (fixed for the session's life):
  // kernels may pre-pack it once.
  bool input_is_constant(size_t i) const { return i < constant_.size() && constant_[i]; }
  size_t num_outputs() const { return outputs_->size(); }
  Tensor& output(size_t i) { return (*outputs_)[i]; }
  DnnlEnv& dnnl() const { return *dnnl_; }
  Rounding rounding() const { return rounding_; }
  int threads() const { return threads_; }
  // The activation to apply to output 0 (null: none); set by the session
  // only on a kernel whose fuses_activation() is true, and (kGelu) on the
  // Div heading a GELU chain (gelu_fusion.h).
  const FusedActivation* fused() const { return fused_; }
  void set_fused(const FusedActivation* a) { fused_ = a; }
  // The BatchNormalization fused before that activation (null: none); set
  // only on a Concat, together with a Relu in fused().
  const FusedNorm* norm() const { return norm_; }
  void set_norm(const FusedNorm* n) { norm_ = n; }
  // The Add (+ Relu) fused after the Conv (null: none); set only on a Conv,
  // or (a constant bias, no Relu: bias_fusion.h) on a MatMul, never
  // together with fused().
  const FusedResidual* residual() const { return residual_; }
  void set_residual(const FusedResidual* r) { residual_ = r; }
  // Called by a kernel that did not apply residual(): its output is the
  // head's own, and the session runs the chain's followers one by one.
  void decline_fusion() { declined_ = true; }
  bool fusion_declined() const { return declined_; }

 private:
  std::vector<const Tensor*> inputs_;
  std::vector<bool> constant_;
  std::vector<Tensor>* outputs_;
  DnnlEnv* dnnl_;
  Rounding rounding_;
  int threads_;
  const FusedActivation* fused_ = nullptr;
  const FusedNorm* norm_ = nullptr;
  const FusedResidual* residual_ = nullptr;
  bool declined_ = false;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  Kernel() = default;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  // Computes all outputs from the inputs. Throws EngineError.
  virtual void compute(KernelContext& ctx) = 0;
  virtual bool handles_bf16() const { return false; }
  virtual bool accepts_blocked_inputs() const { return false; }
  // True when compute() applies KernelContext::fused() to its output.
  virtual bool fuses_activation() const { return false; }
  // The simulated cost of the work the last compute() ran in nested
  // sessions (a control-flow node's subgraph nodes, each judged and priced
  // by the profile there); the session adds it to the node's own cost.
  virtual LayerCost nested_cost() const { return {}; }
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const NodeInfo&)>;

// The registry key of an operator: the bare op type in the default domain
// ("" or "ai.onnx"), else "<domain>.<op type>" (e.g. "com.microsoft.QLinearAdd").
inline std::string kernel_key(const std::string& domain, const std::string& op_type) {
  return domain.empty() || domain == "ai.onnx" ? op_type : domain + "." + op_type;
}

// Table of kernels keyed by kernel_key() (op type, qualified by its domain
// outside the default one) and opset range (of that domain).
class KernelRegistry {
 public:
  // The registry with every built-in kernel.
  static const KernelRegistry& global();

  // Registers `factory` for op_type at opsets [since, until] (inclusive).
  void add(const std::string& op_type, int since, int until, KernelFactory factory);
  // The factory for op_type at `opset`, or nullptr.
  const KernelFactory* find(const std::string& op_type, int opset) const;
  bool knows(const std::string& op_type) const { return table_.count(op_type) != 0; }
  std::vector<std::string> op_types() const;

 private:
  struct Entry {
    int since, until;
    KernelFactory factory;
  };
  std::map<std::string, std::vector<Entry>> table_;
};

// Convenience for registration: r.add(op, since, until, make<Cls>()).
template <class K>
KernelFactory make_kernel() {
  return [](const NodeInfo& n) -> std::unique_ptr<Kernel> { return std::make_unique<K>(n); };
}

// Helpers shared by kernels.
// Normalises a possibly negative axis for a tensor of `rank`; throws if out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);
// Numpy broadcast of two shapes; throws InvalidModel when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Row-major strides of `shape`.
std::vector<int64_t> strides_of(const Shape& shape);

// Registration functions, one per kernel file; called by KernelRegistry::global().
void register_conv_kernels(KernelRegistry& r);
void register_gemm_kernels(KernelRegistry& r);
void register_pool_kernels(KernelRegistry& r);
void register_norm_kernels(KernelRegistry& r);
void register_softmax_kernels(KernelRegistry& r);
void register_unary_kernels(KernelRegistry& r);
void register_binary_kernels(KernelRegistry& r);
void register_reduce_kernels(KernelRegistry& r);
void register_shape_kernels(KernelRegistry& r);
void register_movement_kernels(KernelRegistry& r);
void register_resize_kernels(KernelRegistry& r);
void register_misc_kernels(KernelRegistry& r);

}  // namespace torq::engine
