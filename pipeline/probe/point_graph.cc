#include "pipeline/probe/point_graph.h"

#include <algorithm>
#include <cmath>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

namespace torq::pipeline::probe {

namespace {

void set_dims(onnx::TensorProto* t, const Shape& shape) {
  for (int64_t d : shape) t->add_dims(d);
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

}  // namespace

PointGraph::PointGraph(bool int8, uint64_t seed, bool shapes_only)
    : g_(model_.mutable_graph()), int8_(int8), shapes_only_(shapes_only), rng_(static_cast<uint32_t>(seed ^ (seed >> 32))) {
  model_.set_ir_version(8);
  model_.set_producer_name("torq-gen-config probe");
  auto* op = model_.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  g_->set_name("probe");
}

// Whether a tensor is within kMaxElements (counted without overflow);
// records the first one that is not.
bool PointGraph::fits(const std::string& name, const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d > 0 && n > kMaxElements / d) n = kMaxElements + 1;
    else n *= d;
  }
  if (n <= kMaxElements) return true;
  if (too_big_.empty()) too_big_ = name + " of more than " + std::to_string(kMaxElements) + " elements";
  return false;
}

float PointGraph::uniform(float lim) { return std::uniform_real_distribution<float>(-lim, lim)(rng_); }

// x -> QuantizeLinear -> DequantizeLinear, at `scale` with zero point 0.
std::string PointGraph::qdq(const std::string& x, const std::string& stem, float scale) {
  const std::string s = scalar(stem + "_scale", scale);
  auto* zp = g_->add_initializer();
  zp->set_name(stem + "_zp");
  zp->set_data_type(onnx::TensorProto::INT8);
  zp->add_int32_data(0);
  auto* q = g_->add_node();
  q->set_op_type("QuantizeLinear");
  q->set_name(stem + "_q");
  q->add_input(x);
  q->add_input(s);
  q->add_input(zp->name());
  q->add_output(stem + "_q");
  return dequantize(stem + "_q", s, stem + "_dq", {}, zp->name());
}

// A DequantizeLinear of `q` at `scale` (and zero point `zp`) writing `out`,
// of `shape` for the compute node's features.
std::string PointGraph::dequantize(const std::string& q, const std::string& scale, const std::string& out,
                                   const Shape& shape, const std::string& zp) {
  auto* dq = g_->add_node();
  dq->set_op_type("DequantizeLinear");
  dq->set_name(out);
  dq->add_input(q);
  dq->add_input(scale);
  if (!zp.empty()) dq->add_input(zp);
  dq->add_output(out);
  shapes_[out] = shape;
  return out;
}

std::string PointGraph::input(const std::string& name, const Shape& shape) {
  fits(name, shape);
  auto* v = g_->add_input();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
  const std::string used = int8_ ? qdq(name, name, kInputScale) : name;
  shapes_[used] = shape;
  return used;
}

std::string PointGraph::weight(const std::string& name, const Shape& shape, int64_t fan_in) {
  const float lim = 1.f / std::sqrt(static_cast<float>(std::max<int64_t>(1, fan_in)));
  auto* t = g_->add_initializer();
  t->set_name(int8_ ? name + "_q" : name);
  set_dims(t, shape);
  const int64_t n = fits(name, shape) && !shapes_only_ ? numel(shape) : 0;
  if (!int8_) {
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t i = 0; i < n; ++i) t->add_float_data(uniform(lim));
    shapes_[name] = shape;
    return name;
  }
  t->set_data_type(onnx::TensorProto::INT8);
  for (int64_t i = 0; i < n; ++i)
    t->add_int32_data(static_cast<int32_t>(std::clamp<long>(std::lround(uniform(lim) / kWeightScale), -127, 127)));
  return dequantize(t->name(), scalar(name + "_scale", kWeightScale), name + "_dq", shape);
}

std::string PointGraph::bias(const std::string& name, int64_t n) {
  auto* t = g_->add_initializer();
  t->set_name(int8_ ? name + "_q" : name);
  t->add_dims(n);
  if (!int8_) {
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t i = 0; i < n; ++i) t->add_float_data(uniform(0.1f));
    shapes_[name] = {n};
    return name;
  }
  const float scale = kInputScale * kWeightScale;
  t->set_data_type(onnx::TensorProto::INT32);
  for (int64_t i = 0; i < n; ++i) t->add_int32_data(static_cast<int32_t>(std::lround(uniform(0.1f) / scale)));
  return dequantize(t->name(), scalar(name + "_scale", scale), name + "_dq", {n});
}

std::string PointGraph::ints(const std::string& name, const std::vector<int64_t>& values) {
  auto* t = g_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
  shapes_[name] = {static_cast<int64_t>(values.size())};
  return name;
}

std::string PointGraph::scalar(const std::string& name, float value) {
  auto* t = g_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_float_data(value);
  shapes_[name] = {};
  return name;
}

onnx::NodeProto* PointGraph::node(const std::string& op, const std::vector<std::string>& inputs) {
  auto* n = g_->add_node();
  n->set_op_type(op);
  n->set_name(op + "_probe");
  for (const auto& i : inputs) n->add_input(i);
  n->add_output("y");
  compute_ = n;
  return n;
}

void PointGraph::output(bool is_float, int elem_type) {
  const std::string y = int8_ && is_float ? qdq("y", "y_out", kOutputScale) : "y";
  auto* v = g_->add_output();
  v->set_name(y);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(is_float ? onnx::TensorProto::FLOAT : elem_type);
}

void PointGraph::attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void PointGraph::attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

std::vector<Shape> PointGraph::node_input_shapes() const {
  std::vector<Shape> out;
  if (!compute_) return out;
  for (const auto& i : compute_->input())
    if (!i.empty() && shapes_.count(i)) out.push_back(shapes_.at(i));
  return out;
}

std::string PointGraph::serialize(std::string* invalid) const {
  // The graph output's shape, which the checker requires, from ONNX's shape
  // inference: a point it cannot type is no valid model.
  onnx::ModelProto m = model_;
  try {
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    *invalid = std::string("shape inference refuses it: ") + e.what();
    return "";
  }
  for (const auto& out : m.graph().output())
    if (!out.type().tensor_type().has_shape()) {
      *invalid = "shape inference gives " + out.name() + " no shape";
      return "";
    }
  m.mutable_graph()->clear_value_info();
  return m.SerializeAsString();
}

}  // namespace torq::pipeline::probe
