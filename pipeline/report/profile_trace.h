// Profiles of a job (DESIGN §5 "Profiling"): the two CSVs a backend hands
// back, parsed strictly, and what is made of them — a Chrome / Perfetto
// trace JSON and the "Host Profile Overview" summary.
//
// Compile-time trace CSV (torq-compile --torq-enable-profiling
// --torq-dump-profiling, or the sim's cost model), header exactly
//   taskId,elapsed_time(us),timestamp(us),event,location,bytes
// one row per device task: it starts at timestamp(us) and runs for
// elapsed_time(us); event is one of `DMA In`, `DMA Out`, `CDMA`, `CSS`,
// `Slice <n>`; bytes is a non-negative integer (empty means 0).
//
// Runtime host profile CSV (torq-run-module --torq_profile_host), header
//   dispatch_name,invocation_id,action_id,timestamp_us,event
// events `<TYPE>_BEGIN` / `<TYPE>_END` (TYPE of [A-Z0-9_], e.g. NSS,
// HOST_COPY), paired by (dispatch_name, invocation_id, action_id, TYPE).
// TYPE HOST or HOST_PROGRAM is host work, HOST_COPY host copies; any other
// type (NSS, CSS, NSS_WAIT...) is a dispatch: a container of device or host
// work, shown in the trace but not counted as work by the overview.
//
// Both: times are decimal microseconds (non-negative, at most 12 integer
// digits), kept as integer nanoseconds (finer digits are rounded); fields
// may be double-quoted (RFC 4180, `""` for a quote, no newline inside);
// a trailing '\r' and blank lines are ignored. Anything else — a wrong
// header, a wrong field count, a bad number, an unknown event, an END with
// no BEGIN, a BEGIN never ended, an END before its BEGIN — is a
// PipelineError "file:line: reason".
//
// The two files are taken to share one timebase (the sim writes them so);
// align_starts() puts each on its own origin for files that do not (a
// toolchain's estimate next to a board's measured clock). Pure functions,
// no shared state; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torq::pipeline {

// The real tools' headers: the compiler's ProfilingPass writes ", " between
// the header's names (not between a row's fields); the runtime's
// TorqEventLog writes ",". A header is read with or without the spaces.
inline constexpr char kDeviceTraceCsvHeader[] = "taskId, elapsed_time(us), timestamp(us), event, location, bytes";
inline constexpr char kHostProfileCsvHeader[] = "dispatch_name,invocation_id,action_id,timestamp_us,event";

enum class DeviceEngine { kDmaIn, kDmaOut, kCdma, kSlice, kCss };

// One row of the compile-time trace.
struct DeviceTask {
  std::string task_id;
  int64_t start_ns = 0, dur_ns = 0;
  std::string event;        // as written: "DMA In", "Slice 1"...
  DeviceEngine engine = DeviceEngine::kDmaIn;
  int slice = -1;           // n of `Slice <n>`; -1 for other engines
  std::string location;
  uint64_t bytes = 0;
  size_t line = 0;          // 1-based line in its file
};

enum class HostKind { kHost, kHostCopy, kDispatch };
// HOST, HOST_PROGRAM -> kHost; HOST_COPY -> kHostCopy; else kDispatch.
HostKind host_kind(const std::string& type);

// One BEGIN/END pair of the runtime host profile.
struct HostSpan {
  std::string dispatch_name;
  uint64_t invocation_id = 0;
  int64_t action_id = 0;    // -1 for dispatch-level and INIT events (the real runtime's)
  std::string type;         // "NSS", "HOST_COPY"...
  int64_t start_ns = 0, end_ns = 0;
  size_t line = 0;          // line of the BEGIN
};

struct ProfileData {
  std::vector<DeviceTask> device;  // in file order
  std::vector<HostSpan> host;      // in order of their BEGIN lines
};

// Parse one file's text; `filename` only names it in errors. Throw
// PipelineError "filename:line: reason" (see above).
std::vector<DeviceTask> parse_device_trace_csv(const std::string& text, const std::string& filename);
std::vector<HostSpan> parse_host_profile_csv(const std::string& text, const std::string& filename);
// Read and parse a file; PipelineError "path: cannot open" when unreadable.
std::vector<DeviceTask> load_device_trace_csv(const std::string& path);
std::vector<HostSpan> load_host_profile_csv(const std::string& path);

// Shifts the device tasks and the host spans each so that their earliest
// start is 0 (for files in different timebases).
ProfileData align_starts(ProfileData data);

// Half-open [first, second) intervals in ns.
using Interval = std::pair<int64_t, int64_t>;
// Sorted, non-overlapping union of `in` (touching intervals are joined,
// empty ones dropped).
std::vector<Interval> merge_intervals(std::vector<Interval> in);
// Total length of a merged list.
int64_t total_length(const std::vector<Interval>& merged);
// Length of the intersection of two merged lists.
int64_t intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

// The "Host Profile Overview". Times in ns; each a union of intervals, so
// two overlapping tasks of one engine count once.
struct HostProfileOverview {
  int64_t wall_time_ns = 0;  // end to end as the caller measured it; OVERALL when not given
  int64_t overall_ns = 0;    // earliest start to latest end of both files
  int64_t dma_ns = 0;        // DMA In ∪ DMA Out ∪ CDMA
  int64_t compute_ns = 0;    // every Slice ∪ CSS
  int64_t slice0_ns = 0, slice1_ns = 0, css_ns = 0;
  int64_t host_ns = 0;       // runtime HOST / HOST_PROGRAM spans
  int64_t host_copy_ns = 0;  // runtime HOST_COPY spans
  int64_t overlap_ns = 0;    // DMA and COMPUTE both running
  int64_t idle_ns = 0;       // OVERALL minus |DMA ∪ COMPUTE ∪ HOST ∪ HOST COPY|
  // Share of OVERALL in percent (the seed's denominator); 0 when OVERALL is 0.
  double percent(int64_t ns) const;
};

HostProfileOverview compute_overview(const ProfileData& data, std::optional<int64_t> wall_time_ns = {});

// The seed's duration form: "1.234s", "12.845ms", "453.000µs", "999ns".
std::string format_duration(int64_t ns);

// The seed's text block: a title line, "  Model: <model>" (when non-empty), a
// rule, then WALL_TIME, OVERALL, Dma, Compute, Slice 0, Slice 1, Css,
// Overlap, Idle, Host, Host Copy — label left in 26 columns, time right in
// 14, then "  (p.pp%)" except for WALL_TIME and OVERALL. Ends with '\n'.
std::string overview_text(const HostProfileOverview& ov, const std::string& model);

// {"model", "WALL_TIME": {"time_us", "text"}, "OVERALL": {...}, "DMA":
// {"time_us", "text", "percent"}, "COMPUTE", "SLICE_0", "SLICE_1", "CSS",
// "HOST", "HOST_COPY", "OVERLAP", "IDLE"}; time_us is ns / 1000.
nlohmann::json overview_json(const HostProfileOverview& ov, const std::string& model);

// Chrome Trace Event Format (opens in ui.perfetto.dev and chrome://tracing):
// {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {"model",
// "overview": overview_json}}. pid 1 is the device (compile-time trace), one
// tid per engine: 1 DMA In, 2 DMA Out, 3 CDMA, 10 + n Slice n, 20 CSS; pid 2
// is the host runtime, one tid per TYPE ("Host: NSS", "Host: HOST_COPY"...),
// numbered from 1 in name order. Metadata "M" events name the processes and
// threads (process_name, thread_name, thread_sort_index) before any "X"
// event; "X" events carry name (the location, else the event / dispatch
// name), cat, ph, ts and dur (µs from the earliest start), pid, tid and
// args, and are ordered by ts within each track.
nlohmann::json trace_json(const ProfileData& data, const std::string& model,
                          std::optional<int64_t> wall_time_ns = {});

}  // namespace torq::pipeline
