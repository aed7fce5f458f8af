// Runs ONNX backend-test cases (model.onnx + test_data_set_*/{input,output}_*.pb)
// through the engine and compares with the expected outputs the way the ONNX
// backend runner does (dtype and shape equal, allclose with rtol/atol).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "pipeline/base/dtype.h"

namespace torq::sim {

enum class CaseOutcome { kPass, kFail, kUnsupported };

struct CaseResult {
  std::string name;
  CaseOutcome outcome = CaseOutcome::kPass;
  std::string detail;  // failure or unsupported reason; max error on pass
};

struct ConformanceOptions {
  std::vector<std::string> filters;  // substrings of the case name; empty = all
  double rtol = 1e-3, atol = 1e-7;
  std::string profile = "host";
  int threads = 0;
  // ONNX 1.12's reference data rounds fp32 -> bfloat16 by truncation
  // (test_cast_FLOAT_to_BFLOAT16 keeps the upper 16 bits).
  torq::engine::Rounding rounding = torq::engine::Rounding::kTruncate;
};

// Case directories (holding model.onnx) under each root, sorted by name.
std::vector<std::string> find_cases(const std::vector<std::string>& roots);
CaseResult run_case(const std::string& dir, const ConformanceOptions& opts);
// Runs all cases, prints one line per case and the closing
// "N passed, N failed, N skipped" line; returns the number failed.
int run_conformance(const std::vector<std::string>& roots, const ConformanceOptions& opts,
                    std::ostream& out);

}  // namespace torq::sim
