// A real ONNX model of a chosen size for the fleet's blob tests:
// MatMul(X[1,K], W[K,N]) -> Relu, two layers, W of K*N floats that do not
// compress (a linear congruential sequence), written to `path`, which is
// returned.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace torq::fleet_test {

inline std::string matmul_relu_model(const std::string& path, int64_t k, int64_t n) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("big_matmul");
  auto value = [](onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(g->add_input(), "x", {1, k});
  value(g->add_output(), "y", {1, n});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(k);
  w->add_dims(n);
  std::string raw(static_cast<size_t>(k * n) * sizeof(float), '\0');
  uint32_t s = 12345;
  for (size_t i = 0; i < static_cast<size_t>(k * n); ++i) {
    s = s * 1664525u + 1013904223u;
    const float f = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 0.05f;
    std::memcpy(&raw[i * sizeof(float)], &f, sizeof f);
  }
  w->set_raw_data(std::move(raw));
  auto* mm = g->add_node();
  mm->set_op_type("MatMul");
  mm->set_name("mm");
  mm->add_input("x");
  mm->add_input("w");
  mm->add_output("h");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu");
  relu->add_input("h");
  relu->add_output("y");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}


}  // namespace torq::fleet_test
