#include "worker/engine/quant_fusion.h"

#include <algorithm>

namespace torq::engine {

namespace {

bool is_q(const GraphNode& n) { return n.op_type == "QuantizeLinear"; }
bool is_dq(const GraphNode& n) { return n.op_type == "DequantizeLinear"; }
bool is_compute(const GraphNode& n) { return !is_q(n) && !is_dq(n); }

// Who writes and who reads each value.
struct Index {
  const std::vector<GraphNode>& nodes;
  std::vector<int> producer;
  std::vector<std::vector<int>> readers;

  Index(const std::vector<GraphNode>& ns, size_t num_values)
      : nodes(ns), producer(num_values, -1), readers(num_values) {
    for (size_t i = 0; i < ns.size(); ++i) {
      for (int v : ns[i].out)
        if (v >= 0) producer[static_cast<size_t>(v)] = static_cast<int>(i);
      for (int v : ns[i].in)
        if (v >= 0) readers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
    }
  }
  // The node writing input 0 of node i, or -1.
  int input0_producer(size_t i) const {
    const auto& in = nodes[i].in;
    return in.empty() || in[0] < 0 ? -1 : producer[static_cast<size_t>(in[0])];
  }
  const std::vector<int>& readers_of_output0(size_t i) const {
    static const std::vector<int> none;
    const auto& out = nodes[i].out;
    return out.empty() || out[0] < 0 ? none : readers[static_cast<size_t>(out[0])];
  }
};

void mark_quantized(const Index& g, QuantFusion& f) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const int p = g.input0_producer(i);
    if (is_compute(g.nodes[i]) && p >= 0 && is_dq(g.nodes[static_cast<size_t>(p)]))
      f.roles[i] = QuantRole::kQuantized;
  }
}

// DQ feeding a quantized node; Q reading a quantized node's output.
void mark_kernel_qdq(const Index& g, QuantFusion& f) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& n = g.nodes[i];
    const auto& readers = g.readers_of_output0(i);
    const bool feeds_quantized = std::any_of(readers.begin(), readers.end(), [&](int r) {
      return f.roles[static_cast<size_t>(r)] == QuantRole::kQuantized;
    });
    if (is_dq(n) && feeds_quantized) {
      f.roles[i] = QuantRole::kFused;
      f.dequantized_from[static_cast<size_t>(n.out[0])] = n.in[0];
      f.keep_fp32[static_cast<size_t>(n.out[0])] = true;
    }
    const int p = g.input0_producer(i);
    if (is_q(n) && p >= 0 && f.roles[static_cast<size_t>(p)] == QuantRole::kQuantized) {
      f.roles[i] = QuantRole::kFused;
      int& by = f.quantized_by[static_cast<size_t>(n.in[0])];
      if (by < 0) by = static_cast<int>(i);
      f.keep_fp32[static_cast<size_t>(n.in[0])] = true;
    }
  }
}

// A Q/DQ with a compute neighbour (QOperator models: the Q before a
// QLinearConv, the requantizing Q after MatMulInteger -> Add, the DQ after
// a QLinear op); a graph input's Q read only by fused DQs; a graph output's
// DQ reading a fused Q.
void mark_boundary_qdq(const Index& g, QuantFusion& f) {
  auto fused = [&](int node) { return node >= 0 && f.roles[static_cast<size_t>(node)] == QuantRole::kFused; };
  auto compute = [&](int node) { return node >= 0 && is_compute(g.nodes[static_cast<size_t>(node)]); };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (is_compute(g.nodes[i])) continue;
    const auto& readers = g.readers_of_output0(i);
    if (compute(g.input0_producer(i)) || std::any_of(readers.begin(), readers.end(), compute))
      f.roles[i] = QuantRole::kFused;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& readers = g.readers_of_output0(i);
    if (is_q(g.nodes[i]) && !readers.empty() && std::all_of(readers.begin(), readers.end(), fused))
      f.roles[i] = QuantRole::kFused;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const int p = g.input0_producer(i);
    if (is_dq(g.nodes[i]) && fused(p) && is_q(g.nodes[static_cast<size_t>(p)])) f.roles[i] = QuantRole::kFused;
  }
}

}  // namespace

QuantFusion plan_quant_fusion(const std::vector<GraphNode>& nodes, size_t num_values) {
  QuantFusion f;
  f.roles.assign(nodes.size(), QuantRole::kPlain);
  f.dequantized_from.assign(num_values, -1);
  f.quantized_by.assign(num_values, -1);
  f.keep_fp32.assign(num_values, false);
  const Index g(nodes, num_values);
  mark_quantized(g, f);
  mark_kernel_qdq(g, f);
  mark_boundary_qdq(g, f);
  return f;
}

}  // namespace torq::engine
