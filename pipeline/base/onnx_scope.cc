#include "pipeline/base/onnx_scope.h"

#include <set>

#include <onnx/onnx_pb.h>

namespace torq::base {

namespace {

void add_node_reads(const onnx::NodeProto& n, std::set<std::string>& reads) {
  for (const auto& a : n.attribute()) {
    if (a.has_g())
      for (auto& r : outer_scope_reads(a.g())) reads.insert(std::move(r));
    for (const auto& g : a.graphs())
      for (auto& r : outer_scope_reads(g)) reads.insert(std::move(r));
  }
}

}  // namespace

std::vector<std::string> outer_scope_reads(const onnx::GraphProto& g) {
  std::set<std::string> defined, reads;
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& i : g.initializer()) defined.insert(i.name());
  for (const auto& i : g.sparse_initializer()) defined.insert(i.values().name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) defined.insert(o);
  for (const auto& n : g.node()) {
    for (const auto& i : n.input())
      if (!i.empty()) reads.insert(i);
    add_node_reads(n, reads);
  }
  for (const auto& o : g.output()) reads.insert(o.name());
  std::vector<std::string> out;
  for (const auto& r : reads)
    if (!defined.count(r)) out.push_back(r);
  return out;
}

std::vector<std::string> outer_scope_reads(const onnx::NodeProto& n) {
  std::set<std::string> reads;
  add_node_reads(n, reads);
  return {reads.begin(), reads.end()};
}

std::vector<std::string> node_reads(const onnx::NodeProto& n) {
  std::vector<std::string> out;
  for (const auto& i : n.input())
    if (!i.empty()) out.push_back(i);
  for (auto& r : outer_scope_reads(n)) out.push_back(std::move(r));
  return out;
}

}  // namespace torq::base
