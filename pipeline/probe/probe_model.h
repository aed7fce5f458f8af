// A probe point as a single-op ONNX model (opset 17): its data inputs are
// graph inputs (the worker fills them from the job's seed, as for any
// layer), its weights seeded initializers in the file, so a point's
// results depend on its bytes alone (the cache keys on them). fp32 and
// bf16 points are built in fp32 (bf16: converted at import, as discover
// --auto-convert-bf16 does); int8 points in QDQ form (symmetric int8,
// zero point 0: a Q/DQ pair on each data input and weight, an int32 bias,
// a Q/DQ pair on a float output), which layer_nodes makes one layer.
// No tensors here: protobuf bytes, as the import writes them.
#pragma once

#include <string>

#include "pipeline/probe/probe_point.h"

namespace torq::pipeline::probe {

struct BuiltPoint {
  std::string bytes;        // the serialized ModelProto; empty when invalid
  PointFeatures features;   // what an executor's rule sees of its node
  std::string invalid;      // why the parameters make no model (e.g. "groups 2 do not divide 3 channels")
};

BuiltPoint build_point(const ProbePoint& p);
// The features build_point gives, without weight data or shape inference
// (cheap); *invalid as build_point's, but for shape inference's verdict.
PointFeatures point_features(const ProbePoint& p, std::string* invalid);

}  // namespace torq::pipeline::probe
