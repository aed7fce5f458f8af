// --collect-profile through the real binaries: every job returns its
// compile-time trace and runtime host profile CSVs (DESIGN §5 columns),
// discover exports them per layer run, run lays them end to end into one
// Chrome/Perfetto trace JSON and prints the "Host Profile Overview".
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/integration/proc.h"

using namespace torq::test;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

std::string gen() { return bin("torq-gen-config"); }

// Trace Event Format: every event has name/ph/pid/tid, complete events a
// non-negative ts and dur; returns the number of complete events.
size_t check_trace(const json& t) {
  EXPECT_TRUE(t.contains("traceEvents") && t["traceEvents"].is_array());
  size_t complete = 0;
  for (const auto& e : t["traceEvents"]) {
    EXPECT_TRUE(e.contains("name") && e["name"].is_string()) << e.dump();
    EXPECT_TRUE(e.contains("ph") && e["ph"].is_string()) << e.dump();
    EXPECT_TRUE(e.contains("pid") && e.contains("tid")) << e.dump();
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_GE(e["ts"].get<double>(), 0) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0) << e.dump();
    }
  }
  return complete;
}

}  // namespace

TEST(Profiles, DiscoverExportsEveryLayerRunAndRunMergesThemIntoOneTrace) {
  const std::string dir = fresh_dir("profiles_" + std::to_string(getpid()));
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  const std::string flags = " --model " + dir + "/demo.onnx -o " + dir + "/out --auto-convert-bf16 --collect-profile";
  const auto d = run_cmd(gen() + " discover" + flags + " -q");
  ASSERT_EQ(d.code, 0) << d.output;
  // One set of files per layer run that produced an output (14 layers x the executors that ran them).
  size_t traces = 0;
  for (const auto& f : fs::directory_iterator(dir + "/out/demo_profiles"))
    if (f.path().string().size() > 11 && f.path().string().rfind(".trace.json") == f.path().string().size() - 11) {
      ++traces;
      EXPECT_GT(check_trace(read_json(f.path().string())), 0u) << f.path();
    }
  EXPECT_GE(traces, 14u);
  EXPECT_EQ(slurp(dir + "/out/demo_profiles/Conv_conv1_nss.device_trace.csv")
                .rfind("taskId, elapsed_time(us), timestamp(us), event, location, bytes\n", 0), 0u);
  EXPECT_NE(slurp(dir + "/out/demo_profiles/Conv_conv1_nss.device_trace.csv").find("DMA In"), std::string::npos);
  EXPECT_EQ(slurp(dir + "/out/demo_profiles/Conv_conv1_nss.host_profile.csv")
                .rfind("dispatch_name,invocation_id,action_id,timestamp_us,event\n", 0), 0u);

  const auto r = run_cmd(gen() + " run" + flags);
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* line : {"Host Profile Overview", "WALL_TIME", "OVERALL", "Dma", "Compute", "Slice 0", "Slice 1",
                           "Css", "Overlap", "Idle", "Host Copy"})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  const json trace = read_json(dir + "/out/demo.trace.json");
  EXPECT_GE(check_trace(trace), 14u);  // at least one event per op of the assigned run
  const json rep = read_json(dir + "/out/torq_gen_config_demo.json");
  ASSERT_TRUE(rep["full_model"].contains("profile_overview")) << rep["full_model"].dump();
  EXPECT_TRUE(fs::exists(dir + "/out/demo.device_trace.csv"));
  EXPECT_TRUE(fs::exists(dir + "/out/demo.host_profile.csv"));
}

// The toolchain backend collects the tools' own profiling CSVs
// (--torq-enable-profiling --torq-dump-profiling at compile,
// --torq_profile_host at run): here the stand-in's, in the same columns.
TEST(Profiles, TheToolchainBackendCollectsTheToolsProfiles) {
  const std::string dir = fresh_dir("profiles_tc_" + std::to_string(getpid()));
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  const std::string flags = " --model " + dir + "/demo.onnx -o " + dir + "/out --auto-convert-bf16 --backend toolchain"
                            " --toolchain " + std::string(TORQ_SOURCE_DIR) + "/configs/toolchains/standin.yaml";
  ASSERT_EQ(run_cmd(gen() + " discover" + flags + " -q").code, 0);
  const auto r = run_cmd(gen() + " run" + flags + " --collect-profile");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("Host Profile Overview"), std::string::npos) << r.output;
  EXPECT_GE(check_trace(read_json(dir + "/out/demo.trace.json")), 14u);
  EXPECT_NE(slurp(dir + "/out/demo.device_trace.csv").find("Slice 0"), std::string::npos);
}
