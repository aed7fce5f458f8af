#include "pipeline/probe/probe_families.h"

#include <algorithm>

#include "pipeline/probe/probe_ops.h"

namespace torq::pipeline::probe {

namespace {

using onnx::TensorProto;

std::string dims_text(const Shape& s) {
  std::string t;
  for (int64_t d : s) t += (t.empty() ? "" : "x") + std::to_string(d);
  return t;
}

// Output extent of a window over `in`: kernel k, stride s, dilation d, pads
// `pad` each side; 0 when the window does not fit.
int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad, bool ceil_mode = false) {
  const int64_t span = in + 2 * pad - d * (k - 1) - 1;
  if (span < 0) return 0;
  return (ceil_mode ? (span + s - 1) / s : span / s) + 1;
}

std::string conv(const Params& p, PointGraph& g, PointFeatures& f) {
  const Shape x = p.activation();
  if (x.size() < 3) return "Conv needs rank >= 3, not " + std::to_string(x.size());
  const int64_t c = x[1], k = p.i("kernel"), s = p.i("stride"), d = p.i("dilation");
  const std::string gs = p.s("groups");
  const int64_t groups = gs == "depthwise" ? c : gs == "half" ? c / 2 : std::stoll(gs);
  if (groups < 1 || c % groups) return "groups " + gs + " do not divide " + std::to_string(c) + " channels";
  const size_t sr = x.size() - 2;
  const int64_t pad = p.s("pad") == "same" ? d * (k - 1) / 2 : 0;
  for (size_t a = 2; a < x.size(); ++a)
    if (window_out(x[a], k, s, d, pad) < 1) return "the kernel does not fit the input " + dims_text(x);
  Shape w{c, c / groups};
  for (size_t a = 0; a < sr; ++a) w.push_back(k);
  const std::string xin = g.input("x", x);
  auto* n = g.node("Conv", {xin, g.weight("w", w, c / groups * k), g.bias("b", c)});
  f.kernel.assign(sr, k);
  f.strides.assign(sr, s);
  f.dilations.assign(sr, d);
  PointGraph::attr(n, "kernel_shape", f.kernel);
  PointGraph::attr(n, "strides", f.strides);
  PointGraph::attr(n, "dilations", f.dilations);
  PointGraph::attr(n, "pads", Shape(2 * sr, pad));
  PointGraph::attr(n, "group", groups);
  f.group_kind = groups == 1 ? "standard" : groups == c ? "depthwise" : "grouped";
  f.input_shape = x;
  g.output();
  return "";
}

std::string pool(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f) {
  const Shape x = p.activation();
  if (x.size() < 3) return op + " needs rank >= 3, not " + std::to_string(x.size());
  const int64_t k = p.i("kernel"), s = p.i("stride"), ceil_mode = p.i("ceil_mode");
  const int64_t pad = p.s("pad") == "same" ? (k - 1) / 2 : 0;
  for (size_t a = 2; a < x.size(); ++a) {
    const int64_t out = window_out(x[a], k, s, 1, pad, ceil_mode);
    if (out < 1) return "the kernel does not fit the input " + dims_text(x);
    // ceil_mode's last window must start inside the input or its left padding.
    if (ceil_mode && (out - 1) * s >= x[a] + pad) return "a pooling window lies entirely in the padding";
  }
  const size_t sr = x.size() - 2;
  auto* n = g.node(op, {g.input("x", x)});
  f.kernel.assign(sr, k);
  f.strides.assign(sr, s);
  PointGraph::attr(n, "kernel_shape", f.kernel);
  PointGraph::attr(n, "strides", f.strides);
  PointGraph::attr(n, "pads", Shape(2 * sr, pad));
  PointGraph::attr(n, "ceil_mode", ceil_mode);
  f.input_shape = x;
  g.output();
  return "";
}

std::string global_pool(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f) {
  const Shape x = p.activation();
  if (x.size() < 3) return op + " needs rank >= 3, not " + std::to_string(x.size());
  g.node(op, {g.input("x", x)});
  f.input_shape = x;
  g.output();
  return "";
}

std::string matmul(const Params& p, PointGraph& g, PointFeatures& f) {
  const int64_t m = p.i("M"), k = p.i("K"), n = p.i("N"), batch = p.i("batch");
  Shape a{m, k}, b{k, n};
  if (batch > 0) {
    a.insert(a.begin(), batch);
    b.insert(b.begin(), batch);
  }
  g.node("MatMul", {g.input("a", a), g.weight("w", b, k)});
  f.input_shape = a;
  g.output();
  return "";
}

std::string gemm(const Params& p, PointGraph& g, PointFeatures& f) {
  const int64_t m = p.i("M"), k = p.i("K"), n = p.i("N"), ta = p.i("transA"), tb = p.i("transB");
  const Shape a = ta ? Shape{k, m} : Shape{m, k};
  std::vector<std::string> in{g.input("a", a), g.weight("w", tb ? Shape{n, k} : Shape{k, n}, k)};
  if (p.i("bias")) in.push_back(g.bias("c", n));
  auto* node = g.node("Gemm", in);
  PointGraph::attr(node, "transA", ta);
  PointGraph::attr(node, "transB", tb);
  f.input_shape = a;
  g.output();
  return "";
}

bool is_comparison(const std::string& op) {
  return op == "Equal" || op == "Greater" || op == "GreaterOrEqual" || op == "Less" || op == "LessOrEqual";
}

std::string binary(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f) {
  const Shape x = p.activation();
  const std::string bc = p.s("broadcast");
  Shape y = x;
  if (bc == "channel") {
    if (x.size() < 2) return "a channel broadcast needs rank >= 2";
    y.assign(x.size(), 1);
    y[x.size() == 2 ? 0 : 1] = x[x.size() == 2 ? 0 : 1];
  } else if (bc == "scalar") {
    y = {1};
  } else if (bc == "row") {
    y = {x.back()};
  } else if (bc == "rank_mismatch") {
    if (x.size() < 2) return "a rank mismatch needs rank >= 2";
    y.erase(y.begin());
  }
  g.node(op, {g.input("a", x), g.input("b", y)});
  f.input_shape = x;
  g.output(!is_comparison(op), TensorProto::BOOL);
  return "";
}

std::string unary(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f) {
  const Shape x = p.activation();
  std::vector<std::string> in{g.input("x", x)};
  if (op == "Clip") {
    in.push_back(g.scalar("lo", -0.5f));
    in.push_back(g.scalar("hi", 0.5f));
  }
  auto* n = g.node(op, in);
  if (op == "Cast") PointGraph::attr(n, "to", static_cast<int64_t>(TensorProto::FLOAT));
  if (op == "Flatten") PointGraph::attr(n, "axis", static_cast<int64_t>(1));
  f.input_shape = x;
  g.output();
  return "";
}

std::string concat(const Params& p, PointGraph& g, PointFeatures& f) {
  const Shape x = p.activation();
  const int64_t r = static_cast<int64_t>(x.size()), axis = p.i("axis"), count = p.i("inputs");
  if (axis < -r || axis >= r) return "axis " + std::to_string(axis) + " is outside rank " + std::to_string(r);
  std::vector<std::string> in;
  for (int64_t i = 0; i < count; ++i) in.push_back(g.input("x" + std::to_string(i), x));
  PointGraph::attr(g.node("Concat", in), "axis", axis);
  f.input_shape = x;
  g.output();
  return "";
}

}  // namespace

std::string build_reduce(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f);
std::string build_normalize(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f);
std::string build_movement(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f);

std::string build_family(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f) {
  const std::string fam = family_of(op)->name;
  if (fam == "conv") return conv(p, g, f);
  if (fam == "pool") return pool(op, p, g, f);
  if (fam == "global_pool") return global_pool(op, p, g, f);
  if (fam == "matmul") return matmul(p, g, f);
  if (fam == "gemm") return gemm(p, g, f);
  if (fam == "binary") return binary(op, p, g, f);
  if (fam == "unary") return unary(op, p, g, f);
  if (fam == "concat") return concat(p, g, f);
  if (fam == "reduce") return build_reduce(op, p, g, f);
  if (fam == "normalize") return build_normalize(op, p, g, f);
  return build_movement(op, p, g, f);
}

}  // namespace torq::pipeline::probe
