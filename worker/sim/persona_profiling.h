// The stand-in personas' profiling CSVs (worker/sim/personas.h), made from
// the engine's cost model in the columns of the real tools (DESIGN §5):
// the compile's `taskId, elapsed_time(us), timestamp(us), event, location,
// bytes` (events DMA In, Slice <n>, CSS, DMA Out) and the runtime's
// `dispatch_name,invocation_id,action_id,timestamp_us,event`
// (<TYPE>_BEGIN / <TYPE>_END). Writers throw std::runtime_error naming the
// file when it cannot be written.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "pipeline/core/types.h"
#include "worker/engine/session.h"

namespace torq::sim {

// One profiled task of a layer: its DMA in, its compute, its DMA out.
struct Task {
  std::string event, location;
  double us = 0;
  uint64_t bytes = 0;
};

// Node name -> its location as the compiler prints it, loc("IN.mlir":L:C)
// (the i-th non-Constant node is the i-th top-level operator of the import).
using Locations = std::map<std::string, std::string>;

// The tasks of a run's nodes under profile p on executor e (each node's
// location from locs when given, else its name).
std::vector<Task> tasks_of(const engine::RunStats& st, const engine::ExecutorProfile& p, pipeline::Executor e,
                           const Locations* locs = nullptr);
Locations locations_of(const std::string& mlir_path, const std::string& mlir_text, const onnx::ModelProto& m);
// The compiler's ProfilingPass CSV (--torq-dump-profiling).
void write_compile_profile(const std::string& path, const std::vector<Task>& tasks);
// The runtime's TorqEventLog CSV (--torq_profile_host).
void write_host_profile(const std::string& path, const std::vector<Task>& tasks);

}  // namespace torq::sim
