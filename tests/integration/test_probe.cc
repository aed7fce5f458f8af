// torq-gen-config probe through the real binaries (issue 34): a smoke spec
// on the sim's built-in profiles (the sim judges each point by the very
// profile the learner must recover), a hidden profile given as --targets,
// resume after a kill, probe learn and probe diff, and bad specs.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "tests/integration/proc.h"

using namespace torq::test;
namespace fs = std::filesystem;

namespace {

std::string gen() { return bin("torq-gen-config"); }
std::string config(const std::string& rel) { return std::string(TORQ_SOURCE_DIR) + "/configs/" + rel; }

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// "envelope nss: 50/50 points explained" -> {50, 50}.
std::pair<int, int> explained(const std::string& out, const std::string& executor) {
  std::smatch m;
  const std::regex re("envelope " + executor + ": ([0-9]+)/([0-9]+) points explained");
  if (!std::regex_search(out, m, re)) return {-1, -1};
  return {std::stoi(m[1]), std::stoi(m[2])};
}

std::pair<int, int> base_predicts(const std::string& out, const std::string& executor) {
  std::smatch m;
  const std::regex re("predicts ([0-9]+)/([0-9]+) measured " + executor + " statuses");
  if (!std::regex_search(out, m, re)) return {-1, -1};
  return {std::stoi(m[1]), std::stoi(m[2])};
}

int jobs_run(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("jobs: ([0-9]+) run, ([0-9]+) resumed"))) return -1;
  return std::stoi(m[1]);
}

int jobs_resumed(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("jobs: ([0-9]+) run, ([0-9]+) resumed"))) return -1;
  return std::stoi(m[2]);
}

const char* kHidden =
    "name: nss\nnumerics: {float_type: bf16}\n"
    "cost: {clock_mhz: 1000, slices: 2, macs_per_cycle_per_slice: 128, eltwise_per_cycle: 64,\n"
    "       dma_bytes_per_cycle: 64, dispatch_overhead_cycles: 2000}\n"
    "ops:\n"
    "  Conv: {dtypes: [bf16, i8], conv_groups: [standard], max_kernel: 3, max_stride: 2}\n"
    "  MaxPool: {dtypes: [bf16, i8], max_kernel: 3}\n"
    "  GlobalAveragePool: {dtypes: [bf16, i8], max_input_elements: 100000}\n"
    "  Add: {dtypes: [bf16]}\n";

}  // namespace

// The sim judges each point by configs/targets/*.yaml: the derived
// profiles must explain every point, and the base profiles (the same
// files, judged by the learner's own restatement of the check) must predict
// every measured status: the restatement agrees with the engine on real
// points. A second run resumes everything from the store.
TEST(Probe, TheSmokeSpecOnTheBuiltInProfilesIsExplainedWhollyAndResumes) {
  const std::string dir = fresh_dir("probe_smoke_" + std::to_string(getpid()));
  const auto r = run_cmd(gen() + " probe --spec " + config("probe/smoke.yaml") + " -o " + dir + "/out");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const std::string e : {"nss", "css", "host"}) {
    const auto [ex, n] = explained(r.output, e);
    EXPECT_GT(n, 40) << e << "\n" << r.output;
    EXPECT_EQ(ex, n) << e;
    const auto [agreed, compared] = base_predicts(r.output, e);
    EXPECT_EQ(agreed, compared) << e;
    EXPECT_EQ(compared, n) << e;
    EXPECT_TRUE(fs::exists(dir + "/out/profiles/" + e + ".yaml")) << e;
  }
  const int jobs = jobs_run(r.output);
  EXPECT_GT(jobs, 120);
  for (const char* f : {"probe.csv", "envelope.md", "envelope.html", "targets.yaml"})
    EXPECT_TRUE(fs::exists(dir + "/out/" + f)) << f;
  // The learned nss limits of the smoke spec's axes, as nss.yaml has them.
  const std::string nss = read(dir + "/out/profiles/nss.yaml");
  for (const char* line : {"max_kernel: 7", "max_stride: 2", "conv_groups: [depthwise, standard]", "min_spatial: 2",
                           "max_input_elements: 131072", "min_spatial: null"})
    EXPECT_NE(nss.find(line), std::string::npos) << line << "\n" << nss;
  const std::string md = read(dir + "/out/envelope.md");
  EXPECT_NE(md.find("Conv bf16 on nss runs iff"), std::string::npos);
  const std::string html = read(dir + "/out/envelope.html");
  EXPECT_NE(html.find("<html"), std::string::npos);
  EXPECT_EQ(read(dir + "/out/targets.yaml").find("nss: profiles/nss.yaml") != std::string::npos, true);

  const auto again = run_cmd(gen() + " probe --spec " + config("probe/smoke.yaml") + " -o " + dir + "/out");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(jobs_run(again.output), 0) << again.output;
  EXPECT_EQ(jobs_resumed(again.output), jobs) << again.output;
  EXPECT_EQ(read(dir + "/out/profiles/nss.yaml"), nss);

  // probe learn: the same profiles from probe.csv alone.
  fs::remove(dir + "/out/profiles/nss.yaml");
  const auto learn = run_cmd(gen() + " probe learn " + dir + "/out");
  ASSERT_EQ(learn.code, 0) << learn.output;
  EXPECT_EQ(read(dir + "/out/profiles/nss.yaml"), nss);
}

// A profile the probe does not know plays the chip: its limits come back,
// the derived profile drives discover (calibration), and probe diff
// against the built-in run groups the changed points by the built-in
// profile's rule that now refuses them.
TEST(Probe, AHiddenProfileIsRecoveredAndProbeDiffGroupsTheChangesByRule) {
  const std::string dir = fresh_dir("probe_hidden_" + std::to_string(getpid()));
  std::ofstream(dir + "/hidden.yaml") << kHidden;
  std::ofstream(dir + "/targets.yaml") << "nss: hidden.yaml\n";
  const auto h = run_cmd(gen() + " probe --spec " + config("probe/smoke.yaml") + " --targets " + dir +
                         "/targets.yaml --skip-executors css,host -o " + dir + "/hidden");
  ASSERT_EQ(h.code, 0) << h.output;
  const auto [ex, n] = explained(h.output, "nss");
  EXPECT_EQ(ex, n) << h.output;
  const std::string nss = read(dir + "/hidden/profiles/nss.yaml");
  for (const char* line : {"conv_groups: [standard]", "max_input_elements: "})
    EXPECT_NE(nss.find(line), std::string::npos) << line << "\n" << nss;
  // Conv's kernel: the smoke spec has 1, 3, 7, 9: the bound is 3.
  EXPECT_NE(nss.find("max_kernel: 3"), std::string::npos) << nss;
  EXPECT_EQ(nss.find("dtypes: [bf16, i8]  # the data types of its running points\n    note: \"Add"), std::string::npos);

  const auto b = run_cmd(gen() + " probe --spec " + config("probe/smoke.yaml") + " --skip-executors css,host -o " +
                         dir + "/builtin");
  ASSERT_EQ(b.code, 0) << b.output;
  const auto d = run_cmd(gen() + " probe diff " + dir + "/builtin " + dir + "/hidden --json");
  ASSERT_EQ(d.code, 0) << d.output;
  const auto j = nlohmann::json::parse(d.output);
  // Kernel 7 Convs ran under nss.yaml and fail under the hidden one: A's
  // rule accepted them (group ""); int8 Adds fail now (dtypes).
  ASSERT_TRUE(j.contains("changed")) << d.output;
  int changed = 0;
  for (const auto& [key, points] : j["changed"].items()) changed += static_cast<int>(points.size());
  EXPECT_GT(changed, 0) << d.output;
  const auto same = run_cmd(gen() + " probe diff " + dir + "/hidden " + dir + "/hidden");
  ASSERT_EQ(same.code, 0) << same.output;
}

// A killed probe keeps what finished: run again, it runs only the rest.
TEST(Probe, AKilledProbeResumesWithWhatItFinished) {
  const std::string dir = fresh_dir("probe_kill_" + std::to_string(getpid()));
  const std::string cmd = gen() + " probe --spec " + config("probe/default.yaml") +
                          " --skip-executors css,host -j 1 -o " + dir + "/out";
  const auto killed = run_cmd("timeout -s KILL 6 " + cmd);
  EXPECT_EQ(killed.code, 128 + SIGKILL) << killed.output;
  const auto again = run_cmd(cmd);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_GT(jobs_resumed(again.output), 0) << again.output;
  const auto [ex, n] = explained(again.output, "nss");
  EXPECT_EQ(jobs_run(again.output) + jobs_resumed(again.output), n) << again.output;
}

TEST(Probe, ABadSpecIsAnErrorWithItsLocationAndNoJobRuns) {
  const std::string dir = fresh_dir("probe_bad_" + std::to_string(getpid()));
  std::ofstream(dir + "/bad.yaml") << "seed: 1\nops:\n  Conv:\n    axes: {kernal: [3]}\n";
  const auto r = run_cmd(gen() + " probe --spec " + dir + "/bad.yaml -o " + dir + "/out");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find(dir + "/bad.yaml:4:12: unknown axis 'kernal' of Conv (did you mean 'kernel'?)"),
            std::string::npos)
      << r.output;
  const auto none = run_cmd(gen() + " probe -o " + dir + "/out");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.output.find("probe needs --spec FILE"), std::string::npos) << none.output;
  const auto tc = run_cmd(gen() + " probe --spec " + config("probe/smoke.yaml") + " --backend toolchain -o " + dir);
  EXPECT_EQ(tc.code, 2);
  EXPECT_NE(tc.output.find("--backend toolchain needs --toolchain"), std::string::npos) << tc.output;
}

// The toolchain backend through the strict stand-in toolchain (torq-sim's
// torq-compile / torq-run-module): a refused Conv is a compile error of
// the real tools' form, learned from like any error, and the refinement
// round finds the kernel limit between the spec's 3 and 9.
TEST(Probe, TheToolchainBackendsCompileErrorsAreLearnedFrom) {
  const std::string dir = fresh_dir("probe_tc_" + std::to_string(getpid()));
  std::ofstream(dir + "/spec.yaml") << "seed: 7\ndtypes: [bf16]\nrefine: 1\nops:\n  Conv:\n"
                                       "    axes: {kernel: [3, 9], groups: [1, 2]}\n";
  const auto r = run_cmd(gen() + " probe --spec " + dir + "/spec.yaml --backend toolchain --toolchain " +
                         config("toolchains/standin.yaml") + " --skip-executors css,host -o " + dir + "/out");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto [ex, n] = explained(r.output, "nss");
  EXPECT_EQ(ex, n) << r.output;
  EXPECT_EQ(n, 8) << r.output;  // 3 points, 5 refinement points (kernel 4..8)
  // The job budget is the toolchain file's steps' (300 + 300 + 240 s) and a second, as discover's.
  EXPECT_NE(r.output.find("job budget 841 s"), std::string::npos) << r.output;
  const std::string csv = read(dir + "/out/probe.csv");
  EXPECT_NE(csv.find(",nss,error,compile,\"compile step (torq-sim torq-compile) exited with status 1"), std::string::npos)
      << csv;
  const std::string nss = read(dir + "/out/profiles/nss.yaml");
  EXPECT_NE(nss.find("max_kernel: 7"), std::string::npos) << nss;
  EXPECT_NE(nss.find("conv_groups: [standard]"), std::string::npos) << nss;
}
