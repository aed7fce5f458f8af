// Session: one loaded ONNX model, ready to run under one executor profile.
//
// Load parses the model, resolves every node to a kernel (an unknown op or
// an unsupported attribute is an EngineError naming the node), folds nodes
// whose inputs are all constant, and plans value lifetimes. run() executes
// the graph in topological order; it is not thread-safe (one run at a time
// per session), and kernels keep their prepared state (oneDNN primitives,
// reordered weights) across runs.
//
// Quantized models: the QuantizeLinear / DequantizeLinear nodes around a
// compute node of a QDQ graph are fused into its integer kernel
// (quant_fusion.h). The profile judges and prices that kernel on its
// integer tensors; a fused Q/DQ is never judged alone and has no NodeStat.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "worker/engine/profile.h"
#include "worker/engine/tensor.h"

namespace onnx {
class GraphProto;
class ModelProto;
}

namespace torq::engine {

enum class Numerics {
  kAsModel,  // compute in the model's own element types
  kBF16,     // convert fp32 weights and inputs to bf16 at load (auto-convert);
             // quantization scales stay fp32, and the float path of an
             // integer kernel (DQ -> op -> Q) runs in fp32, so its integers
             // are those of fp32 numerics
};

struct SessionOptions {
  int threads = 0;                         // 0: leave the OpenMP default
  Numerics numerics = Numerics::kAsModel;
  Rounding rounding = Rounding::kNearestEven;  // for results rounded to bf16
  std::shared_ptr<const ExecutorProfile> profile;  // null: no restrictions, no cost
  // Reject inputs whose shape contradicts the model's declared input shape.
  // (The ONNX backend runner does not check, and some of its test cases
  // feed shapes other than declared.)
  bool check_input_shapes = true;
};

// Where a subgraph (an If branch, a Loop body; pipeline/base/onnx_scope.h) is loaded: the
// options and opsets of the session whose node holds it.
struct GraphScope {
  SessionOptions opts;
  int opset = 0;
  std::map<std::string, int> domain_opsets;  // non-default domains
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;  // kUndefined on an input: any type (outer-scope reads)
  std::vector<int64_t> dims;  // -1 for a dimension that is not fixed
};

struct NodeStat {
  std::string name, op_type;
  double wall_ms = 0;
  LayerCost cost;
};

struct RunStats {
  double wall_ms = 0;
  double sim_ms = 0;
  uint64_t sim_cycles = 0;
  std::vector<NodeStat> nodes;  // per node run (not folded, not a fused Q/DQ)
};

class Session {
 public:
  static std::unique_ptr<Session> from_file(const std::string& path, SessionOptions opts = {});
  static std::unique_ptr<Session> from_bytes(const std::string& bytes, SessionOptions opts = {});
  static std::unique_ptr<Session> from_proto(const onnx::ModelProto& model, SessionOptions opts = {});
  // A subgraph as a session of its own: its inputs are the graph's declared
  // inputs, then the outer-scope values it reads (outer_scope_reads(g), of
  // any type and shape). Its nodes are judged and priced by scope.opts'
  // profile like any others.
  static std::unique_ptr<Session> from_graph(const onnx::GraphProto& g, const GraphScope& scope);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Graph inputs that must be fed (initializer-backed inputs excluded) and
  // graph outputs, in model order.
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  int opset() const;
  size_t num_nodes() const;

  // Runs the model. `inputs` follow inputs() order; in bf16 numerics fp32
  // inputs are rounded to bf16. Returns plain tensors in outputs() order.
  // Throws EngineError; the session stays usable afterwards.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  const RunStats& last_stats() const;
  // Runs the model and returns every value it computed or holds (graph
  // inputs, initializers, folded constants, node outputs), by name, plain.
  // With `error` non-null a failing node does not throw: the run stops
  // there, *error says why, and the values computed so far are returned.
  std::map<std::string, Tensor> run_all(const std::vector<Tensor>& inputs, std::string* error = nullptr);
  // The run of run_all(inputs), a node at a time, for a caller that needs
  // only the values up to some node (a worker's reference run: each layer
  // job waits only for the nodes it reads). The session must outlive it and
  // run nothing else meanwhile; one thread at a time.
  class Steps {
   public:
    ~Steps();
    bool done() const;
    // Executes the next node and returns the values it defined, plain, by
    // name (the first call also returns the graph inputs, and the constants
    // unless start_steps was told not to).
    // Throws EngineError as run() does; the values returned before stay
    // valid, and done() is true afterwards.
    std::vector<std::pair<std::string, Tensor>> step();

   private:
    friend class Session;
    Steps(Session* s, std::vector<Tensor> values, bool constants);
    Session* s_;
    std::vector<Tensor> values_;
    size_t next_ = 0;
    bool constants_ = true;
    bool started_ = false, failed_ = false;
  };
  // `constants` false: the steps never return the initializers and folded
  // constants (a caller that reads activations only, as calibration does,
  // saves a plain copy of every weight per run).
  std::unique_ptr<Steps> start_steps(const std::vector<Tensor>& inputs, bool constants = true);
  // True when the named value is fixed at load (initializer or folded).
  bool is_constant(const std::string& name) const;

  // Seeded random inputs matching inputs() (free dims set to 1): floats
  // uniform in [lo, hi], ints in [0, 10), bools random.
  std::vector<Tensor> random_inputs(uint64_t seed, float lo = -1.f, float hi = 1.f) const;

 private:
  struct Impl;
  std::vector<Tensor> run_impl(const std::vector<Tensor>& inputs, std::map<std::string, Tensor>* all,
                               std::string* error = nullptr);
  std::vector<Tensor> bind_inputs(const std::vector<Tensor>& inputs);
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace torq::engine
