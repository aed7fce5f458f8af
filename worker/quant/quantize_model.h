// `torq-gen-config quantize`: calibrate (calibrate.h), rewrite to QDQ
// (qdq_rewrite.h) and, for --quant-format qoperator, on to QOperator
// (qoperator_rewrite.h), and measure what the quantization itself costs, per
// tensor and at the graph outputs, on discovery's own seeded input (held out
// from calibration) — as the bf16 conversion reports its error.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/model/model_import.h"
#include "worker/quant/qdq_rewrite.h"
#include "worker/quant/qoperator_rewrite.h"

namespace torq::quant {

struct QuantizeOptions {
  std::string model;
  std::string output;               // default: <output_dir>/<name>_quant.onnx
  std::string output_dir = ".";
  bool per_channel = false;
  std::string format = "qdq";       // qdq | qoperator
  int num_calib = 16;
  uint64_t seed = 0;
  // Threads of the calibration and measurement runs (0: the OpenMP default,
  // every core). One is cheaper in CPU (no threads spinning at OpenMP's
  // barriers) where other processes already keep every core busy: a matrix
  // run quantizes beside its workers (coordinator/matrix/quantized_variant).
  int threads = 0;
  // Run both models on discovery's input (seed) to report the quantization
  // error (QuantizeReport::errors, output_*). Off for a caller that measures
  // the quantized model itself: a matrix run's int8 tests compare it with
  // its fp32 original, and the two full runs holding every value were more
  // than half of a quantization's CPU (issue 32).
  bool measure = true;
};

struct QuantizeReport {
  QdqResult qdq;
  std::optional<QOperatorResult> qoperator;       // --quant-format qoperator
  // The model written: the QOperator model when there is one, else the QDQ one.
  const onnx::ModelProto& model() const { return qoperator ? qoperator->model : qdq.model; }
  // Measured only with QuantizeOptions::measure:
  std::vector<pipeline::ConversionError> errors;  // per quantized tensor, worst rmse first
  double output_pcc = 0;      // graph outputs, quantized vs fp32, pooled
  double output_max_abs = 0;
};

// Throws std::invalid_argument (bad options, already quantized) and engine
// or pipeline errors.
QuantizeReport quantize_model(const onnx::ModelProto& fp32, const QuantizeOptions& o);

// The command: exit 0, or 2 with "error: ..." on err for bad input.
int quantize_command(const QuantizeOptions& o, std::ostream& out, std::ostream& err);

}  // namespace torq::quant
