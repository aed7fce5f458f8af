// Scopes of ONNX graphs: the graph attributes of control-flow nodes (If's
// then_branch and else_branch, Loop's body) are subgraphs. A subgraph may read any value of the
// scopes around it by name (ONNX "outer scope" values), not only its
// declared inputs. The session makes those reads explicit: each node with
// graph attributes gets the outer-scope names they read appended to its
// inputs (after the declared ones, in outer_scope_reads() order), so the
// outer graph orders the node after their producers, keeps them alive
// until it ran, and hands them to its kernel like any other input. The
// kernel runs each subgraph in a nested Session (Session::from_graph) whose
// inputs are the subgraph's declared inputs followed by its own
// outer-scope reads. The pipeline cuts a model into layers by what each
// node reads (node_reads): a control-flow layer's sub-model takes its
// outer-scope reads as inputs, and the layers producing them output them.
#pragma once

#include <string>
#include <vector>

namespace onnx {
class GraphProto;
class NodeProto;
}  // namespace onnx

namespace torq::base {

// The names `g` reads but does not define (by a graph input, an
// initializer or a node output), including those read by subgraphs nested
// in its nodes; sorted, each once.
std::vector<std::string> outer_scope_reads(const onnx::GraphProto& g);
// The union of outer_scope_reads() over the node's graph attributes
// (empty for a node without any); sorted, each once.
std::vector<std::string> outer_scope_reads(const onnx::NodeProto& n);
// Every value the node reads: its declared inputs (omitted ones skipped),
// then outer_scope_reads(n).
std::vector<std::string> node_reads(const onnx::NodeProto& n);

}  // namespace torq::base

namespace torq::engine {
using base::outer_scope_reads;
}  // namespace torq::engine
