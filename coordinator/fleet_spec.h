// The minimal fleet spec of `torq-coordinator --spec FILE` (DESIGN.md §8
// subset): which models to discover, on which executors and target, with
// which options. Parsed once into FleetSpec; unknown or duplicate keys, bad
// values and type errors are PipelineErrors "file:line:col: message" (with
// a "did you mean" hint for misspelt keys and values).
//
//   models: [models/a.onnx, models/b.onnx]   # relative to the spec's directory
//   executors: [nss, css, host]              # optional, priority order
//   target: sim                              # optional: workers must serve it
//   options:                                 # optional, each key optional
//     auto_convert_bf16: false
//     dedup: false
//     skip_mode: false
//     timing_runs: 1
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/types.h"

namespace torq::coordinator {

struct FleetSpec {
  std::vector<std::string> models;  // paths, resolved against the spec's directory
  std::vector<pipeline::Executor> executors{pipeline::Executor::kNss, pipeline::Executor::kCss,
                                            pipeline::Executor::kHost};
  std::string target = "sim";
  bool auto_convert_bf16 = false;
  bool dedup = false;
  bool skip_mode = false;
  uint32_t timing_runs = 1;
};

// Parses spec `text` read from `path` (used in messages and to resolve
// relative model paths).
FleetSpec parse_fleet_spec(const std::string& text, const std::string& path);
// Reads and parses the spec at `path`; PipelineError when unreadable.
FleetSpec load_fleet_spec(const std::string& path);

}  // namespace torq::coordinator
