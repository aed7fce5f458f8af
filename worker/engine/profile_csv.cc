#include "worker/engine/profile_csv.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pipeline/base/error.h"

namespace torq::engine {
namespace {

// The real compiler's header (", " between names, none in the rows).
constexpr char kDeviceHeader[] = "taskId, elapsed_time(us), timestamp(us), event, location, bytes";
constexpr char kHostHeader[] = "dispatch_name,invocation_id,action_id,timestamp_us,event";

// Integer nanoseconds as microseconds with three decimals.
std::string us(int64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  return buf;
}

void check_model(const CostModel& m) {
  if (!(m.clock_mhz > 0) || !(m.dma_bytes_per_cycle > 0) || !(m.macs_per_cycle_per_slice > 0) ||
      !(m.eltwise_per_cycle > 0) || m.slices <= 0)
    throw EngineError(ErrorKind::kInvalidInput,
                      "profile CSVs: the cost model needs positive clock_mhz, dma_bytes_per_cycle, "
                      "macs_per_cycle_per_slice, eltwise_per_cycle and slices");
}

struct Writer {
  const CostModel& model;
  std::string device = std::string(kDeviceHeader) + "\n";
  std::string host = std::string(kHostHeader) + "\n";

  int64_t ns(double cycles) const { return std::llround(cycles * 1000.0 / model.clock_mhz); }
  int64_t dma_ns(uint64_t bytes) const { return ns(static_cast<double>(bytes) / model.dma_bytes_per_cycle); }
  // Compute cycles as ExecutorProfile::cost_of counts them.
  int64_t compute_ns(const LayerCost& c) const { return ns(model.compute_cycles(c)); }

  void task(const std::string& id, int64_t start, int64_t dur, const std::string& event, const std::string& loc,
            uint64_t bytes) {
    // As the compiler writes a row: the location unquoted (a reader takes
    // what lies between the event and the bytes), bytes empty for compute.
    std::string clean = loc;
    std::replace(clean.begin(), clean.end(), '\n', ' ');
    std::replace(clean.begin(), clean.end(), '\r', ' ');
    const bool compute = event == "CSS" || event.rfind("Slice ", 0) == 0;
    device += id + "," + us(dur) + "," + us(start) + "," + event + "," + clean + "," +
              (compute ? std::string() : std::to_string(bytes)) + "\n";
  }
  void span(const LayerProfileInput& l, size_t index, const char* type, int64_t begin, int64_t end) {
    const std::string head = csv_field(l.name) + ",0," + std::to_string(index) + ",";
    host += head + us(begin) + "," + type + "_BEGIN\n";
    host += head + us(end) + "," + type + "_END\n";
  }
};

std::string location_of(const LayerProfileInput& l) { return l.location.empty() ? l.name : l.location; }

// One nss layer starting at `s`; returns where its last task ends.
int64_t nss_layer(Writer& w, const LayerProfileInput& l, size_t i, int64_t s) {
  const std::string loc = location_of(l), n = std::to_string(i);
  const int64_t in = w.dma_ns(l.input_bytes), out = w.dma_ns(l.output_bytes), c = w.compute_ns(l.cost);
  const int64_t comp_start = s + in / 2;
  const int64_t comp_end = std::max(comp_start + c, s + in + (c - c / 2));
  const int64_t out_start = comp_start + c / 2;
  const int64_t out_end = std::max(out_start + out, comp_end + (out - out / 2));
  w.task("DI" + n, s, in, "DMA In", loc, l.input_bytes);
  for (int64_t k = 0; k < w.model.slices; ++k)
    w.task("S" + n + "_" + std::to_string(k), comp_start, comp_end - comp_start, "Slice " + std::to_string(k), loc, 0);
  w.task("DO" + n, out_start, out_end - out_start, "DMA Out", loc, l.output_bytes);
  return std::max(comp_end, out_end);
}

int64_t css_layer(Writer& w, const LayerProfileInput& l, size_t i, int64_t s) {
  const int64_t dur = std::max(w.compute_ns(l.cost), w.dma_ns(l.input_bytes + l.output_bytes));
  w.task("CSS" + std::to_string(i), s, dur, "CSS", location_of(l), 0);
  return s + dur;
}

}  // namespace

std::optional<TraceExecutor> trace_executor_from_name(const std::string& name) {
  if (name == "nss") return TraceExecutor::kNss;
  if (name == "css") return TraceExecutor::kCss;
  if (name == "host") return TraceExecutor::kHost;
  return std::nullopt;
}

std::string csv_field(const std::string& s) {
  std::string clean = s;
  std::replace(clean.begin(), clean.end(), '\r', ' ');
  std::replace(clean.begin(), clean.end(), '\n', ' ');
  if (clean.find_first_of(",\"") == std::string::npos) return clean;
  std::string q = "\"";
  for (char c : clean) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

ProfileCsvs make_profile_csvs(const std::vector<LayerProfileInput>& layers, const CostModel& model,
                              TraceExecutor executor) {
  check_model(model);
  Writer w{model};
  const int64_t overhead = w.ns(static_cast<double>(model.dispatch_overhead_cycles));
  const char* type = executor == TraceExecutor::kNss ? "NSS" : executor == TraceExecutor::kCss ? "CSS" : "HOST";
  int64_t t = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerProfileInput& l = layers[i];
    int64_t end = 0;
    switch (executor) {
      case TraceExecutor::kNss: end = nss_layer(w, l, i, t + overhead); break;
      case TraceExecutor::kCss: end = css_layer(w, l, i, t + overhead); break;
      case TraceExecutor::kHost: end = t + w.ns(static_cast<double>(l.cost.cycles)); break;
    }
    w.span(l, i, type, t, end);
    t = end;
  }
  return {std::move(w.device), std::move(w.host)};
}

}  // namespace torq::engine
