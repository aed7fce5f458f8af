// Small ONNX models built in code for the integration tests.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace torq::test {

class GraphBuilder {
 public:
  explicit GraphBuilder(int opset = 13) {
    m_.set_ir_version(8);
    auto* op = m_.add_opset_import();
    op->set_version(opset);
    g_ = m_.mutable_graph();
    g_->set_name("test");
  }
  void input(const std::string& n, std::vector<int64_t> dims) { value(g_->add_input(), n, dims); }
  void output(const std::string& n, std::vector<int64_t> dims) { value(g_->add_output(), n, dims); }
  void scalar(const std::string& n, float v) {
    auto* t = g_->add_initializer();
    t->set_name(n);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(v);
  }
  // A float initializer of `dims` with seeded values in [-0.5, 0.5).
  void weights(const std::string& n, std::vector<int64_t> dims, unsigned seed) {
    auto* t = g_->add_initializer();
    t->set_name(n);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      count *= d;
    }
    for (int64_t i = 0; i < count; ++i) {
      seed = seed * 1103515245u + 12345u;
      t->add_float_data(static_cast<float>((seed >> 8) & 0xffff) / 65536.f - 0.5f);
    }
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in, const std::string& out) {
    auto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + out);
    for (auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }
  void save(const std::string& path) {
    std::ofstream f(path, std::ios::binary);
    m_.SerializeToOstream(&f);
  }

 private:
  void value(onnx::ValueInfoProto* v, const std::string& n, const std::vector<int64_t>& dims) {
    v->set_name(n);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  onnx::ModelProto m_;
  onnx::GraphProto* g_;
};

// Relu -> Clip(0,6) -> Clip(-1,1) -> Relu -> Softmax: two Relus are
// duplicates; the Clips differ only in their bounds.
inline void save_dedup_model(const std::string& path) {
  GraphBuilder b;
  b.input("x", {1, 16});
  b.scalar("lo0", 0.f);
  b.scalar("hi0", 6.f);
  b.scalar("lo1", -1.f);
  b.scalar("hi1", 1.f);
  b.node("Relu", {"x"}, "r0");
  b.node("Clip", {"r0", "lo0", "hi0"}, "c0");
  b.node("Clip", {"c0", "lo1", "hi1"}, "c1");
  b.node("Relu", {"c1"}, "r1");
  b.node("Softmax", {"r1"}, "y");
  b.output("y", {1, 16});
  b.save(path);
}

// Relu -> LpNormalization -> Relu: the engine has no LpNormalization, so it
// runs on no executor (a critical failure).
inline void save_critical_model(const std::string& path) {
  GraphBuilder b;
  b.input("x", {1, 8});
  b.node("Relu", {"x"}, "a");
  b.node("LpNormalization", {"a"}, "b");
  b.node("Relu", {"b"}, "y");
  b.output("y", {1, 8});
  b.save(path);
}

// A chain of n Muls by 1.1 and 0.9 on a 1x64 input. Converted to bf16 and
// discovered with --bf16-rounding rne, each Mul alone on nss (which
// truncates) is within 1% of the reference (which rounds to nearest), but
// the truncation compounds along the chain: the assigned run fails.
inline void save_chain_model(const std::string& path, int n) {
  GraphBuilder b;
  b.input("x", {1, 64});
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    const std::string c = "c" + std::to_string(i), out = i == n - 1 ? "y" : "m" + std::to_string(i);
    b.scalar(c, i % 2 == 0 ? 1.1f : 0.9f);
    b.node("Mul", {prev, c}, out);
    prev = out;
  }
  b.output("y", {1, 64});
  b.save(path);
}

// MatMul -> Relu -> MatMul on a 1x16 input: in bf16 the nss widens each
// MatMul's output to f32, and the Relu after it (bf16 in the model) must
// receive it narrowed back, as the compiler's cast does.
inline void save_matmul_relu_model(const std::string& path) {
  GraphBuilder b;
  b.input("x", {1, 16});
  b.weights("w0", {16, 16}, 7);
  b.weights("w1", {16, 8}, 11);
  b.node("MatMul", {"x", "w0"}, "h");
  b.node("Relu", {"h"}, "r");
  b.node("MatMul", {"r", "w1"}, "y");
  b.output("y", {1, 8});
  b.save(path);
}

}  // namespace torq::test
