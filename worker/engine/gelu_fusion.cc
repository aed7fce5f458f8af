#include "worker/engine/gelu_fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "worker/engine/dnnl_util.h"

namespace torq::engine {

namespace {

// The value of a constant fp32 or bf16 scalar (any rank, one element); its
// dtype in *dt.
bool f32_scalar(int v, const std::vector<Tensor>& constants, float* out, DType* dt) {
  if (v < 0) return false;
  const Tensor& t = constants[static_cast<size_t>(v)];
  if (!t.defined() || !t.is_plain() || t.numel() != 1) return false;
  if (t.dtype() == DType::kF32) *out = t.data<float>()[0];
  else if (t.dtype() == DType::kBF16) *out = bf16_to_f32(t.bf16()[0]);
  else return false;
  *dt = t.dtype();
  return true;
}

struct Graph {
  const std::vector<ActNode>& nodes;
  const std::vector<Tensor>& constants;
  const std::vector<bool>& keep;
  std::vector<std::vector<int>> readers;

  // The only reader of v, a running node of type `op` with one output, or -1;
  // v must be neither kept nor constant.
  int sole_reader(int v, const char* op) const {
    if (v < 0 || keep[static_cast<size_t>(v)] || constants[static_cast<size_t>(v)].defined()) return -1;
    const auto& r = readers[static_cast<size_t>(v)];
    if (r.size() != 1) return -1;
    const ActNode& n = nodes[static_cast<size_t>(r.front())];
    if (!n.runs || n.info->op_type() != op || n.out.size() != 1 || n.out[0] < 0) return -1;
    return r.front();
  }
  // For a two-input node reading `v`: its other input (-1 if v is not one of
  // exactly two inputs, or both).
  static int other_input(const ActNode& n, int v) {
    if (n.in.size() != 2 || n.in[0] < 0 || n.in[1] < 0 || n.in[0] == n.in[1]) return -1;
    if (n.in[0] == v) return n.in[1];
    if (n.in[1] == v) return n.in[0];
    return -1;
  }
};

std::optional<ActChain> gelu_at(const Graph& g, int div) {
  const ActNode& d = g.nodes[static_cast<size_t>(div)];
  if (!d.runs || d.info->op_type() != "Div" || d.in.size() != 2 || d.out.size() != 1 || d.in[0] < 0) return {};
  float c = 0, k1 = 0, k2 = 0;
  DType tc = DType::kF32, t1 = DType::kF32, t2 = DType::kF32;
  const int x = d.in[0];
  if (g.constants[static_cast<size_t>(x)].defined() || !f32_scalar(d.in[1], g.constants, &c, &tc)) return {};
  const int erf = g.sole_reader(d.out[0], "Erf");
  if (erf < 0) return {};
  const int add = g.sole_reader(g.nodes[static_cast<size_t>(erf)].out[0], "Add");
  if (add < 0 || !f32_scalar(Graph::other_input(g.nodes[static_cast<size_t>(add)], g.nodes[static_cast<size_t>(erf)].out[0]),
                             g.constants, &k1, &t1))
    return {};
  const int a = g.nodes[static_cast<size_t>(add)].out[0];
  const int mul = g.sole_reader(a, "Mul");
  if (mul < 0 || Graph::other_input(g.nodes[static_cast<size_t>(mul)], a) != x) return {};
  const int m = g.nodes[static_cast<size_t>(mul)].out[0];
  const int half = g.sole_reader(m, "Mul");
  if (half < 0 || !f32_scalar(Graph::other_input(g.nodes[static_cast<size_t>(half)], m), g.constants, &k2, &t2))
    return {};
  // Mixed: an fp32 Div (no bf16 input) would run the fp32 pass while a
  // bf16 k1 or k2 makes its Add or Mul round.
  if (t1 != tc || t2 != tc) return {};
  ActChain ch;
  ch.head = div;
  ch.followers = {erf, add, mul, half};
  ch.act = {ActKind::kGelu, 0, 0, k1, k2};
  // In bf16 the Div computes on bf16 values only where kernels run bf16
  // natively; elsewhere the session hands it fp32 and the fp32 pass would
  // skip the rounding between steps.
  ch.exact_in_bf16 = dnnl_bf16_supported();
  return ch;
}

}  // namespace

std::vector<ActChain> plan_gelu_fusion(const std::vector<ActNode>& nodes, const std::vector<Tensor>& constants,
                                       const std::vector<bool>& keep, const std::vector<ActChain>& taken) {
  Graph g{nodes, constants, keep, std::vector<std::vector<int>>(constants.size())};
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int v : nodes[i].in)
      if (v >= 0) g.readers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
  std::set<int> used;
  for (const ActChain& c : taken) {
    used.insert(c.head);
    used.insert(c.followers.begin(), c.followers.end());
    if (c.norm >= 0) used.insert(c.norm);
  }
  std::vector<ActChain> chains;
  for (size_t h = 0; h < nodes.size(); ++h) {
    auto c = gelu_at(g, static_cast<int>(h));
    if (!c) continue;
    if (used.count(c->head) || std::any_of(c->followers.begin(), c->followers.end(), [&](int f) { return used.count(f) > 0; }))
      continue;
    used.insert(c->head);
    used.insert(c->followers.begin(), c->followers.end());
    chains.push_back(*c);
  }
  return chains;
}

}  // namespace torq::engine
