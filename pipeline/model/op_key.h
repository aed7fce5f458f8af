// Op keys: what makes one layer the same op as another for the op-support
// matrix (op_matrix.h), written for people: the compute node's op type, its
// attributes with their values (name order; tensor and graph attributes as
// <tensor> / <graph>), and the dtype and shape of each input, e.g.
//   Conv(group=1, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]) bf16[1,3,64,64], bf16[16,3,3,3], bf16[16]
// A layer of a QDQ model (layer_nodes.h) is its compute op on the quantized
// values: "QDQ " before the op, and an input a DequantizeLinear of the layer
// makes is described by that DequantizeLinear's input (e.g. i8[16,3,3,3]).
// An absent optional input is "-", an unknown type "?". Graph metadata
// only: no tensor values.
#pragma once

#include <string>
#include <vector>

#include "pipeline/model/layer_nodes.h"

namespace onnx {
class ModelProto;
}

namespace torq::pipeline {

class ImportedModel;

// The op key of one layer of `model`.
std::string op_key(const onnx::ModelProto& model, const LayerNodes& layer);

// The op key of every layer of an imported model, by layer index.
std::vector<std::string> layer_op_keys(const ImportedModel& model);

}  // namespace torq::pipeline
