#include "worker/engine/act_fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <limits>

#include "worker/engine/dnnl_util.h"

namespace torq::engine {

namespace {

bool exact_bf16(float v) { return std::isinf(v) || round_to_bf16(v, Rounding::kNearestEven) == v; }

// A constant float scalar input, or `def` when omitted; false when the
// input is not a constant float scalar.
bool scalar(const ActNode& n, size_t i, const std::vector<Tensor>& constants, float def, float* v) {
  if (i >= n.in.size() || n.in[i] < 0) {
    *v = def;
    return true;
  }
  const Tensor& t = constants[static_cast<size_t>(n.in[i])];
  if (!t.defined() || !t.is_plain() || t.numel() != 1 || !is_float(t.dtype()) || t.dtype() == DType::kF64) return false;
  *v = static_cast<float>(t.get_as_double(0));
  return true;
}

// The activation of a one-node follower (Relu, Clip, HardSwish).
bool single_act(const ActNode& n, const std::vector<Tensor>& constants, ActChain* c) {
  const std::string& op = n.info->op_type();
  if (op == "Relu") {
    c->act = {ActKind::kRelu, 0, 0};
    c->exact_in_bf16 = true;
    return true;
  }
  if (op == "HardSwish") {
    c->act = {ActKind::kHardSwish, 0, 0};
    return true;
  }
  if (op == "HardSigmoid") {
    const float alpha = n.info->attr_float("alpha", 0.2f), beta = n.info->attr_float("beta", 0.5f);
    if (!std::isfinite(alpha) || !std::isfinite(beta)) return false;
    c->act = {ActKind::kHardSigmoid, 0, 0, alpha, beta};
    return true;
  }
  if (op != "Clip") return false;
  const float inf = std::numeric_limits<float>::infinity();
  float lo = -inf, hi = inf;
  if (n.info->opset() < 11) {
    lo = n.info->attr_float("min", std::numeric_limits<float>::lowest());
    hi = n.info->attr_float("max", std::numeric_limits<float>::max());
  } else if (!scalar(n, 1, constants, -inf, &lo) || !scalar(n, 2, constants, inf, &hi)) {
    return false;
  }
  if (std::isnan(lo) || std::isnan(hi) || lo > hi) return false;
  c->act = {ActKind::kClip, lo, hi};
  c->exact_in_bf16 = exact_bf16(lo) && exact_bf16(hi);
  return true;
}

// Concat (axis 1) -> BatchNormalization (constant parameters) -> Relu,
// each value read only by the next node; `private_to` as in plan_act_fusion.
template <class PrivateTo>
std::optional<ActChain> concat_norm_chain(const std::vector<ActNode>& nodes, int h, const std::vector<Tensor>& constants,
                                          const std::vector<bool>& keep, const std::vector<std::vector<int>>& readers,
                                          const PrivateTo& private_to) {
  const ActNode& head = nodes[static_cast<size_t>(h)];
  if (head.out.size() != 1 || head.out[0] < 0 || head.info->attr_int("axis", 1) != 1) return std::nullopt;
  const int v = head.out[0];
  if (readers[static_cast<size_t>(v)].size() != 1) return std::nullopt;
  const int b = readers[static_cast<size_t>(v)].front();
  const ActNode& bn = nodes[static_cast<size_t>(b)];
  if (!bn.runs || bn.info->op_type() != "BatchNormalization" || bn.in.size() != 5 || bn.in[0] != v ||
      bn.out.size() != 1 || bn.out[0] < 0 || !private_to(v, {b}))
    return std::nullopt;
  for (size_t k = 1; k < 5; ++k)
    if (bn.in[k] < 0 || !constants[static_cast<size_t>(bn.in[k])].defined()) return std::nullopt;
  const int w = bn.out[0];
  if (readers[static_cast<size_t>(w)].size() != 1) return std::nullopt;
  const int r = readers[static_cast<size_t>(w)].front();
  const ActNode& relu = nodes[static_cast<size_t>(r)];
  if (!relu.runs || relu.info->op_type() != "Relu" || relu.in.size() != 1 || relu.in[0] != w ||
      relu.out.size() != 1 || relu.out[0] < 0 || !private_to(w, {r}))
    return std::nullopt;
  ActChain c;
  c.head = h;
  c.followers = {b, r};
  c.act = {ActKind::kRelu, 0, 0};
  // With native bf16 the Concat declines where it cannot match the unfused
  // bf16 numbers. Without (the session then feeds it f32), its f32 path has
  // the jit's scale * (1 / sqrt) where the unfused ncsp BatchNormalization
  // divides, and turns -0 into +0: no fusion in bf16 there.
  c.exact_in_bf16 = dnnl_bf16_supported();
  c.norm = b;
  const int u = relu.out[0];
  c.norm_to_convs = !keep[static_cast<size_t>(u)] && !readers[static_cast<size_t>(u)].empty();
  for (int k : readers[static_cast<size_t>(u)]) {
    const ActNode& rn = nodes[static_cast<size_t>(k)];
    c.norm_to_convs = c.norm_to_convs && rn.runs && rn.info->op_type() == "Conv";
  }
  return c;
}

// Conv (head h) -> Add (node f, the Conv's output plus a value computed
// before the Conv) -> optionally Relu; `private_to` as in plan_act_fusion.
template <class PrivateTo>
std::optional<ActChain> residual_chain(const std::vector<ActNode>& nodes, int h, int f,
                                       const std::vector<std::vector<int>>& readers, const std::vector<int>& producer,
                                       const PrivateTo& private_to) {
  const int v = nodes[static_cast<size_t>(h)].out[0];
  const ActNode& add = nodes[static_cast<size_t>(f)];
  // Opset 7 on: numpy broadcasting, no legacy broadcast/axis attributes.
  if (!add.runs || add.info->op_type() != "Add" || add.info->opset() < 7 || add.in.size() != 2 ||
      add.out.size() != 1 || add.out[0] < 0 || !private_to(v, {f}))
    return std::nullopt;
  const bool value_first = add.in[1] == v;
  const int r = value_first ? add.in[0] : add.in[1];
  if (r < 0 || r == v || (!value_first && add.in[0] != v)) return std::nullopt;
  // The Conv runs where it stands: the value must exist by then.
  if (producer[static_cast<size_t>(r)] >= h) return std::nullopt;
  ActChain c;
  c.head = h;
  c.followers = {f};
  c.residual = r;
  c.residual_first = value_first;
  const int a = add.out[0];
  if (readers[static_cast<size_t>(a)].size() == 1) {
    const int k = readers[static_cast<size_t>(a)].front();
    const ActNode& relu = nodes[static_cast<size_t>(k)];
    if (relu.runs && relu.info->op_type() == "Relu" && relu.in.size() == 1 && relu.in[0] == a &&
        relu.out.size() == 1 && relu.out[0] >= 0 && private_to(a, {k})) {
      c.followers.push_back(k);
      c.residual_relu = true;
    }
  }
  return c;
}

}  // namespace

std::vector<ActChain> plan_act_fusion(const std::vector<ActNode>& nodes, const std::vector<Tensor>& constants,
                                      const std::vector<bool>& keep) {
  std::vector<std::vector<int>> readers(constants.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int v : nodes[i].in)
      if (v >= 0) readers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
  // Value v may vanish: not kept, and read exactly by `want` (as a set).
  const auto private_to = [&](int v, std::vector<int> want) {
    if (v < 0 || keep[static_cast<size_t>(v)] || constants[static_cast<size_t>(v)].defined()) return false;
    std::vector<int> r = readers[static_cast<size_t>(v)];
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
    std::sort(want.begin(), want.end());
    return r == want;
  };
  // The node that writes each value (-1: a graph input or a constant).
  std::vector<int> producer(constants.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int v : nodes[i].out)
      if (v >= 0) producer[static_cast<size_t>(v)] = static_cast<int>(i);
  std::vector<ActChain> chains;
  for (size_t h = 0; h < nodes.size(); ++h) {
    const ActNode& head = nodes[h];
    if (head.runs && head.fuses && head.info->op_type() == "Concat") {
      if (auto c = concat_norm_chain(nodes, static_cast<int>(h), constants, keep, readers, private_to))
        chains.push_back(*c);
      continue;
    }
    if (!head.runs || !head.fuses || head.info->op_type() != "Conv" || head.out.size() != 1) continue;
    const int v = head.out[0];
    if (v < 0 || readers[static_cast<size_t>(v)].empty()) continue;
    const int f = readers[static_cast<size_t>(v)].front();
    const ActNode& fn = nodes[static_cast<size_t>(f)];
    if (auto c = residual_chain(nodes, static_cast<int>(h), f, readers, producer, private_to)) {
      chains.push_back(*c);
      continue;
    }
    if (!fn.runs || fn.in.empty() || fn.in[0] != v || fn.out.size() != 1 || fn.out[0] < 0) continue;
    ActChain c;
    c.head = static_cast<int>(h);
    if (private_to(v, {f}) && single_act(fn, constants, &c)) {
      c.followers = {f};
      chains.push_back(c);
      continue;
    }
    // Swish: s = Sigmoid(v); Mul(v, s) or Mul(s, v).
    if (fn.info->op_type() != "Sigmoid" || fn.in.size() != 1) continue;
    const int s = fn.out[0];
    if (readers[static_cast<size_t>(s)].size() != 1) continue;
    const int m = readers[static_cast<size_t>(s)].front();
    const ActNode& mn = nodes[static_cast<size_t>(m)];
    const bool mul_vs = mn.in.size() == 2 && ((mn.in[0] == v && mn.in[1] == s) || (mn.in[0] == s && mn.in[1] == v));
    if (!mn.runs || mn.info->op_type() != "Mul" || !mul_vs || mn.out.size() != 1 || mn.out[0] < 0) continue;
    if (!private_to(v, {f, m}) || !private_to(s, {m})) continue;
    c.act = {ActKind::kSwish, 0, 0};
    c.followers = {f, m};
    chains.push_back(c);
  }
  return chains;
}

}  // namespace torq::engine
