#include "worker/quant/qoperator_ops.h"

#include <initializer_list>
#include <map>

#include "worker/engine/tensor_io.h"
#include "worker/quant/qdq_rewrite.h"

namespace torq::quant {
namespace {

const char* const kMicrosoft = "com.microsoft";

using Names = std::vector<std::string>;

Names cat(std::initializer_list<Names> parts) {
  Names out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Names triple(const QTensor& t) { return {t.q, t.scale, t.zero_point}; }
Names out_params(const QdqGroup& grp) { return {grp.out.scale, grp.out.zero_point}; }

const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
int64_t int_attribute(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  const auto* a = attribute(n, name);
  return a ? a->i() : def;
}
float float_attribute(const onnx::NodeProto& n, const std::string& name, float def) {
  const auto* a = attribute(n, name);
  return a ? a->f() : def;
}

onnx::NodeProto make_node(const std::string& op, const std::string& name, const Names& in, const std::string& out,
                          const std::string& domain = "") {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  if (!domain.empty()) n.set_domain(domain);
  for (const auto& i : in) n.add_input(i);
  n.add_output(out);
  return n;
}

// Named after the float op it replaces, as onnxruntime names them.
std::string quant_name(const onnx::NodeProto& n) { return n.name().empty() ? "" : n.name() + "_quant"; }

// One integer node with the float op's attributes, writing the group's
// quantized output.
IntegerForm one_node(const QdqGraph& g, const QdqGroup& grp, const std::string& op, const Names& in,
                     const std::string& domain = "") {
  const onnx::NodeProto& src = g.node(grp.node);
  IntegerForm f;
  f.op = op;
  f.nodes.push_back(make_node(op, quant_name(src), in, grp.out.q, domain));
  *f.nodes.back().mutable_attribute() = src.attribute();
  return f;
}

// Input i, when it is a tensor quantized per tensor.
const QTensor* activation(const QdqGraph& g, const QdqGroup& grp, size_t i) {
  if (i >= grp.in.size() || !grp.in[i] || !g.per_tensor_params(*grp.in[i])) return nullptr;
  return &*grp.in[i];
}

// Input i, when it is an int8 initializer quantized per tensor or along
// `axis` (negative: from the end).
const QTensor* weight(const QdqGraph& g, const QdqGroup& grp, size_t i, int64_t axis) {
  if (i >= grp.in.size() || !grp.in[i] || !g.is_initializer_of(grp.in[i]->q, onnx::TensorProto::INT8)) return nullptr;
  const QTensor& w = *grp.in[i];
  if (!w.axis) return g.per_tensor_params(w) ? &w : nullptr;
  const int64_t rank = g.initializer(w.q)->dims_size();
  const auto norm = [rank](int64_t a) { return a < 0 ? a + rank : a; };
  return rank >= 2 && norm(*w.axis) == norm(axis) ? &w : nullptr;
}

// The int32 bias of input i, when its scale is x_scale * w_scale (per
// channel) and its zero point 0: what QLinearConv and an int32 Add assume.
std::optional<std::string> int32_bias(const QdqGraph& g, const QdqGroup& grp, size_t i, const QTensor& x,
                                      const QTensor& w) {
  if (i >= grp.in.size() || !grp.in[i] || !g.is_initializer_of(grp.in[i]->q, onnx::TensorProto::INT32))
    return std::nullopt;
  const QTensor& b = *grp.in[i];
  const float xs = g.floats(x.scale).at(0);
  const std::vector<float> ws = g.floats(w.scale), bs = g.floats(b.scale);
  if (bs.size() != ws.size()) return std::nullopt;
  for (size_t c = 0; c < ws.size(); ++c)
    if (bs[c] != xs * ws[c]) return std::nullopt;
  for (int32_t z : g.ints(b.zero_point))
    if (z != 0) return std::nullopt;
  return b.q;
}

std::optional<IntegerForm> conv(const QdqGraph& g, const QdqGroup& grp, int64_t) {
  const onnx::NodeProto& n = g.node(grp.node);
  const QTensor* x = activation(g, grp, 0);
  const QTensor* w = weight(g, grp, 1, 0);
  if (!x || !w) return std::nullopt;
  Names in = cat({triple(*x), triple(*w), out_params(grp)});
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const auto b = int32_bias(g, grp, 2, *x, *w);
    if (!b) return std::nullopt;
    in.push_back(*b);
  }
  return one_node(g, grp, "QLinearConv", in);
}

std::optional<IntegerForm> matmul(const QdqGraph& g, const QdqGroup& grp, int64_t) {
  const QTensor* a = activation(g, grp, 0);
  const QTensor* b = activation(g, grp, 1);
  if (!b) b = weight(g, grp, 1, -1);  // per column
  if (!a || !b) return std::nullopt;
  return one_node(g, grp, "QLinearMatMul", cat({triple(*a), triple(*b), out_params(grp)}));
}

// A [rows, cols] int8 initializer as [cols, rows].
onnx::TensorProto transposed_int8(const onnx::TensorProto& w, const std::string& name) {
  const engine::Tensor t = engine::tensor_from_proto(w);
  const int64_t rows = w.dims(0), cols = w.dims(1);
  std::string data(static_cast<size_t>(rows * cols), '\0');
  const int8_t* v = t.data<int8_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) data[static_cast<size_t>(c * rows + r)] = static_cast<char>(v[r * cols + c]);
  onnx::TensorProto out;
  out.set_name(name);
  out.set_data_type(onnx::TensorProto::INT8);
  out.add_dims(cols);
  out.add_dims(rows);
  out.set_raw_data(std::move(data));
  return out;
}

// Gemm with an int32 bias: MatMulInteger -> Add -> QuantizeLinear of the
// int32 sum at y_scale / (x_scale * w_scale), per column when w is.
void biased_gemm(const QdqGraph& g, const QdqGroup& grp, const QTensor& x, const QTensor& w, const std::string& bias,
                 IntegerForm* f) {
  const onnx::NodeProto& n = g.node(grp.node);
  const std::string base = n.output(0), product = base + "_matmul_int32", sum = base + "_int32";
  f->op = "MatMulInteger";
  f->nodes.push_back(make_node("MatMulInteger", quant_name(n), {x.q, w.q, x.zero_point, w.zero_point}, product));
  f->nodes.push_back(make_node("Add", n.name() + "_bias", {product, bias}, sum));
  const float xs = g.floats(x.scale).at(0), ys = g.floats(grp.out.scale).at(0);
  const int32_t yz = g.ints(grp.out.zero_point).at(0);
  std::vector<float> scale;
  for (float s : g.floats(w.scale)) scale.push_back(ys / (xs * s));
  const bool per_column = w.axis.has_value();
  Names in = {sum, base + "_requant_scale", grp.out.zero_point};
  f->initializers.push_back(scalar_or_vector(in[1], onnx::TensorProto::FLOAT, scale, {}, per_column));
  if (per_column) {
    in[2] = base + "_requant_zero_point";
    f->initializers.push_back(scalar_or_vector(in[2], onnx::TensorProto::INT8, {},
                                               std::vector<int32_t>(scale.size(), yz), true));
  }
  f->nodes.push_back(make_node("QuantizeLinear", n.name() + "_requant", in, grp.out.q));
  if (per_column) {
    auto* a = f->nodes.back().add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(1);
  }
}

std::optional<IntegerForm> gemm(const QdqGraph& g, const QdqGroup& grp, int64_t) {
  const onnx::NodeProto& n = g.node(grp.node);
  const bool trans_b = int_attribute(n, "transB", 0) != 0;
  if (int_attribute(n, "transA", 0) != 0 || float_attribute(n, "alpha", 1.f) != 1.f) return std::nullopt;
  const QTensor* x = activation(g, grp, 0);
  const QTensor* w = weight(g, grp, 1, trans_b ? 0 : 1);
  if (!x || !w || g.initializer(w->q)->dims_size() != 2) return std::nullopt;
  const bool biased = n.input_size() > 2 && !n.input(2).empty();
  const auto bias = biased ? int32_bias(g, grp, 2, *x, *w) : std::nullopt;
  if (biased && (!bias || float_attribute(n, "beta", 1.f) != 1.f)) return std::nullopt;
  IntegerForm f;
  QTensor wk = *w;  // [K, N]
  if (trans_b) {
    wk.q = w->q + "_transposed";
    f.initializers.push_back(transposed_int8(*g.initializer(w->q), wk.q));
  }
  if (bias) {
    biased_gemm(g, grp, *x, wk, *bias, &f);
    return f;
  }
  f.op = "QLinearMatMul";
  const Names in = cat({triple(*x), triple(wk), out_params(grp)});
  f.nodes.push_back(make_node("QLinearMatMul", quant_name(n), in, grp.out.q));
  return f;
}

// Add, Mul -> com.microsoft QLinearAdd, QLinearMul.
std::optional<IntegerForm> binary(const QdqGraph& g, const QdqGroup& grp, int64_t) {
  const QTensor* a = activation(g, grp, 0);
  const QTensor* b = activation(g, grp, 1);
  if (!a || !b) return std::nullopt;
  const std::string op = "QLinear" + g.node(grp.node).op_type();
  return one_node(g, grp, op, cat({triple(*a), triple(*b), out_params(grp)}), kMicrosoft);
}

// Sigmoid, LeakyRelu, AveragePool, GlobalAveragePool -> com.microsoft
// QLinear<op> (X, X_scale, X_zero_point, Y_scale, Y_zero_point).
std::optional<IntegerForm> unary(const QdqGraph& g, const QdqGroup& grp, int64_t) {
  const QTensor* x = activation(g, grp, 0);
  const onnx::NodeProto& n = g.node(grp.node);
  if (!x || attribute(n, "dilations")) return std::nullopt;  // QLinearAveragePool has no dilations
  return one_node(g, grp, "QLinear" + n.op_type(), cat({triple(*x), out_params(grp)}), kMicrosoft);
}

std::optional<IntegerForm> concat(const QdqGraph& g, const QdqGroup& grp, int64_t) {
  Names in = out_params(grp);
  for (size_t i = 0; i < grp.in.size(); ++i) {
    const QTensor* x = activation(g, grp, i);
    if (!x) return std::nullopt;
    in = cat({in, triple(*x)});
  }
  return one_node(g, grp, "QLinearConcat", in, kMicrosoft);
}

// The op itself on the int8 tensor: exact for ops that only select or move
// values, when the output's scale and zero point are the input's. ONNX
// accepts int8 in MaxPool from opset 12 and in Flatten from opset 9.
std::optional<IntegerForm> on_int8(const QdqGraph& g, const QdqGroup& grp, int64_t opset) {
  static const std::map<std::string, int64_t> since = {
      {"MaxPool", 12}, {"Flatten", 9}, {"Reshape", 5}, {"Transpose", 1}};
  const onnx::NodeProto& n = g.node(grp.node);
  const QTensor* x = activation(g, grp, 0);
  if (!x || opset < since.at(n.op_type())) return std::nullopt;
  for (size_t i = 1; i < grp.in.size(); ++i)
    if (grp.in[i]) return std::nullopt;
  const auto px = g.per_tensor_params(*x), py = g.per_tensor_params(grp.out);
  if (px->scale != py->scale || px->zero_point != py->zero_point ||
      g.initializer(x->zero_point)->data_type() != g.initializer(grp.out.zero_point)->data_type())
    return std::nullopt;
  IntegerForm f;
  f.op = n.op_type();
  f.on_int8 = true;
  f.nodes.push_back(n);
  f.nodes.back().set_input(0, x->q);
  f.nodes.back().set_output(0, grp.out.q);
  return f;
}

using Rule = std::optional<IntegerForm> (*)(const QdqGraph&, const QdqGroup&, int64_t);

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> r = {
      {"Conv", conv},       {"MatMul", matmul},     {"Gemm", gemm},         {"Add", binary},
      {"Mul", binary},      {"Sigmoid", unary},     {"LeakyRelu", unary},   {"AveragePool", unary},
      {"GlobalAveragePool", unary},                 {"Concat", concat},     {"MaxPool", on_int8},
      {"Flatten", on_int8}, {"Reshape", on_int8},   {"Transpose", on_int8}};
  return r;
}

}  // namespace

bool has_integer_form(const std::string& op_type) { return rules().count(op_type) > 0; }

std::optional<IntegerForm> integer_form(const QdqGraph& g, const QdqGroup& group, int64_t opset) {
  const onnx::NodeProto& n = g.node(group.node);
  if (!n.domain().empty() && n.domain() != "ai.onnx") return std::nullopt;
  if (!has_integer_form(n.op_type()) || n.output_size() != 1 || !g.per_tensor_params(group.out)) return std::nullopt;
  return rules().at(n.op_type())(g, group, opset);
}

}  // namespace torq::quant
