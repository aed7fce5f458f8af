// Comparison and status (DESIGN §4): per output tensor, computed in double
// (the tensor diff itself is the worker's: worker/runner/compare_outputs.h).
// A float output succeeds when count(rel > fp_max_tol) / size <=
// allowed_wrong, with rel = |e-o| / (|e|+|o|+1e-6); an integer or bool
// output when every |e-o| <= 1. NaN/Inf position mismatches, and dtype or
// shape mismatches, are differences.
#pragma once

#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace torq::pipeline {

// True when the output passes the rule above.
bool output_ok(const OutputDiff& d, const Tolerance& tol);
// success or difference for a set of compared outputs; fills the result's
// aggregate metrics (worst max_abs / max_rel, lowest PCC).
void judge(ExecResult* r, const Tolerance& tol);

}  // namespace torq::pipeline
