#include "worker/sim/demo_model.h"

#include <cmath>
#include <random>

#include <onnx/onnx_pb.h>

namespace torq::sim {

namespace {

class Builder {
 public:
  explicit Builder(uint64_t seed) : rng_(seed) {
    model_.set_ir_version(8);
    model_.set_producer_name("torq-sim demo");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(13);
    g_ = model_.mutable_graph();
    g_->set_name("torq_demo_cnn");
  }

  void input(const std::string& name, std::vector<int64_t> dims) { value(g_->add_input(), name, dims); }
  void output(const std::string& name, std::vector<int64_t> dims) { value(g_->add_output(), name, dims); }

  std::string weight(const std::string& name, std::vector<int64_t> dims, double scale) {
    auto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    std::normal_distribution<float> dist(0.f, static_cast<float>(scale));
    for (int64_t i = 0; i < n; ++i) t->add_float_data(dist(rng_));
    return name;
  }

  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in, const std::string& out) {
    auto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + out);
    for (auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }

  static void ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void integer(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }

  std::string conv(const std::string& x, const std::string& out, int64_t cin, int64_t cout, int64_t k,
                   int64_t stride, int64_t group) {
    const double fan_in = static_cast<double>(cin / group * k * k);
    auto w = weight(out + "_w", {cout, cin / group, k, k}, std::sqrt(2.0 / fan_in));
    auto b = weight(out + "_b", {cout}, 0.05);
    auto* n = node("Conv", {x, w, b}, out);
    ints(n, "kernel_shape", {k, k});
    ints(n, "strides", {stride, stride});
    ints(n, "pads", {k / 2, k / 2, k / 2, k / 2});
    integer(n, "group", group);
    return out;
  }

  std::string serialize() const { return model_.SerializeAsString(); }

 private:
  void value(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }

  std::mt19937_64 rng_;
  onnx::ModelProto model_;
  onnx::GraphProto* g_;
};

}  // namespace

std::string build_demo_model(uint64_t seed) {
  Builder b(seed);
  b.input("input", {1, 3, 64, 64});
  auto x = b.conv("input", "conv1", 3, 16, 3, 1, 1);
  x = b.node("Relu", {x}, "relu1")->output(0);
  auto* mp = b.node("MaxPool", {x}, "pool1");
  Builder::ints(mp, "kernel_shape", {2, 2});
  Builder::ints(mp, "strides", {2, 2});
  x = b.conv("pool1", "conv2", 16, 32, 3, 2, 1);
  x = b.node("Relu", {x}, "relu2")->output(0);
  auto dw = b.conv(x, "dwconv3", 32, 32, 3, 1, 32);
  auto sig = b.node("Sigmoid", {dw}, "sigmoid3")->output(0);
  auto silu = b.node("Mul", {dw, sig}, "silu3")->output(0);
  auto pw = b.conv(silu, "pwconv4", 32, 32, 1, 1, 1);
  auto res = b.node("Add", {pw, x}, "residual4")->output(0);
  auto gap = b.node("GlobalAveragePool", {res}, "gap5")->output(0);
  auto* fl = b.node("Flatten", {gap}, "flatten5");
  Builder::integer(fl, "axis", 1);
  auto fcw = b.weight("fc_w", {10, 32}, std::sqrt(1.0 / 32));
  auto fcb = b.weight("fc_b", {10}, 0.05);
  auto* gemm = b.node("Gemm", {"flatten5", fcw, fcb}, "logits");
  Builder::integer(gemm, "transB", 1);
  auto* sm = b.node("Softmax", {"logits"}, "probabilities");
  Builder::integer(sm, "axis", 1);
  b.output("probabilities", {1, 10});
  return b.serialize();
}

}  // namespace torq::sim
