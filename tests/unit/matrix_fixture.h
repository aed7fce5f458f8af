// Test helpers for the matrix tests: a temporary directory (temp_dir.h) to
// write spec and config files into, and the message of
// the PipelineError a call throws.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "pipeline/core/types.h"
#include "tests/unit/temp_dir.h"

namespace torq::matrix_test {

using TempDir = torq::test::TempDir;

// The message of the PipelineError `f` throws; "no error" when it returns.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const pipeline::PipelineError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace torq::matrix_test
