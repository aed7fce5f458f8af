// Subgraphs (seed: --subgraph-from A --subgraph-to B): an inclusive range
// of layers (layer_nodes.h) of a model, named by layer id, output name
// or index, extracted as a standalone model for its own torch-mlir import,
// and the file names of its report (torq_gen_config_<model>_subgraph_<a>_<b>,
// a and b being node indices, as the seed names them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace onnx {
class ModelProto;
}

namespace torq::pipeline {

class ImportedModel;

struct LayerRange {
  uint32_t first = 0, last = 0;  // inclusive, layer indices
};

// Resolves `ref` to a layer index: a layer id "<OpType>_<output>", any
// output name of a layer, or a layer index. Throws PipelineError
// "<flag> '<ref>': no such layer in <model>; closest layer ids: ..." (the 5
// closest) when nothing matches.
uint32_t resolve_layer(const ImportedModel& model, const std::string& ref, const std::string& flag);

// Both ends resolved; PipelineError when from > to.
LayerRange resolve_range(const ImportedModel& model, const std::string& from, const std::string& to);

// "<model>_subgraph_<first>_<last>": the name of a subgraph's report files.
std::string subgraph_name(const std::string& model_name, const LayerRange& r);

// The layers of `r` as a standalone model: their nodes (a QDQ layer's Q/DQ
// neighbours included, layer_nodes.h), the initializers and Constant
// values they use (as initializers), inputs = values entering the range,
// outputs = range_outputs() with their inferred types. Its layers are
// exactly the range's layers, in order.
onnx::ModelProto extract_subgraph(const ImportedModel& model, const LayerRange& r);

// The layers of `r` renumbered from 0 (ids and op types kept).
std::vector<LayerInfo> subgraph_layers(const ImportedModel& model, const LayerRange& r);

}  // namespace torq::pipeline
