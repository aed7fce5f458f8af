// Tensor conversion to and from ONNX TensorProto and NumPy .npy files.
#pragma once

#include <string>

#include "worker/engine/tensor.h"

namespace onnx {
class TensorProto;
}

namespace torq::engine {

// Converts an ONNX tensor (raw_data or typed fields). External data and
// string tensors are Unsupported; inconsistent sizes are InvalidModel.
Tensor tensor_from_proto(const onnx::TensorProto& proto);
// Fills `proto` (dims, data_type, raw_data) from a plain tensor.
void tensor_to_proto(const Tensor& t, onnx::TensorProto* proto, const std::string& name = {});

// Reads a serialized TensorProto file (.pb) or a NumPy file (.npy), chosen
// by extension. Errors (InvalidInput) name the file.
Tensor read_tensor_file(const std::string& path);
// Writes .pb or .npy by extension.
void write_tensor_file(const Tensor& t, const std::string& path);

Tensor read_npy(const std::string& path);
void write_npy(const Tensor& t, const std::string& path);

}  // namespace torq::engine
