#include "worker/quant/qdq_rewrite.h"

#include <climits>
#include <limits>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "worker/engine/tensor_io.h"
#include "worker/quant/qdq_graph.h"

namespace torq::quant {

const std::set<std::string>& quantizable_ops() {
  static const std::set<std::string> ops = {
      "Conv", "Gemm", "MatMul", "Add", "Mul", "AveragePool", "GlobalAveragePool", "MaxPool", "Concat",
      "Sigmoid", "LeakyRelu", "Relu", "Clip", "HardSigmoid", "HardSwish", "ReduceMean", "Flatten",
      "Reshape", "Transpose", "Resize", "Softmax"};
  return ops;
}

bool is_quantized(const onnx::ModelProto& model, std::string* which) {
  for (const auto& n : model.graph().node()) {
    const std::string& t = n.op_type();
    if (t == "QuantizeLinear" || t == "DequantizeLinear" || t == "DynamicQuantizeLinear" ||
        t.rfind("QLinear", 0) == 0 || t == "ConvInteger" || t == "MatMulInteger") {
      if (which) *which = t + " node '" + n.name() + "'";
      return true;
    }
  }
  return false;
}

onnx::TensorProto scalar_or_vector(const std::string& name, int32_t type, const std::vector<float>& f,
                                   const std::vector<int32_t>& i, bool vector) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  if (vector) t.add_dims(static_cast<int64_t>(type == onnx::TensorProto::FLOAT ? f.size() : i.size()));
  for (float v : f) t.add_float_data(v);
  for (int32_t v : i) t.add_int32_data(v);
  return t;
}

namespace {

enum class Role { kActivation, kWeight, kBias, kNone };

// What input i of a quantizable node is.
Role role_of(const onnx::NodeProto& n, int i) {
  const std::string& t = n.op_type();
  if (t == "Conv" || t == "Gemm") return i == 0 ? Role::kActivation : i == 1 ? Role::kWeight : Role::kBias;
  if (t == "MatMul") return i == 0 ? Role::kActivation : Role::kWeight;
  if (t == "Add" || t == "Mul" || t == "Concat") return Role::kActivation;
  return i == 0 ? Role::kActivation : Role::kNone;
}

int64_t weight_axis(const onnx::NodeProto& n, int64_t rank) {
  if (n.op_type() == "Gemm") {
    for (const auto& a : n.attribute())
      if (a.name() == "transB" && a.i() != 0) return 0;
    return 1;
  }
  if (n.op_type() == "MatMul") return rank - 1;
  return 0;  // Conv: output channels
}

class Rewriter {
 public:
  Rewriter(const onnx::ModelProto& in, const std::map<std::string, Range>& ranges, const QdqOptions& o)
      : in_(in), ranges_(ranges), opts_(o) {
    for (const auto& t : in.graph().initializer()) inits_[t.name()] = &t;
    for (const auto& o2 : in.graph().output()) outputs_.insert(o2.name());
    for (const auto& imp : in.opset_import())
      if (imp.domain().empty() || imp.domain() == "ai.onnx") opset_ = imp.version();
  }
  QdqResult run();

 private:
  bool is_float_init(const std::string& n) const {
    auto it = inits_.find(n);
    return it != inits_.end() && it->second->data_type() == onnx::TensorProto::FLOAT;
  }
  void plan();
  void raise_opset_to_13();
  void clip_attributes_to_inputs();
  void emit_qdq(const std::string& src, const std::string& tensor, QParams p);
  std::string const_dq(const onnx::NodeProto& n, int i, Role r);
  std::string weight_dq(const onnx::NodeProto& n, const std::string& name);
  std::string bias_dq(const onnx::NodeProto& n, const std::string& name);
  std::string add_dq(const std::string& q, const std::string& scale, const std::string& zp, const std::string& out,
                     std::optional<int64_t> axis);

  const onnx::ModelProto& in_;
  const std::map<std::string, Range>& ranges_;
  QdqOptions opts_;
  int64_t opset_ = 0;
  std::map<std::string, const onnx::TensorProto*> inits_;
  std::set<std::string> outputs_;
  std::map<std::string, QParams> act_;        // activations to quantize
  std::map<std::string, std::string> dq_of_;  // activation -> its DQ output
  std::map<std::string, std::string> consts_; // "<init>|<node>" -> DQ output
  std::map<std::string, std::vector<float>> weight_scales_;  // weight init -> scales
  std::vector<onnx::NodeProto> nodes_;
  QdqResult res_;
};

void Rewriter::plan() {
  for (const auto& n : in_.graph().node()) {
    if (!quantizable_ops().count(n.op_type())) continue;
    for (int i = 0; i < n.input_size(); ++i) {
      const std::string& t = n.input(i);
      if (t.empty() || inits_.count(t) || role_of(n, i) != Role::kActivation) continue;
      if (auto r = ranges_.find(t); r != ranges_.end()) act_[t] = activation_params(r->second);
    }
  }
  for (const auto& o : outputs_)
    if (auto r = ranges_.find(o); r != ranges_.end()) act_[o] = activation_params(r->second);
}

std::string Rewriter::add_dq(const std::string& q, const std::string& scale, const std::string& zp,
                             const std::string& out, std::optional<int64_t> axis) {
  onnx::NodeProto d;
  d.set_op_type("DequantizeLinear");
  d.set_name(out + "_DequantizeLinear");
  d.add_input(q);
  d.add_input(scale);
  d.add_input(zp);
  d.add_output(out);
  if (axis) {
    auto* a = d.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(*axis);
  }
  nodes_.push_back(std::move(d));
  return out;
}

// Q(src) -> <tensor>_quantized -> DQ -> dq_of_[tensor].
void Rewriter::emit_qdq(const std::string& src, const std::string& tensor, QParams p) {
  auto* g = res_.model.mutable_graph();
  *g->add_initializer() = scalar_or_vector(tensor + "_scale", onnx::TensorProto::FLOAT, {p.scale}, {}, false);
  *g->add_initializer() = scalar_or_vector(tensor + "_zero_point", onnx::TensorProto::INT8, {}, {p.zero_point}, false);
  onnx::NodeProto q;
  q.set_op_type("QuantizeLinear");
  q.set_name(tensor + "_QuantizeLinear");
  q.add_input(src);
  q.add_input(tensor + "_scale");
  q.add_input(tensor + "_zero_point");
  q.add_output(tensor + "_quantized");
  nodes_.push_back(std::move(q));
  add_dq(tensor + "_quantized", tensor + "_scale", tensor + "_zero_point", dq_of_.at(tensor), std::nullopt);
  ++res_.activations;
}

std::string Rewriter::weight_dq(const onnx::NodeProto& n, const std::string& name) {
  const auto& w = *inits_.at(name);
  const engine::Tensor t = engine::tensor_from_proto(w);
  std::vector<int64_t> shape(w.dims().begin(), w.dims().end());
  const int64_t axis = weight_axis(n, static_cast<int64_t>(shape.size()));
  const bool per_channel = opts_.per_channel && !shape.empty();
  QuantizedWeights q = quantize_weights(t.data<float>(), shape, axis, per_channel);
  weight_scales_[name] = q.scales;
  auto* g = res_.model.mutable_graph();
  onnx::TensorProto v;
  v.set_name(name + "_quantized");
  v.set_data_type(onnx::TensorProto::INT8);
  for (int64_t d : shape) v.add_dims(d);
  v.set_raw_data(std::string(reinterpret_cast<const char*>(q.values.data()), q.values.size()));
  *g->add_initializer() = std::move(v);
  *g->add_initializer() = scalar_or_vector(name + "_scale", onnx::TensorProto::FLOAT, q.scales, {}, per_channel);
  *g->add_initializer() = scalar_or_vector(name + "_zero_point", onnx::TensorProto::INT8, {},
                                           std::vector<int32_t>(q.scales.size(), 0), per_channel);
  ++res_.weights;
  return add_dq(name + "_quantized", name + "_scale", name + "_zero_point", name + "_dequantized",
                per_channel ? std::optional<int64_t>(axis) : std::nullopt);
}

// int32 at scale x_scale * w_scale (per channel), zero point 0; fp32 when
// the activation or the weight is not quantized.
std::string Rewriter::bias_dq(const onnx::NodeProto& n, const std::string& name) {
  auto x = act_.find(n.input(0));
  auto w = n.input_size() > 1 ? weight_scales_.find(n.input(1)) : weight_scales_.end();
  if (x == act_.end() || w == weight_scales_.end()) return name;
  const engine::Tensor t = engine::tensor_from_proto(*inits_.at(name));
  const int64_t len = t.numel();
  const bool per_channel = w->second.size() > 1;
  if (per_channel && static_cast<int64_t>(w->second.size()) != len) return name;
  std::vector<float> scales;
  std::vector<int32_t> values;
  for (int64_t c = 0; c < len; ++c) {
    const float s = x->second.scale * w->second[per_channel ? static_cast<size_t>(c) : 0];
    if (per_channel || c == 0) scales.push_back(s);
    values.push_back(quantize_value(t.data<float>()[c], QParams{s, 0}, INT32_MIN, INT32_MAX));
  }
  auto* g = res_.model.mutable_graph();
  onnx::TensorProto v = scalar_or_vector(name + "_quantized", onnx::TensorProto::INT32, {}, values, true);
  v.clear_dims();
  for (int64_t d : inits_.at(name)->dims()) v.add_dims(d);
  *g->add_initializer() = std::move(v);
  *g->add_initializer() = scalar_or_vector(name + "_scale", onnx::TensorProto::FLOAT, scales, {}, per_channel);
  *g->add_initializer() = scalar_or_vector(name + "_zero_point", onnx::TensorProto::INT32, {},
                                           std::vector<int32_t>(scales.size(), 0), per_channel);
  ++res_.biases;
  return add_dq(name + "_quantized", name + "_scale", name + "_zero_point", name + "_dequantized",
                per_channel ? std::optional<int64_t>(0) : std::nullopt);
}

// The DQ output a quantizable node reads for its float initializer input i
// (made once per initializer and node kind), or the initializer itself.
std::string Rewriter::const_dq(const onnx::NodeProto& n, int i, Role r) {
  const std::string& name = n.input(i);
  const std::string key = name + "|" + (r == Role::kWeight ? n.op_type() : std::string(r == Role::kBias ? "b" : "a"));
  if (auto it = consts_.find(key); it != consts_.end()) return it->second;
  std::string out = name;
  if (r == Role::kWeight && inits_.at(name)->dims_size() >= 1) out = weight_dq(n, name);
  else if (r == Role::kBias) out = bias_dq(n, name);
  else if (r == Role::kActivation) {
    const engine::Tensor t = engine::tensor_from_proto(*inits_.at(name));
    Range range{0, 0};
    for (int64_t k = 0; k < t.numel(); ++k) range.add(t.data<float>()[k]);
    dq_of_[name] = name + "_dequantized";
    emit_qdq(name, name, activation_params(range));
    out = dq_of_[name];
  }
  return consts_[key] = out;
}

// Clip before opset 11 holds min/max as attributes; from 11 as inputs.
void Rewriter::clip_attributes_to_inputs() {
  auto* g = res_.model.mutable_graph();
  for (auto& n : *g->mutable_node()) {
    if (n.op_type() != "Clip") continue;
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    for (const auto& a : n.attribute()) {
      if (a.name() == "min") lo = a.f();
      if (a.name() == "max") hi = a.f();
    }
    n.clear_attribute();
    const std::string base = n.output(0) + "_clip_";
    *g->add_initializer() = scalar_or_vector(base + "min", onnx::TensorProto::FLOAT, {lo}, {}, false);
    *g->add_initializer() = scalar_or_vector(base + "max", onnx::TensorProto::FLOAT, {hi}, {}, false);
    n.add_input(base + "min");
    n.add_input(base + "max");
  }
}

// Per-channel scales need the per-axis DequantizeLinear of opset 13. The
// default domain moves from 10..12 to 13 when no op of the model changed
// meaning or signature there (axes as an input, Softmax's single axis).
void Rewriter::raise_opset_to_13() {
  static const std::set<std::string> changed = {"Split", "Squeeze", "Unsqueeze", "ReduceSum", "Softmax",
                                                "LogSoftmax", "Hardmax", "Pad", "Resize", "Upsample", "TopK",
                                                "Slice", "Scatter", "Dropout"};
  for (const auto& n : in_.graph().node())
    if (changed.count(n.op_type()) || (n.op_type() == "Clip" && opset_ >= 11 && n.attribute_size()))
      throw std::invalid_argument("quantize: --per-channel needs opset 13 (per-axis DequantizeLinear); the model's "
                                  "opset is " + std::to_string(opset_) + " and its " + n.op_type() +
                                  " node '" + n.name() + "' changed in opset 13: re-export it at opset 13");
  for (auto& imp : *res_.model.mutable_opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx") imp.set_version(13);
  if (opset_ < 11) clip_attributes_to_inputs();
  res_.notes.push_back("opset raised from " + std::to_string(opset_) + " to 13 for per-axis DequantizeLinear");
}

QdqResult Rewriter::run() {
  if (opset_ < 10) throw std::invalid_argument("quantize: the model's opset is " + std::to_string(opset_) +
                                               "; QuantizeLinear needs opset 10 or later");
  plan();
  res_.model = in_;
  res_.model.mutable_graph()->clear_node();
  for (const auto& [t, p] : act_) dq_of_[t] = outputs_.count(t) ? t : t + "_dequantized";
  for (const auto& gi : in_.graph().input())
    if (act_.count(gi.name()) && !inits_.count(gi.name())) emit_qdq(gi.name(), gi.name(), act_.at(gi.name()));
  for (const auto& src : in_.graph().node()) {
    onnx::NodeProto n = src;
    if (quantizable_ops().count(n.op_type()))
      for (int i = 0; i < n.input_size(); ++i) {
        const std::string& t = src.input(i);
        const Role r = role_of(src, i);
        if (t.empty() || r == Role::kNone) continue;
        if (is_float_init(t)) n.set_input(i, const_dq(src, i, r));
        else if (dq_of_.count(t) && r == Role::kActivation) n.set_input(i, dq_of_.at(t));
      }
    std::vector<std::string> produced;
    for (int k = 0; k < n.output_size(); ++k)
      if (act_.count(src.output(k))) {
        produced.push_back(src.output(k));
        if (outputs_.count(src.output(k))) n.set_output(k, src.output(k) + "_prequant");
      }
    nodes_.push_back(std::move(n));
    for (const auto& t : produced) emit_qdq(outputs_.count(t) ? t + "_prequant" : t, t, act_.at(t));
  }
  for (auto& n : nodes_) *res_.model.mutable_graph()->add_node() = std::move(n);
  if (opts_.per_channel && opset_ < 13) raise_opset_to_13();
  prune_unread(res_.model.mutable_graph());  // the fp32 weights the int8 ones replaced
  for (const auto& [t, dq] : dq_of_) res_.dequantized[t] = dq;
  return std::move(res_);
}

}  // namespace

QdqResult quantize_qdq(const onnx::ModelProto& fp32, const std::map<std::string, Range>& ranges,
                       const QdqOptions& opts) {
  return Rewriter(fp32, ranges, opts).run();
}

}  // namespace torq::quant
