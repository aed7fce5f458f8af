// Numeric comparison of two tensors (computed in double), as DESIGN §4
// records it: max/mean absolute error, RMSE, max relative error and PCC.
#pragma once

#include <cstdint>

#include "worker/engine/tensor.h"

namespace torq::engine {

struct TensorDiff {
  double max_abs = 0, mean_abs = 0, rmse = 0;
  double max_rel = 0;       // max |e-o| / (|e| + |o| + 1e-6)
  double pcc = 0;           // tt-xla: 1.0 when allclose(1e-2, 1e-2), else centred cosine; NaN if undefined
  double max_ref = 0;       // max |expected|
  int64_t over_tol = 0;     // elements with rel > tol
  int64_t nan_mismatch = 0; // positions where exactly one side is NaN/Inf, or Infs differ
  int64_t size = 0;
};

// Compares `actual` against `expected` (same shape; any numeric dtypes).
// Throws EngineError(kInvalidInput) when the shapes differ.
TensorDiff compare_tensors(const Tensor& actual, const Tensor& expected, double tol = 0.01);

}  // namespace torq::engine
