// What an ONNX model must keep before anything reads it (issue 30): ONNX's
// shape inference divides by a Conv's strides (a zero is a SIGFPE), an
// initializer whose bytes do not fill its shape or a 2^62-element input
// crash or stall the engine in every worker, and external data points at
// any file (/dev/zero). Checked once, on import, before the checker and
// shape inference: one error naming the tensor or node and the field.
#pragma once

#include <cstdint>

namespace onnx {
class ModelProto;
}

namespace torq::pipeline {

// Largest tensor an imported model may declare or hold: 2^31 elements
// (8 GiB of fp32), per initializer, per graph input and per Constant.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 31;
// Most dimensions a tensor may have (ONNX's own kernels stop at 8).
inline constexpr int kMaxTensorRank = 16;

// Throws PipelineError (no file name: the caller adds it) when the model
// (its graph and every subgraph of an If, Loop or Scan):
//  - has an initializer or Constant tensor with a negative dimension, more
//    than kMaxTensorElements elements or kMaxTensorRank dimensions, data
//    stored outside the file (external data), or data that does not fill
//    its shape (raw bytes or typed values of another count);
//  - declares a graph input with a negative dimension or more than
//    kMaxTensorElements elements;
//  - has a convolution or pooling node whose strides, dilations or
//    kernel_shape hold a value below 1, or a group below 1.
void check_model_limits(const onnx::ModelProto& model);

}  // namespace torq::pipeline
