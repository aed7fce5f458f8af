// The sim backend's profiles: from the per-layer costs of the executor
// profile's cost model, the two CSVs the real toolchain writes, in its
// columns (DESIGN §5 "Profiling"):
//   compile-time trace  taskId,elapsed_time(us),timestamp(us),event,location,bytes
//   runtime host profile dispatch_name,invocation_id,action_id,timestamp_us,event
// Times are microseconds with three decimals (exact nanoseconds). Pure
// functions of their arguments: deterministic (no clock), thread-safe.
//
// The layers run one after the other, each as one runtime dispatch
// (action_id = its index, invocation_id 0, dispatch_name = its name) whose
// <TYPE>_BEGIN is where the previous layer ended and whose <TYPE>_END is
// where its last task ends; the executor's dispatch_overhead_cycles open
// each dispatch with no device task (the overview's idle time).
//
// nss (TYPE NSS): per layer `DMA In` (input_bytes / dma_bytes_per_cycle),
//   then `Slice 0` .. `Slice <slices-1>` (compute cycles as the cost model
//   counts them, CostModel::compute_cycles: MACs / (MAC rate * slices),
//   the integer rate for integer MACs, else output elements /
//   eltwise_per_cycle; the slices share the work, so each runs
//   that long), then `DMA Out` (output_bytes / dma_bytes_per_cycle), double
//   buffered in two halves: compute starts once half the input is in and
//   its second half ends no earlier than half a compute after the input;
//   DMA Out starts once half the compute is done and ends no earlier than
//   half a DMA Out after the compute. So each layer has 2 + slices tasks.
// css (TYPE CSS): per layer one `CSS` task lasting max(compute, (input +
//   output bytes) / dma_bytes_per_cycle) cycles with the css cost model.
// host (TYPE HOST): no device task; the HOST span itself is the work,
//   cost.cycles long (LayerCost::cycles as cost_of computed it).
// Every layer has exactly two runtime rows (BEGIN, END); task ids are
// DI<i> / DO<i> / S<i>_<n> / CSS<i>; location is the layer's location, else
// its name; bytes is the DMA's bytes (0 for compute).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "worker/engine/profile.h"

namespace torq::engine {

enum class TraceExecutor { kNss, kCss, kHost };
// "nss" | "css" | "host"; nullopt for anything else.
std::optional<TraceExecutor> trace_executor_from_name(const std::string& name);

// One layer as the caller knows it. The session's NodeStat has the cost but
// not the input/output byte split; the caller fills both.
struct LayerProfileInput {
  std::string name;           // node name: dispatch_name, and location when `location` is empty
  std::string op_type;
  std::string location;       // e.g. the MLIR "line:col"; may be empty
  uint64_t input_bytes = 0;   // bytes of every input (weights included)
  uint64_t output_bytes = 0;
  LayerCost cost;             // ExecutorProfile::cost_of of this layer
};

struct ProfileCsvs {
  std::string device_trace;   // compile-time trace CSV text, header included
  std::string host_profile;   // runtime host profile CSV text, header included
};

// Throws EngineError(kInvalidInput) when the cost model has a
// non-positive clock_mhz, dma_bytes_per_cycle, macs_per_cycle_per_slice,
// eltwise_per_cycle or slices.
ProfileCsvs make_profile_csvs(const std::vector<LayerProfileInput>& layers, const CostModel& model,
                              TraceExecutor executor);

// Writes one CSV field: quoted (RFC 4180) when it holds a comma or a quote;
// '\r' and '\n' become spaces.
std::string csv_field(const std::string& s);

}  // namespace torq::engine
