// A toolchain file's time budgets (DESIGN §7): each step its own, as the
// real tool gives them (import 300 s, compile 300 s, run 240 s by default),
// and a job the sum. Shared by the toolchain backend, which enforces them,
// and the coordinators, which give toolchain jobs that budget by default.
#pragma once

#include <cstdint>
#include <string>

namespace torq::base {

inline constexpr double kImportTimeoutS = 300, kCompileTimeoutS = 300, kRunTimeoutS = 240;

// import + compile + run x runs seconds, + 1 s for staging, in ms.
uint32_t job_budget_ms(double import_s, double compile_s, double run_s, uint32_t runs);

// The budget of the toolchain file at `path`: its steps' `timeout_s` (the
// defaults above where absent). Reads those keys only (the worker
// validates the whole file); throws std::runtime_error when the file
// cannot be read or is not YAML.
uint32_t toolchain_job_budget_ms(const std::string& path, uint32_t runs);

}  // namespace torq::base
