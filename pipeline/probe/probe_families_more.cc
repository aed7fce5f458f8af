// The reduce, normalize and movement families (probe_families.h).
#include <numeric>

#include "pipeline/probe/probe_families.h"

namespace torq::pipeline::probe {

namespace {

// The axes a reduce point names, for a tensor of rank r; empty: none fit.
std::vector<int64_t> reduce_axes(const std::string& which, int64_t r) {
  if (which == "hw") {
    std::vector<int64_t> a;
    for (int64_t i = 2; i < r; ++i) a.push_back(i);
    return a;
  }
  if (which == "c") return r >= 2 ? std::vector<int64_t>{1} : std::vector<int64_t>{};
  if (which == "last") return {r - 1};
  std::vector<int64_t> a(static_cast<size_t>(r));
  std::iota(a.begin(), a.end(), 0);
  return a;
}

std::string transpose(const Params& p, PointGraph& g, const Shape& x) {
  const int64_t r = static_cast<int64_t>(x.size());
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  if (p.s("perm") == "reverse") {
    std::reverse(perm.begin(), perm.end());
  } else {  // nhwc: the channel axis (1) moved last
    if (r < 3) return "an nhwc permutation needs rank >= 3";
    perm.erase(perm.begin() + 1);
    perm.push_back(1);
  }
  PointGraph::attr(g.node("Transpose", {g.input("x", x)}), "perm", perm);
  return "";
}

std::string reshape(const Params& p, PointGraph& g, const Shape& x) {
  int64_t n = 1;
  for (int64_t d : x) n *= d;
  std::vector<int64_t> to{1, n};
  if (p.s("to") == "split") {
    if (x.size() < 2 || x[x.size() == 2 ? 0 : 1] % 2) return "a split reshape needs an even channel count";
    to = {2, n / 2};
  }
  g.node("Reshape", {g.input("x", x), g.ints("shape", to)});
  return "";
}

std::string gather(const Params& p, PointGraph& g, const Shape& x, PointFeatures& f) {
  const int64_t r = static_cast<int64_t>(x.size());
  const std::string which = p.s("axis");
  const int64_t axis = which == "first" ? 0 : which == "last" ? r - 1 : 1;
  if (axis >= r) return "axis " + which + " is outside rank " + std::to_string(r);
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < p.i("indices"); ++i) idx.push_back((i * 7 + 3) % x[static_cast<size_t>(axis)]);
  PointGraph::attr(g.node("Gather", {g.input("x", x), g.ints("indices", idx)}), "axis", axis);
  f.input_shape = x;
  return "";
}

std::string resize(const Params& p, PointGraph& g, const Shape& x) {
  if (x.size() < 3) return "Resize of the spatial axes needs rank >= 3";
  const double s = std::stod(p.s("scale"));
  std::vector<int64_t> sizes(x.begin(), x.end());
  for (size_t i = 2; i < x.size(); ++i) sizes[i] = static_cast<int64_t>(static_cast<double>(x[i]) * s);
  for (int64_t d : sizes)
    if (d < 1) return "scale " + p.s("scale") + " leaves no output";
  auto* n = g.node("Resize", {g.input("x", x), "", "", g.ints("sizes", sizes)});
  auto* a = n->add_attribute();
  a->set_name("mode");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(p.s("mode"));
  return "";
}

}  // namespace

std::string build_reduce(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f) {
  const Shape x = p.activation();
  const int64_t r = static_cast<int64_t>(x.size());
  const std::vector<int64_t> axes = reduce_axes(p.s("axes"), r);
  if (axes.empty()) return "axes " + p.s("axes") + " do not fit rank " + std::to_string(r);
  const std::string xin = g.input("x", x);
  onnx::NodeProto* n = nullptr;
  if (op == "ArgMax") {
    if (axes.size() != 1) return "ArgMax takes one axis, not " + p.s("axes");
    n = g.node(op, {xin});
    PointGraph::attr(n, "axis", axes[0]);
  } else if (op == "ReduceSum") {  // axes as an input since opset 13
    n = g.node(op, {xin, g.ints("axes", axes)});
  } else {
    n = g.node(op, {xin});
    PointGraph::attr(n, "axes", axes);
  }
  PointGraph::attr(n, "keepdims", p.i("keepdims"));
  f.input_shape = x;
  g.output(op != "ArgMax", onnx::TensorProto::INT64);
  return "";
}

std::string build_normalize(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f) {
  const Shape x = p.activation();
  const int64_t r = static_cast<int64_t>(x.size());
  // The channel axis: 1, or 0 of a rank-2 [channels, spatial] (as the
  // binary family broadcasts it); a rank-1 tensor has none.
  const int64_t axis = p.s("axis") == "last" ? r - 1 : r == 2 ? 0 : 1;
  if (axis >= r || (p.s("axis") == "channel" && r < 2)) return "a rank-1 tensor has no channel axis";
  std::vector<std::string> in{g.input("x", x)};
  if (op == "LayerNormalization") {
    const Shape norm(x.begin() + axis, x.end());
    in.push_back(g.weight("scale", norm, 1));
    in.push_back(g.weight("bias", norm, 100));
  }
  auto* n = g.node(op, in);
  PointGraph::attr(n, "axis", axis);
  f.input_shape = x;
  g.output();
  return "";
}

std::string build_movement(const std::string& op, const Params& p, PointGraph& g, PointFeatures& f) {
  const Shape x = p.activation();
  f.input_shape = x;
  std::string why;
  if (op == "Transpose") why = transpose(p, g, x);
  else if (op == "Reshape") why = reshape(p, g, x);
  else if (op == "Gather") why = gather(p, g, x, f);
  else if (op == "Resize") why = resize(p, g, x);
  else {  // Expand: a channel vector or a scalar to the activation's shape
    Shape from(x.size(), 1);
    if (p.s("from") == "channel" && x.size() >= 2) from[x.size() == 2 ? 0 : 1] = x[x.size() == 2 ? 0 : 1];
    f.input_shape = from;
    g.node("Expand", {g.input("x", from), g.ints("shape", x)});
  }
  if (why.empty()) g.output();
  return why;
}

}  // namespace torq::pipeline::probe
