// Recommendation (DESIGN.md §4): which executor a layer should run on, and
// whether a layer is a critical failure. Pure functions over LayerReport;
// no I/O, thread-safe.
#pragma once

#include <optional>

#include "pipeline/core/types.h"

namespace torq::pipeline {

// Returns the executor recommended for `l` from its recorded results, or
// nullopt when no executor produced an output (every tested executor is
// `error`, or nothing was tested).
//
// by_timing == false: the first `success` in priority order (nss, css, host),
// else the first `difference` in priority order.
// by_timing == true: the fastest `success` (smallest runtime_ms), else the
// fastest `difference`; ties go to the higher-priority executor. When any
// candidate of the chosen status lacks timing (runtime_ms < 0) the choice
// falls back to priority order for that status (the seed tool returned none
// there).
std::optional<Executor> recommend(const LayerReport& l, bool by_timing);

// True when at least one executor was tested for `l` and every tested
// executor is `error`: the layer cannot run anywhere.
bool is_critical_failure(const LayerReport& l);

}  // namespace torq::pipeline
