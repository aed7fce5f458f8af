// Calibration: the range of every float activation of a model over seeded
// inputs drawn from the distribution discovery feeds its layers (the
// session's seeded uniform [-1, 1] model input, as in the job runner's
// activation run), on the fp32 host engine.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "worker/quant/quant_params.h"

namespace onnx {
class ModelProto;
}

namespace torq::quant {

// The calibration seeds: held out from discovery's own input (seed), so the
// quantized model is tested on an input it was not calibrated on.
uint64_t calibration_seed(uint64_t seed, int k);

// Ranges of every non-constant float value (graph inputs and node outputs)
// over num_calib runs: its finite elements and 0 (an activation's int8
// range holds 0 exactly, activation_params; a value whose first element was
// NaN or inf once kept that bound for good). On `threads` threads (0: the
// OpenMP default). Throws engine errors (unsupported op, bad model).
std::map<std::string, Range> calibrate(const onnx::ModelProto& model, int num_calib, uint64_t seed, int threads = 0);

}  // namespace torq::quant
