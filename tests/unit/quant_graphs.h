// Small quantized ONNX graphs built in code, for the tests of how executor
// profiles and sessions treat quantized models (test_profile_quant.cc,
// test_session_quant.cc): QDQ layers as discovery cuts them
// (DequantizeLinear on int8 inputs and weights -> op -> QuantizeLinear) and
// QOperator nodes. Header-only.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/kernel_harness.h"

namespace torq::engine::test {

constexpr int32_t kI8 = onnx::TensorProto::INT8;
constexpr int32_t kU8 = onnx::TensorProto::UINT8;
constexpr int32_t kI32 = onnx::TensorProto::INT32;
constexpr int32_t kF32 = onnx::TensorProto::FLOAT;

class QGraph {
 public:
  QGraph() {
    m_.set_ir_version(8);
    m_.add_opset_import()->set_version(13);
    auto* ms = m_.add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
    g_ = m_.mutable_graph();
    g_->set_name("quantized");
  }
  const onnx::ModelProto& model() const { return m_; }

  void input(const std::string& name, int32_t type, const std::vector<int64_t>& dims) {
    auto* tt = typed(g_->add_input(), name, type);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void output(const std::string& name, int32_t type) { typed(g_->add_output(), name, type); }

  template <class T>
  void init(const std::string& name, int32_t type, const std::vector<T>& v, const std::vector<int64_t>& dims) {
    auto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
  }
  // A scalar scale and zero point, named after `base`.
  void params(const std::string& base, float scale, int zp, int32_t type) {
    init<float>(base + "_scale", kF32, {scale}, {});
    if (type == kI32) init<int32_t>(base + "_zp", type, {zp}, {});
    else if (type == kU8) init<uint8_t>(base + "_zp", type, {static_cast<uint8_t>(zp)}, {});
    else init<int8_t>(base + "_zp", type, {static_cast<int8_t>(zp)}, {});
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in,
                        const std::vector<std::string>& out, const std::string& domain = "") {
    auto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + out[0]);
    n->set_domain(domain);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return *n;
  }
  // DequantizeLinear of integer tensor `q`; returns the float tensor's name.
  std::string dq(const std::string& q, float scale, int zp = 0, int32_t type = kI8) {
    params(q, scale, zp, type);
    node("DequantizeLinear", {q, q + "_scale", q + "_zp"}, {q + "_f"});
    return q + "_f";
  }
  // QuantizeLinear of float tensor `x` to int8; returns the integer tensor's name.
  std::string q(const std::string& x, float scale, int zp = 0) {
    params(x + "_q", scale, zp, kI8);
    node("QuantizeLinear", {x, x + "_q_scale", x + "_q_zp"}, {x + "_q"});
    return x + "_q";
  }

 private:
  static onnx::TypeProto_Tensor* typed(onnx::ValueInfoProto* v, const std::string& name, int32_t type) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    return tt;
  }
  onnx::ModelProto m_;
  onnx::GraphProto* g_;
};

inline int64_t numel_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

template <class T>
std::vector<T> seeded_values(int64_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& e : v) e = static_cast<T>(u(rng));
  return v;
}

struct ConvSpec {
  std::vector<int64_t> x, w;  // NCHW input, OIHW weights
  int64_t group = 1, stride = 1, pad = 0;
  float x_scale = 0.02f, w_scale = 0.01f, y_scale = 0.05f;
  int32_t x_type = kI8;
};

inline void conv_attrs(onnx::NodeProto& n, const ConvSpec& s) {
  add_int(n, "group", s.group);
  add_ints(n, "strides", {s.stride, s.stride});
  add_ints(n, "pads", {s.pad, s.pad, s.pad, s.pad});
}

// The QDQ layer of a Conv: x_q -> DQ, int8 weights -> DQ, int32 bias -> DQ,
// Conv, Q -> y_q (int8), seeded weights.
inline onnx::ModelProto qdq_conv(const ConvSpec& s) {
  QGraph b;
  b.input("x_q", s.x_type, s.x);
  b.init("w_q", kI8, seeded_values<int8_t>(numel_of(s.w), -127, 127, 7), s.w);
  b.init("b_q", kI32, seeded_values<int32_t>(s.w[0], -500, 500, 8), {s.w[0]});
  const std::string x = b.dq("x_q", s.x_scale, s.x_type == kU8 ? 128 : 0, s.x_type);
  const std::string w = b.dq("w_q", s.w_scale);
  const std::string bias = b.dq("b_q", s.x_scale * s.w_scale, 0, kI32);
  conv_attrs(b.node("Conv", {x, w, bias}, {"y"}), s);
  b.output(b.q("y", s.y_scale), kI8);
  return b.model();
}

// The same Conv in float (what --auto-convert-bf16 makes bf16).
inline onnx::ModelProto float_conv(const ConvSpec& s) {
  QGraph b;
  b.input("x", kF32, s.x);
  std::vector<float> w(static_cast<size_t>(numel_of(s.w)), 0.01f);
  b.init("w", kF32, w, s.w);
  conv_attrs(b.node("Conv", {"x", "w"}, {"y"}), s);
  b.output("y", kF32);
  return b.model();
}

// DequantizeLinear on each int8 graph input (a, b, ...) -> `op` -> QuantizeLinear -> y_q.
inline onnx::ModelProto qdq_op(const std::string& op, const std::vector<std::vector<int64_t>>& inputs,
                               const std::function<void(onnx::NodeProto&)>& attrs = {}) {
  QGraph b;
  std::vector<std::string> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name(1, static_cast<char>('a' + i));
    b.input(name, kI8, inputs[i]);
    in.push_back(b.dq(name, 0.03f + 0.01f * static_cast<float>(i)));
  }
  auto& n = b.node(op, in, {"y"});
  if (attrs) attrs(n);
  b.output(b.q("y", 0.05f), kI8);
  return b.model();
}

// A standalone QuantizeLinear: float x -> y_q (int8).
inline onnx::ModelProto standalone_q() {
  QGraph b;
  b.input("x", kF32, {1, 8});
  b.output(b.q("x", 0.1f), kI8);
  return b.model();
}

// QLinearConv on an int8 (or uint8) input with int8 weights and an int32 bias.
inline onnx::ModelProto qlinear_conv(const ConvSpec& s) {
  QGraph b;
  b.input("x", s.x_type, s.x);
  b.params("x", s.x_scale, s.x_type == kU8 ? 128 : 0, s.x_type);
  b.init("w", kI8, seeded_values<int8_t>(numel_of(s.w), -127, 127, 7), s.w);
  b.params("w", s.w_scale, 0, kI8);
  b.params("y", s.y_scale, 0, s.x_type);
  b.init("bias", kI32, seeded_values<int32_t>(s.w[0], -500, 500, 8), {s.w[0]});
  conv_attrs(b.node("QLinearConv", {"x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "bias"}, {"y"}),
             s);
  b.output("y", s.x_type);
  return b.model();
}

// A com.microsoft QLinear op on int8 graph inputs a (and b): the QOperator
// form of `op` (QLinearAdd, QLinearLeakyRelu...).
inline onnx::ModelProto qlinear_contrib(const std::string& op, size_t inputs, const std::vector<int64_t>& dims) {
  QGraph b;
  std::vector<std::string> in;
  for (size_t i = 0; i < inputs; ++i) {
    const std::string name(1, static_cast<char>('a' + i));
    b.input(name, kI8, dims);
    b.params(name, 0.03f, 0, kI8);
    in.insert(in.end(), {name, name + "_scale", name + "_zp"});
  }
  b.params("y", 0.05f, 0, kI8);
  in.insert(in.end(), {"y_scale", "y_zp"});
  b.node(op, in, {"y"}, "com.microsoft");
  b.output("y", kI8);
  return b.model();
}

// A QOperator model's first and last layer at once: float x -> Q ->
// QLinearConv -> DQ -> float y (the graph input's quantization and the
// graph output's dequantization as the QOperator rewrite leaves them).
inline onnx::ModelProto qoperator_boundary(const ConvSpec& s) {
  QGraph b;
  b.input("x", kF32, s.x);
  const std::string x = b.q("x", s.x_scale);
  b.init("w", kI8, seeded_values<int8_t>(numel_of(s.w), -127, 127, 7), s.w);
  b.params("w", s.w_scale, 0, kI8);
  b.params("y", s.y_scale, 0, kI8);
  b.node("QLinearConv", {x, x + "_scale", x + "_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp"}, {"y"});
  b.node("DequantizeLinear", {"y", "y_scale", "y_zp"}, {"y_f"});
  b.output("y_f", kF32);
  return b.model();
}

// A Gemm with an int32 bias in QOperator form: a (int8) x int8 weights ->
// MatMulInteger -> Add (int32 bias) -> QuantizeLinear (requantizes) -> y_q.
inline onnx::ModelProto matmul_integer_gemm() {
  QGraph b;
  b.input("a", kI8, {1, 16});
  b.init("w", kI8, seeded_values<int8_t>(16 * 8, -127, 127, 7), {16, 8});
  b.init("bias", kI32, seeded_values<int32_t>(8, -500, 500, 8), {8});
  b.init<int8_t>("a_zp", kI8, {0}, {});
  b.init<int8_t>("w_zp", kI8, {0}, {});
  b.node("MatMulInteger", {"a", "w", "a_zp", "w_zp"}, {"acc"});
  b.node("Add", {"acc", "bias"}, {"sum"});
  b.output(b.q("sum", 0.5f), kI8);
  return b.model();
}

}  // namespace torq::engine::test
