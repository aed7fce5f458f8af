#include "worker/engine/bias_fusion.h"

#include <set>

namespace torq::engine {

std::vector<ActChain> plan_bias_fusion(const std::vector<ActNode>& nodes, const std::vector<Tensor>& constants,
                                       const std::vector<bool>& keep, const std::vector<ActChain>& taken) {
  std::vector<std::vector<int>> readers(constants.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int v : nodes[i].in)
      if (v >= 0) readers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
  std::set<int> used;
  for (const ActChain& c : taken) {
    used.insert(c.head);
    used.insert(c.followers.begin(), c.followers.end());
    if (c.norm >= 0) used.insert(c.norm);
  }
  std::vector<ActChain> chains;
  for (size_t h = 0; h < nodes.size(); ++h) {
    const ActNode& mm = nodes[h];
    if (!mm.runs || mm.info->op_type() != "MatMul" || mm.out.size() != 1 || mm.out[0] < 0 || used.count(static_cast<int>(h)))
      continue;
    const int y = mm.out[0];
    if (keep[static_cast<size_t>(y)] || constants[static_cast<size_t>(y)].defined() ||
        readers[static_cast<size_t>(y)].size() != 1)
      continue;
    const int f = readers[static_cast<size_t>(y)].front();
    const ActNode& add = nodes[static_cast<size_t>(f)];
    if (!add.runs || add.info->op_type() != "Add" || add.in.size() != 2 || add.out.size() != 1 || used.count(f) ||
        add.in[0] == add.in[1])
      continue;
    const bool first = add.in[1] == y;
    const int bias = first ? add.in[0] : add.in[1];
    if (bias < 0) continue;
    const Tensor& b = constants[static_cast<size_t>(bias)];
    if (!b.defined() || b.dtype() != DType::kF32) continue;
    ActChain c;
    c.head = static_cast<int>(h);
    c.followers = {f};
    c.residual = bias;
    c.residual_first = first;
    used.insert(c.head);
    used.insert(f);
    chains.push_back(c);
  }
  return chains;
}

}  // namespace torq::engine
