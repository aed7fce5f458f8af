// Profiles: the two CSVs parsed strictly (file:line on every error), the
// overview's interval maths on a hand-written timeline with known overlap
// and idle, the Chrome / Perfetto trace JSON checked against the Trace
// Event Format schema, and the sim's CSV generator round-tripped through
// the parser.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pipeline/report/profile_merge.h"
#include "pipeline/report/profile_trace.h"
#include "pipeline/core/types.h"
#include "pipeline/base/error.h"
#include "worker/engine/profile.h"
#include "worker/engine/profile_csv.h"

using namespace torq::pipeline;
using torq::engine::CostModel;
using torq::engine::LayerProfileInput;
using torq::engine::TraceExecutor;

namespace {

// A timeline with known unions (µs): DMA [0,10) [20,30) [45,55) = 30;
// compute [5,25) [40,50) = 30 (Slice 0 20, Slice 1 15, CSS 10); overlap
// [5,10) [20,25) [45,50) = 15; host copy [60,70) [90,100) = 20; host
// [70,75) ∪ [72,80) = 10; the NSS dispatch [0,30) is a container. Busy =
// [0,30) [40,55) [60,80) [90,100) = 75 of OVERALL 100: idle 25.
const char* kDeviceCsv =
    "taskId,elapsed_time(us),timestamp(us),event,location,bytes\r\n"
    "DI0,10,0,DMA In,\"conv, 1\",6400\r\n"
    "S0_0,20,5,Slice 0,\"conv, 1\",\r\n"
    "S0_1,15.000,5,Slice 1,\"conv, 1\",0\r\n"
    "\r\n"
    "DO0,10,20,DMA Out,\"say \"\"hi\"\"\",3200\r\n"
    "CSS1,10,40,CSS,relu,0\r\n"
    "DI1,10,45,DMA In,relu,128\r\n";

const char* kHostCsv =
    "dispatch_name,invocation_id,action_id,timestamp_us,event\n"
    "conv,0,0,0,NSS_BEGIN\n"
    "conv,0,0,30,NSS_END\n"
    "io,0,1,60,HOST_COPY_BEGIN\n"
    "io,0,1,70,HOST_COPY_END\n"
    "sm,0,2,70,HOST_BEGIN\n"
    "sm,0,3,72,HOST_PROGRAM_BEGIN\n"
    "sm,0,2,75,HOST_END\n"
    "sm,0,3,80,HOST_PROGRAM_END\n"
    "io,0,4,90,HOST_COPY_BEGIN\n"
    "io,0,4,100,HOST_COPY_END\n";

ProfileData hand_profile() {
  return {parse_device_trace_csv(kDeviceCsv, "trace.csv"), parse_host_profile_csv(kHostCsv, "runtime.csv")};
}

std::string device_error(const std::string& body) {
  try {
    parse_device_trace_csv(std::string(kDeviceTraceCsvHeader) + "\n" + body, "t.csv");
  } catch (const PipelineError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string host_error(const std::string& body) {
  try {
    parse_host_profile_csv(std::string(kHostProfileCsvHeader) + "\n" + body, "r.csv");
  } catch (const PipelineError& e) {
    return e.what();
  }
  return "(no error)";
}

CostModel nss_model() {
  CostModel m;
  m.clock_mhz = 1000;
  m.slices = 2;
  m.macs_per_cycle_per_slice = 256;
  m.eltwise_per_cycle = 64;
  m.dma_bytes_per_cycle = 64;
  m.dispatch_overhead_cycles = 2000;
  return m;
}

std::vector<LayerProfileInput> three_layers() {
  std::vector<LayerProfileInput> layers(3);
  layers[0].name = "conv, 1";  // a comma: the CSV must quote it
  layers[0].op_type = "Conv";
  layers[0].input_bytes = 6400;
  layers[0].output_bytes = 3200;
  layers[0].cost.macs = 51200;
  layers[1].name = "relu";
  layers[1].op_type = "Relu";
  layers[1].location = "12:5";
  layers[1].input_bytes = 3200;
  layers[1].output_bytes = 3200;
  layers[1].cost.elements = 1600;
  layers[2].name = "fc";
  layers[2].op_type = "Gemm";
  layers[2].input_bytes = 64000;
  layers[2].output_bytes = 40;
  layers[2].cost.macs = 160000;
  for (auto& l : layers) l.cost.cycles = 5000;
  return layers;
}

ProfileData parse_generated(const torq::engine::ProfileCsvs& csvs) {
  return {parse_device_trace_csv(csvs.device_trace, "gen_trace.csv"),
          parse_host_profile_csv(csvs.host_profile, "gen_runtime.csv")};
}

// The Trace Event Format as ui.perfetto.dev and chrome://tracing read it.
// Fails the test on any violation.
void check_trace_schema(const nlohmann::json& j) {
  EXPECT_TRUE(j.is_object());
  EXPECT_EQ(j.value("displayTimeUnit", ""), "ms");
  EXPECT_TRUE(j.contains("traceEvents") && j["traceEvents"].is_array());
  std::set<std::pair<int, int>> named_threads;
  std::set<int> named_processes;
  std::map<std::pair<int, int>, double> last_ts;
  bool seen_x = false;
  for (const auto& e : j["traceEvents"]) {
    SCOPED_TRACE(e.dump());
    ASSERT_TRUE(e.is_object());
    ASSERT_TRUE(e.contains("name") && e["name"].is_string());
    ASSERT_TRUE(e.contains("ph") && e["ph"].is_string());
    ASSERT_TRUE(e.contains("pid") && e["pid"].is_number_integer());
    ASSERT_TRUE(e.contains("tid") && e["tid"].is_number_integer());
    const std::pair<int, int> track{e["pid"].get<int>(), e["tid"].get<int>()};
    const std::string ph = e["ph"];
    if (ph == "M") {
      EXPECT_FALSE(seen_x) << "metadata after an X event";
      ASSERT_TRUE(e.contains("args") && e["args"].is_object());
      if (e["name"] == "thread_name") {
        EXPECT_TRUE(e["args"]["name"].is_string());
        named_threads.insert(track);
      }
      if (e["name"] == "process_name") named_processes.insert(track.first);
      continue;
    }
    ASSERT_EQ(ph, "X");
    seen_x = true;
    ASSERT_TRUE(e.contains("cat") && e["cat"].is_string());
    ASSERT_TRUE(e.contains("ts") && e["ts"].is_number());
    ASSERT_TRUE(e.contains("dur") && e["dur"].is_number());
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_TRUE(named_threads.count(track)) << "X event on a track with no thread_name";
    EXPECT_TRUE(named_processes.count(track.first)) << "X event in a process with no process_name";
    if (auto it = last_ts.find(track); it != last_ts.end()) {
      EXPECT_LE(it->second, e["ts"].get<double>());
    }
    last_ts[track] = e["ts"].get<double>();
  }
}

// Schema-checked, then the number of X events.
size_t checked_x_events(const nlohmann::json& j) {
  check_trace_schema(j);
  size_t x = 0;
  for (const auto& e : j["traceEvents"]) x += e.value("ph", "") == "X" ? 1 : 0;
  return x;
}

}  // namespace

// ---- parsing ---------------------------------------------------------------

TEST(ProfileTraceParse, DeviceTraceGoodFile) {
  const auto tasks = parse_device_trace_csv(kDeviceCsv, "trace.csv");
  ASSERT_EQ(tasks.size(), 6u);
  EXPECT_EQ(tasks[0].task_id, "DI0");
  EXPECT_EQ(tasks[0].engine, DeviceEngine::kDmaIn);
  EXPECT_EQ(tasks[0].location, "conv, 1");
  EXPECT_EQ(tasks[0].bytes, 6400u);
  EXPECT_EQ(tasks[0].dur_ns, 10000);
  EXPECT_EQ(tasks[1].engine, DeviceEngine::kSlice);
  EXPECT_EQ(tasks[1].slice, 0);
  EXPECT_EQ(tasks[1].bytes, 0u);  // empty bytes field
  EXPECT_EQ(tasks[2].slice, 1);
  EXPECT_EQ(tasks[2].start_ns, 5000);
  EXPECT_EQ(tasks[3].location, "say \"hi\"");
  EXPECT_EQ(tasks[3].line, 6u);  // after the blank line
  EXPECT_EQ(tasks[4].engine, DeviceEngine::kCss);
  EXPECT_EQ(tasks[4].slice, -1);
}

TEST(ProfileTraceParse, HostProfileGoodFilePairsInterleavedSpans) {
  const auto spans = parse_host_profile_csv(kHostCsv, "runtime.csv");
  ASSERT_EQ(spans.size(), 5u);
  EXPECT_EQ(spans[0].type, "NSS");
  EXPECT_EQ(spans[0].end_ns, 30000);
  EXPECT_EQ(spans[2].type, "HOST");
  EXPECT_EQ(spans[2].action_id, 2u);
  EXPECT_EQ(spans[2].start_ns, 70000);
  EXPECT_EQ(spans[2].end_ns, 75000);
  EXPECT_EQ(spans[3].type, "HOST_PROGRAM");
  EXPECT_EQ(spans[3].end_ns, 80000);
  EXPECT_EQ(spans[3].line, 7u);
  EXPECT_EQ(host_kind("HOST_PROGRAM"), HostKind::kHost);
  EXPECT_EQ(host_kind("HOST_COPY"), HostKind::kHostCopy);
  EXPECT_EQ(host_kind("NSS"), HostKind::kDispatch);
}

// The real tools' own formats (torq-compiler ProfilingPass::writeToCsv and
// runtime TorqEventLog): ", " in the compile header only, the location an
// unquoted MLIR loc() (commas and quotes in a fused one), CDMA events,
// empty bytes on compute rows; the runtime's action_id -1 for INIT and
// dispatch-level events and absolute steady-clock microseconds.
TEST(ProfileTraceParse, TheRealToolsFormats) {
  const char* device =
      "taskId, elapsed_time(us), timestamp(us), event, location, bytes\n"
      "0,120,0,DMA In,loc(\"model.mlir\":20:11),6400\n"
      "1,40,120,CDMA LRAM to DTCM,loc(\"model.mlir\":20:11),512\n"
      "2,300,60,Slice 0,loc(fused[\"model.mlir\":21:11, \"model.mlir\":22:11]),\n"
      "3,8000,400,CSS,loc(\"model.mlir\":23:11),\n";
  const auto tasks = parse_device_trace_csv(device, "device.csv");
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(tasks[0].location, "loc(\"model.mlir\":20:11)");
  EXPECT_EQ(tasks[0].bytes, 6400u);
  EXPECT_EQ(tasks[1].engine, DeviceEngine::kCdma);
  EXPECT_EQ(tasks[2].location, "loc(fused[\"model.mlir\":21:11, \"model.mlir\":22:11])");
  EXPECT_EQ(tasks[2].engine, DeviceEngine::kSlice);
  EXPECT_EQ(tasks[2].bytes, 0u);
  EXPECT_EQ(tasks[3].dur_ns, 8000000);
  const char* host =
      "dispatch_name,invocation_id,action_id,timestamp_us,event\n"
      "init,0,-1,864000123456,INIT_BEGIN\n"
      "init,0,-1,864000123500,INIT_END\n"
      "main_dispatch_0,0,-1,864000123600,DISPATCH_BEGIN\n"
      "main_dispatch_0,0,0,864000123610,NSS_START_BEGIN\n"
      "main_dispatch_0,0,0,864000123900,NSS_START_END\n"
      "main_dispatch_0,0,-1,864000124000,DISPATCH_END\n";
  const auto spans = parse_host_profile_csv(host, "host.csv");
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].action_id, -1);
  EXPECT_EQ(spans[0].type, "INIT");
  EXPECT_EQ(spans[1].type, "DISPATCH");
  EXPECT_EQ(spans[2].action_id, 0);
  EXPECT_EQ(spans[2].end_ns - spans[2].start_ns, 290000);
  // Merged as a run's profile, the runtime's absolute clock starts at the
  // first event: the overview spans the run, not the machine's uptime.
  const ProfileData merged = merge_layer_profiles({{device, host}}, "real");
  const HostProfileOverview ov = compute_overview(merged);
  EXPECT_EQ(ov.overall_ns, 8400000);  // the CSS task ends last, at 8400 us
  EXPECT_GE(ov.dma_ns, 160000);
}

TEST(ProfileTraceParse, MicrosecondsBecomeExactNanoseconds) {
  const auto t = parse_device_trace_csv(std::string(kDeviceTraceCsvHeader) +
                                            "\na,1.0005,0.0004,CDMA,,\nb,2.5,123456789012.999,Slice 12,x,7\n",
                                        "t.csv");
  EXPECT_EQ(t[0].dur_ns, 1001);  // the 4th decimal rounds
  EXPECT_EQ(t[0].start_ns, 0);
  EXPECT_EQ(t[0].engine, DeviceEngine::kCdma);
  EXPECT_EQ(t[1].dur_ns, 2500);
  EXPECT_EQ(t[1].start_ns, 123456789012999);
  EXPECT_EQ(t[1].slice, 12);
}

TEST(ProfileTraceParse, MalformedDeviceLinesNameFileAndLine) {
  // The header is line 1, so the first row is line 2.
  EXPECT_NE(device_error("DI0,1,0,DMA In,x,1\nDI1,1,0,DMA In,x\n").find("t.csv:3: expected 6 fields, got 5"),
            std::string::npos);
  EXPECT_NE(device_error("DI0,1.2.3,0,DMA In,x,1\n").find("t.csv:2: elapsed_time(us) '1.2.3'"), std::string::npos);
  EXPECT_NE(device_error("DI0,1,-4,DMA In,x,1\n").find("t.csv:2: timestamp(us) '-4'"), std::string::npos);
  EXPECT_NE(device_error("DI0,1,0,DMA Sideways,x,1\n").find("t.csv:2: unknown event 'DMA Sideways'"),
            std::string::npos);
  EXPECT_NE(device_error("S0,1,0,Slice,x,1\n").find("t.csv:2: unknown event 'Slice'"), std::string::npos);
  EXPECT_NE(device_error("S0,1,0,Slice 0,x,-1\n").find("t.csv:2: bytes '-1'"), std::string::npos);
  EXPECT_NE(device_error(",1,0,CSS,x,1\n").find("t.csv:2: empty taskId"), std::string::npos);
  // The location is what the compiler printed, unquoted: quotes in it are
  // its own (a quoted CSV field is unquoted).
  EXPECT_EQ(parse_device_trace_csv("taskId,elapsed_time(us),timestamp(us),event,location,bytes\na,1,0,CSS,x\"y,1\n",
                                   "t.csv")[0].location, "x\"y");
  EXPECT_NE(device_error("a, 1,0,CSS,x,1\n").find("t.csv:2:"), std::string::npos);
  EXPECT_NE(device_error("a,1,0,CSS,x,1\na,1,1234567890123456,CSS,x,1\n").find("t.csv:3: timestamp(us) "
                                                                               "'1234567890123456' is too large"),
            std::string::npos);
}

TEST(ProfileTraceParse, MalformedHeaderOrEmptyFile) {
  try {
    parse_device_trace_csv("taskId,elapsed,timestamp,event,location,bytes\n", "t.csv");
    FAIL() << "no error";
  } catch (const PipelineError& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv:1: expected the header"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_host_profile_csv("", "r.csv"), PipelineError);
  try {
    parse_host_profile_csv("\n\n", "r.csv");
    FAIL() << "no error";
  } catch (const PipelineError& e) {
    EXPECT_NE(std::string(e.what()).find("r.csv:2: empty file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_device_trace_csv("/no/such/trace.csv"), PipelineError);
}

TEST(ProfileTraceParse, MalformedHostLinesNameFileAndLine) {
  EXPECT_NE(host_error("a,0,0,1,NSS_START\n").find("r.csv:2: event 'NSS_START' is not <TYPE>_BEGIN"),
            std::string::npos);
  EXPECT_NE(host_error("a,0,0,1,nss_BEGIN\n").find("r.csv:2: event 'nss_BEGIN'"), std::string::npos);
  EXPECT_NE(host_error("a,0,0,1,_BEGIN\n").find("r.csv:2:"), std::string::npos);
  EXPECT_NE(host_error("a,x,0,1,NSS_BEGIN\n").find("r.csv:2: invocation_id 'x'"), std::string::npos);
  EXPECT_NE(host_error("a,0,0,1,NSS_BEGIN\na,0,0,2,NSS_END\na,0,1,3,NSS_END\n").find("r.csv:4: NSS_END without a BEGIN"),
            std::string::npos);
  EXPECT_NE(host_error("a,0,0,1,NSS_BEGIN\na,0,0,2,HOST_END\n").find("r.csv:3: HOST_END without a BEGIN"),
            std::string::npos);
  EXPECT_NE(host_error("a,0,0,1,NSS_BEGIN\nb,0,0,2,NSS_BEGIN\nb,0,0,3,NSS_END\n").find("r.csv:2: NSS_BEGIN never ends"),
            std::string::npos);
  EXPECT_NE(host_error("a,0,0,5,NSS_BEGIN\na,0,0,4,NSS_END\n").find("r.csv:3: NSS_END before its BEGIN (line 2)"),
            std::string::npos);
  EXPECT_NE(host_error("a,0,0,5,NSS_BEGIN\na,0,0,6,NSS_BEGIN\n").find("r.csv:3: second NSS_BEGIN"),
            std::string::npos);
  EXPECT_NE(host_error("a,0,0,5\n").find("r.csv:2: expected 5 fields, got 4"), std::string::npos);
}

// ---- interval maths and the overview -----------------------------------------

TEST(ProfileTraceOverview, IntervalUnionAndIntersection) {
  const auto m = merge_intervals({{10, 12}, {1, 5}, {3, 8}, {8, 9}, {20, 20}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0], Interval(1, 9));
  EXPECT_EQ(m[1], Interval(10, 12));
  EXPECT_EQ(total_length(m), 10);
  EXPECT_EQ(intersection_length(m, merge_intervals({{0, 2}, {4, 11}})), 1 + 5 + 1);
  EXPECT_EQ(intersection_length(m, {}), 0);
}

TEST(ProfileTraceOverview, KnownOverlapAndIdle) {
  const HostProfileOverview ov = compute_overview(hand_profile(), 250000);
  EXPECT_EQ(ov.wall_time_ns, 250000);
  EXPECT_EQ(ov.overall_ns, 100000);
  EXPECT_EQ(ov.dma_ns, 30000);
  EXPECT_EQ(ov.compute_ns, 30000);
  EXPECT_EQ(ov.slice0_ns, 20000);
  EXPECT_EQ(ov.slice1_ns, 15000);
  EXPECT_EQ(ov.css_ns, 10000);
  EXPECT_EQ(ov.overlap_ns, 15000);
  EXPECT_EQ(ov.host_ns, 10000);
  EXPECT_EQ(ov.host_copy_ns, 20000);
  EXPECT_EQ(ov.idle_ns, 25000);
  EXPECT_DOUBLE_EQ(ov.percent(ov.overlap_ns), 15.0);
  EXPECT_EQ(compute_overview(hand_profile()).wall_time_ns, 100000);  // not given: OVERALL
  EXPECT_EQ(compute_overview({}).overall_ns, 0);
  EXPECT_DOUBLE_EQ(compute_overview({}).percent(0), 0.0);
}

TEST(ProfileTraceOverview, TextBlockHasTheSeedLook) {
  const std::string text = overview_text(compute_overview(hand_profile(), 250000), "toy");
  const std::string expected =
      "====================== Host Profile Overview =======================\n"
      "  Model: toy\n"
      "  ────────────────────────────────────────────────────────\n"
      "  WALL_TIME                       250.000µs\n"
      "  OVERALL                         100.000µs\n"
      "  Dma                              30.000µs  (30.00%)\n"
      "  Compute                          30.000µs  (30.00%)\n"
      "  Slice 0                          20.000µs  (20.00%)\n"
      "  Slice 1                          15.000µs  (15.00%)\n"
      "  Css                              10.000µs  (10.00%)\n"
      "  Overlap                          15.000µs  (15.00%)\n"
      "  Idle                             25.000µs  (25.00%)\n"
      "  Host                             10.000µs  (10.00%)\n"
      "  Host Copy                        20.000µs  (20.00%)\n";
  EXPECT_EQ(text, expected);
}

TEST(ProfileTraceOverview, DurationsInTheSeedUnits) {
  EXPECT_EQ(format_duration(0), "0ns");
  EXPECT_EQ(format_duration(999), "999ns");
  EXPECT_EQ(format_duration(453000), "453.000µs");
  EXPECT_EQ(format_duration(12845000), "12.845ms");
  EXPECT_EQ(format_duration(207000000), "207.000ms");
  EXPECT_EQ(format_duration(1234000000), "1.234s");
}

TEST(ProfileTraceOverview, JsonCarriesEveryLine) {
  const nlohmann::json j = overview_json(compute_overview(hand_profile(), 250000), "toy");
  EXPECT_EQ(j["model"], "toy");
  for (const char* k : {"WALL_TIME", "OVERALL", "DMA", "COMPUTE", "SLICE_0", "SLICE_1", "CSS", "HOST", "HOST_COPY",
                        "OVERLAP", "IDLE"}) {
    SCOPED_TRACE(k);
    ASSERT_TRUE(j.contains(k));
    EXPECT_TRUE(j[k]["time_us"].is_number());
    EXPECT_TRUE(j[k]["text"].is_string());
  }
  EXPECT_FALSE(j["OVERALL"].contains("percent"));
  EXPECT_DOUBLE_EQ(j["IDLE"]["time_us"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(j["IDLE"]["percent"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(j["WALL_TIME"]["time_us"].get<double>(), 250.0);
}

TEST(ProfileTraceOverview, AlignStartsPutsEachFileAtZero) {
  ProfileData d = hand_profile();
  for (auto& s : d.host) s.start_ns += 1'000'000'000, s.end_ns += 1'000'000'000;  // a board's clock
  const ProfileData a = align_starts(d);
  EXPECT_EQ(a.host[0].start_ns, 0);
  EXPECT_EQ(a.host[4].end_ns, 100000);
  EXPECT_EQ(a.device[0].start_ns, 0);
  EXPECT_EQ(compute_overview(a).overall_ns, 100000);
}

// ---- the trace JSON ----------------------------------------------------------

TEST(ProfileTraceJson, HandProfileFollowsTheSchema) {
  const nlohmann::json j = trace_json(hand_profile(), "toy", 250000);
  EXPECT_EQ(checked_x_events(j), 6u + 5u);
  // Tracks: one per engine and one per runtime TYPE, named.
  std::map<std::pair<int, int>, std::string> names;
  for (const auto& e : j["traceEvents"])
    if (e["name"] == "thread_name")
      names[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"].get<std::string>();
  const std::map<std::pair<int, int>, std::string> expected = {
      {{1, 1}, "DMA In"},       {{1, 2}, "DMA Out"},     {{1, 10}, "Slice 0"},         {{1, 11}, "Slice 1"},
      {{1, 20}, "CSS"},         {{2, 1}, "Host: HOST"},  {{2, 2}, "Host: HOST_COPY"}, {{2, 3}, "Host: HOST_PROGRAM"},
      {{2, 4}, "Host: NSS"}};
  EXPECT_EQ(names, expected);
  // One X event checked field by field: DO0 at 20 µs for 10 µs.
  bool found = false;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["args"].value("task", "") == "DO0") {
      found = true;
      EXPECT_EQ(e["name"], "say \"hi\"");
      EXPECT_EQ(e["cat"], "dma_out");
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 20.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 10.0);
      EXPECT_EQ(e["args"]["bytes"], 3200);
    }
  EXPECT_TRUE(found);
  EXPECT_DOUBLE_EQ(j["otherData"]["overview"]["IDLE"]["time_us"].get<double>(), 25.0);
  EXPECT_EQ(nlohmann::json::parse(j.dump()), j);  // serialisable as is
}

TEST(ProfileTraceJson, TimesStartAtTheEarliestEvent) {
  ProfileData d = hand_profile();
  for (auto& t : d.device) t.start_ns += 7000;
  for (auto& s : d.host) s.start_ns += 7000, s.end_ns += 7000;
  const nlohmann::json j = trace_json(d, "", std::nullopt);
  double min_ts = 1e18;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") min_ts = std::min(min_ts, e["ts"].get<double>());
  EXPECT_DOUBLE_EQ(min_ts, 0.0);
  check_trace_schema(j);
}

// ---- the sim's generator, round-tripped ---------------------------------------

TEST(ProfileCsvGenerator, NssLayerIsDoubleBufferedWithExactTimes) {
  std::vector<LayerProfileInput> one = {three_layers()[0]};
  one[0].name = "conv";
  const auto csvs = torq::engine::make_profile_csvs(one, nss_model(), TraceExecutor::kNss);
  // s = 2 µs overhead; DMA In 6400 B / 64 = 100 ns; compute 51200 / 512 = 100
  // ns from half the input; DMA Out 3200 / 64 = 50 ns from half the compute,
  // ending half a DMA Out after it.
  EXPECT_EQ(csvs.device_trace,
            "taskId, elapsed_time(us), timestamp(us), event, location, bytes\n"
            "DI0,0.100,2.000,DMA In,conv,6400\n"
            "S0_0,0.100,2.050,Slice 0,conv,\n"
            "S0_1,0.100,2.050,Slice 1,conv,\n"
            "DO0,0.075,2.100,DMA Out,conv,3200\n");
  EXPECT_EQ(csvs.host_profile,
            "dispatch_name,invocation_id,action_id,timestamp_us,event\n"
            "conv,0,0,0.000,NSS_BEGIN\n"
            "conv,0,0,2.175,NSS_END\n");
  const HostProfileOverview ov = compute_overview(parse_generated(csvs));
  EXPECT_EQ(ov.overall_ns, 2175);
  EXPECT_EQ(ov.dma_ns, 175);
  EXPECT_EQ(ov.compute_ns, 100);
  EXPECT_EQ(ov.overlap_ns, 100);
  EXPECT_EQ(ov.idle_ns, 2000);
}

TEST(ProfileCsvGenerator, NssRoundTripCountsLayersTimesPhases) {
  const auto layers = three_layers();
  const auto csvs = torq::engine::make_profile_csvs(layers, nss_model(), TraceExecutor::kNss);
  EXPECT_EQ(csvs.device_trace, torq::engine::make_profile_csvs(layers, nss_model(), TraceExecutor::kNss).device_trace);
  const ProfileData d = parse_generated(csvs);
  ASSERT_EQ(d.device.size(), layers.size() * 4);  // DMA In, Slice 0, Slice 1, DMA Out
  ASSERT_EQ(d.host.size(), layers.size());
  EXPECT_EQ(d.device[0].location, "conv, 1");
  EXPECT_EQ(d.host[0].dispatch_name, "conv, 1");
  EXPECT_EQ(d.device[4].location, "12:5");
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(d.device[4 * i].bytes, layers[i].input_bytes);
    EXPECT_EQ(d.device[4 * i + 3].bytes, layers[i].output_bytes);
    EXPECT_EQ(d.host[i].type, "NSS");
    EXPECT_EQ(d.host[i].action_id, i);
  }
  const nlohmann::json j = trace_json(d, "three", std::nullopt);
  EXPECT_EQ(checked_x_events(j), layers.size() * 5);
  const HostProfileOverview ov = compute_overview(d);
  EXPECT_EQ(ov.idle_ns, 3 * 2000);  // the dispatch overheads, nothing else
  EXPECT_GT(ov.overlap_ns, 0);      // double buffering
  EXPECT_EQ(ov.slice0_ns, ov.slice1_ns);
  EXPECT_EQ(ov.host_ns + ov.host_copy_ns + ov.css_ns, 0);
}

TEST(ProfileCsvGenerator, CssAndHostExecutors) {
  const auto layers = three_layers();
  CostModel css = nss_model();
  css.clock_mhz = 800;
  css.slices = 1;
  css.dispatch_overhead_cycles = 5000;  // 6.25 µs
  const ProfileData c = parse_generated(torq::engine::make_profile_csvs(layers, css, TraceExecutor::kCss));
  ASSERT_EQ(c.device.size(), layers.size());
  ASSERT_EQ(c.host.size(), layers.size());
  const HostProfileOverview cov = compute_overview(c);
  EXPECT_EQ(cov.css_ns, cov.compute_ns);
  EXPECT_EQ(cov.idle_ns, 3 * 6250);
  EXPECT_EQ(checked_x_events(trace_json(c, "css", std::nullopt)), 2 * layers.size());

  const ProfileData h = parse_generated(torq::engine::make_profile_csvs(layers, css, TraceExecutor::kHost));
  EXPECT_TRUE(h.device.empty());
  ASSERT_EQ(h.host.size(), layers.size());
  EXPECT_EQ(h.host[0].type, "HOST");
  EXPECT_EQ(h.host[0].end_ns - h.host[0].start_ns, 6250);  // 5000 cycles at 800 MHz
  const HostProfileOverview hov = compute_overview(h);
  EXPECT_EQ(hov.host_ns, hov.overall_ns);
  EXPECT_EQ(hov.idle_ns, 0);
}

TEST(ProfileCsvGenerator, RealTargetProfilesAndBadCostModels) {
  for (const char* name : {"nss", "css", "host"}) {
    SCOPED_TRACE(name);
    const auto profile = torq::engine::ExecutorProfile::resolve(name);
    const auto exec = torq::engine::trace_executor_from_name(name);
    ASSERT_TRUE(exec.has_value());
    const ProfileData d = parse_generated(torq::engine::make_profile_csvs(three_layers(), profile.cost(), *exec));
    check_trace_schema(trace_json(d, name, std::nullopt));
    EXPECT_GT(compute_overview(d).overall_ns, 0);
  }
  EXPECT_FALSE(torq::engine::trace_executor_from_name("npu").has_value());
  CostModel bad = nss_model();
  bad.dma_bytes_per_cycle = 0;
  EXPECT_THROW(torq::engine::make_profile_csvs(three_layers(), bad, TraceExecutor::kNss), torq::engine::EngineError);
  EXPECT_EQ(torq::engine::csv_field("a,\"b\"\nc"), "\"a,\"\"b\"\" c\"");
  EXPECT_EQ(torq::engine::make_profile_csvs({}, nss_model(), TraceExecutor::kNss).host_profile,
            std::string(kHostProfileCsvHeader) + "\n");
}
