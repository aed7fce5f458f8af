// Probe points (issue 34): one op with its parameters in one data type,
// built as a single-op ONNX model (probe_model.h) and tested on every
// executor like a layer; what an executor's rule sees of it (its
// features, as worker/engine/profile_check.cc judges a node); and its
// measured outcome per executor. Plain data, shared by the spec, the
// model builder, the learner and the reports.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/base/dtype.h"
#include "pipeline/core/types.h"

namespace torq::pipeline::probe {

// One point of a probe spec.
struct ProbePoint {
  std::string id;     // "<op>-<dtype>-<12 hex of sha256(op, dtype, params, seed)>": stable as a grid grows
  std::string op;     // ONNX op type of the node (Conv, MaxPool...)
  std::string dtype;  // fp32 | bf16 | int8
  // The parameters as the spec names them, in the op family's axis order
  // ("kernel" = "3", "groups" = "depthwise", "shape" = "1x16x14x14").
  std::vector<std::pair<std::string, std::string>> params;
  uint64_t seed = 0;  // of its weights and inputs
  // Text of the parameters: "kernel=3 stride=1 ...".
  std::string params_text() const {
    std::string s;
    for (const auto& [k, v] : params) s += (s.empty() ? "" : " ") + k + "=" + v;
    return s;
  }
};

// What an executor profile's rule judges of a point's node: the rule's op,
// the data type of input 0 as the executor receives it, the shapes and the
// conv/pool attributes (worker/engine/profile_check.cc: judge, group_kind,
// kernel_of, check_spatial, check_limits).
struct PointFeatures {
  std::string op;                   // the op whose rule applies (Conv for a QLinearConv)
  base::DType dtype = base::DType::kF32;  // input 0: f32, bf16 or i8
  std::vector<int64_t> input_shape; // input 0
  int64_t max_rank = 0;             // largest rank of the judged inputs
  std::string group_kind;           // Conv/ConvTranspose: standard | depthwise | grouped; else ""
  std::vector<int64_t> kernel;      // conv/pool kernel extents (spatial ops); else empty
  std::vector<int64_t> strides;     // as the node gives them (may be empty: 1)
  std::vector<int64_t> dilations;

  bool integer() const { return base::is_integer(dtype); }
  bool spatial() const { return op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool"; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : input_shape) n *= d;
    return n;
  }
  int64_t spatial_rank() const { return static_cast<int64_t>(input_shape.size()) - 2; }
  // Smallest spatial extent (dims 2..) of input 0; 0 when it has none.
  int64_t min_spatial() const {
    if (input_shape.size() <= 2) return 0;
    return *std::min_element(input_shape.begin() + 2, input_shape.end());
  }
  int64_t max_kernel() const { return kernel.empty() ? 0 : *std::max_element(kernel.begin(), kernel.end()); }
  int64_t min_kernel() const { return kernel.empty() ? 0 : *std::min_element(kernel.begin(), kernel.end()); }
  int64_t max_stride() const { return strides.empty() ? 1 : *std::max_element(strides.begin(), strides.end()); }
  int64_t max_dilation() const {
    return dilations.empty() ? 1 : *std::max_element(dilations.begin(), dilations.end());
  }
};

// One point on one executor, as measured.
struct ProbeOutcome {
  Executor executor = Executor::kNss;
  Status status = Status::kError;
  std::string error_class;    // status error: its class (unsupported, compile, crash, timeout...)
  std::string error_message;
  double runtime_ms = -1;     // simulated/device time; -1 unknown
  double host_ms = 0;
  // An infrastructure failure (crash, timeout, a lost board): says nothing
  // of the op; never learned from, listed apart.
  bool infrastructure = false;
  bool runs() const { return status != Status::kError; }
};

// A point with its features and outcomes: one row per executor of probe.csv.
struct ProbeRow {
  ProbePoint point;
  PointFeatures features;
  // Why the point could not be built or imported (an impossible
  // combination): no job ran; empty when it ran.
  std::string invalid;
  std::vector<ProbeOutcome> outcomes;  // per executor tested
};

}  // namespace torq::pipeline::probe
