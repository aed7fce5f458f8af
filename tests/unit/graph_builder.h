// Helpers for unit tests that build small fp32 ONNX graphs by hand (the
// fusion and kernel tests): typed values, float initializers and nodes.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace torq::test {

// A float tensor value `name` of shape `dims`, added to vs (a graph's
// inputs, outputs or value_info).
inline void add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* vs, const std::string& name,
                      const std::vector<int64_t>& dims) {
  auto* v = vs->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

// A float initializer with the given values (row-major, float_data).
inline void add_init(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
                     const std::vector<float>& v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float x : v) t->add_float_data(x);
}

// A float initializer of values uniform in [-1, 1) from `seed`; returns them.
inline std::vector<float> add_random_init(onnx::GraphProto* g, const std::string& name,
                                          const std::vector<int64_t>& dims, unsigned seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  add_init(g, name, dims, v);
  return v;
}

// A node named "<op>_<first output>".
inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& in,
                                 const std::vector<std::string>& out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + out.at(0));
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

}  // namespace torq::test
