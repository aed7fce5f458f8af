// The built-in demo model: a small CNN that exercises the ops the Torq
// executors disagree on (Conv, depthwise Conv, MaxPool, Clip, Sigmoid, Mul,
// Add, GlobalAveragePool, Gemm, Softmax), built in code with seeded
// weights so the quick start needs no file from outside the repository.
#pragma once

#include <cstdint>
#include <string>

namespace torq::sim {

// Serialized ONNX ModelProto (opset 13, input "input" 1x3x64x64 fp32).
std::string build_demo_model(uint64_t seed = 7);

}  // namespace torq::sim
