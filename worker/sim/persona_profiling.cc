#include "worker/sim/persona_profiling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "pipeline/model/mlir.h"

namespace torq::sim {

using pipeline::Executor;

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error(path + ": cannot write");
}

}  // namespace

std::vector<Task> tasks_of(const engine::RunStats& st, const engine::ExecutorProfile& p, Executor e,
                           const Locations* locs) {
  std::vector<Task> out;
  const auto& c = p.cost();
  const double cycles_per_us = std::max(1e-9, c.clock_mhz);
  size_t n = 0;
  for (const auto& node : st.nodes) {
    const uint64_t half = node.cost.bytes / 2;
    const double dma_us = static_cast<double>(half) / std::max(1e-9, c.dma_bytes_per_cycle) / cycles_per_us;
    const double compute_us = std::max(0.0, node.cost.time_ms * 1000 - 2 * dma_us);
    std::string loc = node.name.empty() ? node.op_type : node.name;
    if (locs)
      if (auto it = locs->find(node.name); it != locs->end()) loc = it->second;
    const std::string unit = e == Executor::kNss ? "Slice " + std::to_string(n++ % std::max<int64_t>(1, c.slices))
                             : e == Executor::kCss ? "CSS" : "HOST";
    out.push_back({"DMA In", loc, dma_us, half});
    out.push_back({unit, loc, compute_us, 0});
    out.push_back({"DMA Out", loc, dma_us, node.cost.bytes - half});
  }
  return out;
}

Locations locations_of(const std::string& mlir_path, const std::string& mlir_text, const onnx::ModelProto& m) {
  Locations out;
  std::vector<pipeline::MlirOperator> ops;
  for (auto& op : pipeline::mlir_operators(mlir_text, true))
    if (op.type != "Constant") ops.push_back(op);
  size_t k = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == "Constant") continue;
    if (k < ops.size() && ops[k].type == n.op_type() && !n.name().empty())
      out[n.name()] = "loc(\"" + mlir_path + "\":" + std::to_string(ops[k].line) + ":" + std::to_string(ops[k].col) + ")";
    ++k;
  }
  return out;
}

// The compiler's ProfilingPass format: ", " in the header only, the
// location unquoted as MLIR prints it, bytes empty for Slice and CSS rows.
void write_compile_profile(const std::string& path, const std::vector<Task>& tasks) {
  std::ostringstream o;
  o << "taskId, elapsed_time(us), timestamp(us), event, location, bytes\n";
  double t = 0;
  int id = 0;
  for (const auto& k : tasks) {
    if (k.event == "HOST") continue;  // the host executor is not profiled by the NPU
    const bool compute = k.event == "CSS" || k.event.rfind("Slice ", 0) == 0;
    o << id++ << "," << k.us << "," << t << "," << k.event << "," << k.location << ","
      << (compute ? std::string() : std::to_string(k.bytes)) << "\n";
    t += k.us;
  }
  write_text(path, o.str());
}

// The runtime's TorqEventLog format: absolute steady-clock microseconds,
// action_id -1 for the INIT and dispatch-level events, the action's index
// for each action's own events.
void write_host_profile(const std::string& path, const std::vector<Task>& tasks) {
  std::ostringstream o;
  o << "dispatch_name,invocation_id,action_id,timestamp_us,event\n";
  const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count();
  double t = static_cast<double>(now);
  auto stamp = [&] { return static_cast<long long>(std::llround(t)); };
  o << "init,0,-1," << stamp() << ",INIT_BEGIN\n";
  t += 10;
  o << "init,0,-1," << stamp() << ",INIT_END\n";
  int action = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Task& k = tasks[i];
    std::string type = k.event == "DMA In" ? "DMA_IN" : k.event == "DMA Out" ? "DMA_OUT" : k.event;
    if (type.rfind("Slice ", 0) == 0) type = "SLICE_" + type.substr(6);
    const std::string dispatch = "main_dispatch_" + std::to_string(i / 3);
    if (i % 3 == 0) o << dispatch << ",0,-1," << stamp() << ",DISPATCH_BEGIN\n";
    o << dispatch << ",0," << action << "," << stamp() << "," << type << "_BEGIN\n";
    t += std::max(1.0, k.us);
    o << dispatch << ",0," << action++ << "," << stamp() << "," << type << "_END\n";
    if (i % 3 == 2 || i + 1 == tasks.size()) o << dispatch << ",0,-1," << stamp() << ",DISPATCH_END\n";
  }
  write_text(path, o.str());
}

}  // namespace torq::sim
