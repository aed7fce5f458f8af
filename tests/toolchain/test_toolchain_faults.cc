// Hostile or broken toolchains (issue 60, finding 6), through the real
// binaries: torq-worker --check-backend, torq-gen-config discover and
// torq-coordinator --spec with toolchain files whose tools are wrapper
// scripts around torq-sim's stand-in personas that misbehave one way each.
// Each fault must land in its class: a compile that exits 0 without a
// module is the compile's failure, a work dir removed under the job is
// infrastructure (requeued), an output of the wrong size is the run's
// error with both sizes, and a tool that cannot run is refused up front.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/toolchain/toolchain_helpers.h"
#include "worker/sim/demo_model.h"

namespace torq::test {
namespace {

// An executable shell script at dir/name.
std::string script(const std::string& dir, const std::string& name, const std::string& body) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

// dir/tc.yaml: the stand-in toolchain with `step`'s argv starting with
// `program` (a path) in place of torq-sim's persona. False if the stand-in
// file's step is not where it was.
bool standin_with(const std::string& dir, const std::string& step, const std::string& persona,
                  const std::string& program) {
  std::string yaml = slurp(standin_yaml());
  const std::string from = step + ":\n  argv: [\"{torq_sim}\", " + persona + ",";
  if (yaml.find(from) == std::string::npos) return false;
  yaml.replace(yaml.find(from), from.size(), step + ":\n  argv: [\"" + program + "\",");
  std::ofstream(dir + "/tc.yaml") << yaml;
  return true;
}

// The first lines of a wrapper: the probe flags go to the persona it wraps,
// which answers them as the real tool does.
std::string answers_probes(const std::string& persona) {
  return "case \"$1\" in --version|--help) exec \"" + bin("torq-sim") + "\" " + persona + " \"$1\";; esac\n";
}

std::string demo_in(const std::string& dir) {
  const std::string model = dir + "/demo.onnx";
  std::ofstream(model, std::ios::binary) << sim::build_demo_model();
  return model;
}

struct ToolchainFaults : ::testing::Test {
  std::string dir;
  void SetUp() override {
    dir = fresh_dir(std::string("toolchain-faults/") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    setenv("TORQ_SIM_BIN", bin("torq-sim").c_str(), 1);
  }
};

// (a) A compile that exits 0 and writes no module: the compile failed. In a
// matrix run every layer then fails on every executor at its compile, so
// the test is FAILED_COMPILATION (it was FAILED_RUNTIME: the run step found
// no module).
TEST_F(ToolchainFaults, ACompileThatExitsZeroWithoutAModuleIsTheCompilesFailure) {
  demo_in(dir);
  const std::string tool = script(dir, "silent-compile", answers_probes("torq-compile") + "exit 0");
  ASSERT_TRUE(standin_with(dir, "compile", "torq-compile", tool));
  std::ofstream(dir + "/spec.yaml") << "models: [demo.onnx]\ntargets: {tools: {toolchain: " << dir << "/tc.yaml}}\n";
  const auto m = run_cmd("timeout 600 " + bin("torq-coordinator") + " --spec " + dir + "/spec.yaml --export " + dir +
                         "/out --local-workers 1 --heartbeat-ms 200");
  EXPECT_EQ(m.code, 1) << m.output;
  const auto summary = read_json(dir + "/out/summary.json");
  ASSERT_EQ(summary["tests"].size(), 1u) << summary.dump();
  const auto& t = summary["tests"][0];
  EXPECT_EQ(t["outcome"], "failed") << t.dump();
  EXPECT_EQ(t["bringup_status"], "FAILED_COMPILATION") << t.dump();
  const std::string msg = t["message"].get<std::string>();
  EXPECT_NE(msg.find("compile: silent-compile exited 0 but wrote no module at /"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/model.vmfb"), std::string::npos) << msg;
  // Each op's result says the same, as the compile's error.
  const auto rep = read_json(dir + "/out/reports/" + t["id"].get<std::string>() + "/torq_gen_config_demo.json");
  for (const auto& [id, op] : rep["ops"].items())
    for (const auto& [e, r] : op["executors"].items()) {
      EXPECT_EQ(r["error_class"], "compile") << id << " " << e << ": " << r.dump();
      EXPECT_EQ(r["failure_report"]["type"], "compile") << id << " " << e;
    }
}

// A compile that writes an empty module failed too.
TEST_F(ToolchainFaults, ACompileThatWritesAnEmptyModuleIsTheCompilesFailure) {
  const std::string model = demo_in(dir);
  const std::string tool = script(dir, "empty-compile", answers_probes("torq-compile") +
                                                            "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && : > \"$2\"; "
                                                            "shift; done\nexit 0");
  ASSERT_TRUE(standin_with(dir, "compile", "torq-compile", tool));
  const auto d = discover(model, dir + "/out", "--workers 1 --skip-executors nss,css --backend toolchain --toolchain " +
                                                   dir + "/tc.yaml");
  EXPECT_EQ(d.code, 1) << d.output;
  const auto rep = read_json(dir + "/out/torq_gen_config_demo.json");
  const auto& host = rep["ops"]["Relu_relu1"]["executors"]["host"];
  EXPECT_EQ(host["error_class"], "compile") << host.dump();
  EXPECT_NE(host["failure_report"]["summary"].get<std::string>().find("empty-compile exited 0 but wrote an empty "
                                                                      "module at /"),
            std::string::npos)
      << host.dump();
}

// (b) The job's work dir removed while its run step runs (a /tmp cleaner):
// infrastructure. The job is requeued, not counted as an attempt, and its
// second run is the op's result; nothing of the fault reaches the report.
TEST_F(ToolchainFaults, AWorkDirRemovedUnderTheJobIsInfrastructureAndRequeued) {
  const std::string model = demo_in(dir);
  const std::string marker = dir + "/cleaned";
  const std::string tool =
      script(dir, "cleaner-run", answers_probes("torq-run-module") + "if [ ! -e '" + marker + "' ]; then touch '" +
                                     marker + "'; rm -rf \"$PWD\"; fi\nexec \"" + bin("torq-sim") +
                                     "\" torq-run-module \"$@\"");
  ASSERT_TRUE(standin_with(dir, "run", "torq-run-module", tool));
  const auto d = discover(model, dir + "/out", "--workers 1 --skip-executors nss,css --backend toolchain --toolchain " +
                                                   dir + "/tc.yaml --log-file " + dir + "/log");
  EXPECT_EQ(d.code, 0) << d.output;
  ASSERT_TRUE(std::filesystem::exists(marker)) << "the cleaner never ran";
  const std::string log = slurp(dir + "/log");
  EXPECT_NE(log.find("lost to an infrastructure error on worker local-0 (the job's work dir /"), std::string::npos)
      << log;
  EXPECT_NE(log.find("vanished during the run step (cleaner-run): removed by another process"), std::string::npos)
      << log;
  EXPECT_NE(log.find("requeued, not counted as an attempt"), std::string::npos) << log;
  const auto rep = read_json(dir + "/out/torq_gen_config_demo.json");
  ASSERT_EQ(rep["ops"].size(), 14u);
  for (const auto& [id, op] : rep["ops"].items()) {
    const auto& host = op["executors"]["host"];
    EXPECT_EQ(host["status"], "success") << id << ": " << host.dump();
    EXPECT_EQ(host.value("attempts", 0), 1) << id;
  }
}

// (c) An output twice its expected size (a bf16 output written as if f32)
// is the run step's error, both sizes named; it was read as f32 and
// reported as a `difference`. One byte short is refused the same way.
TEST_F(ToolchainFaults, AnOutputOfTheWrongSizeIsTheRunsErrorWithBothSizes) {
  const std::string model = demo_in(dir);
  for (const std::string how : {"double", "short"}) {
    const std::string fix = how == "double" ? "cat \"$f\" \"$f\" > \"$f.x\"" : "head -c -1 \"$f\" > \"$f.x\"";
    const std::string tool = script(dir, how + "-run",
                                    answers_probes("torq-run-module") + "\"" + bin("torq-sim") +
                                        "\" torq-run-module \"$@\" || exit $?\nfor a in \"$@\"; do case \"$a\" in "
                                        "--output=@*) f=\"${a#--output=@}\"; " + fix + " && mv \"$f.x\" \"$f\";; "
                                        "esac; done");
    ASSERT_TRUE(standin_with(dir, "run", "torq-run-module", tool));
    const std::string out = dir + "/out-" + how;
    const auto d = discover(model, out, "--workers 1 --auto-convert-bf16 --skip-executors nss,css --backend toolchain "
                                        "--toolchain " + dir + "/tc.yaml");
    EXPECT_EQ(d.code, 1) << how << ": " << d.output;
    const auto rep = read_json(out + "/torq_gen_config_demo.json");
    for (const auto& [id, op] : rep["ops"].items()) {
      EXPECT_EQ(op["executors"]["host"]["status"], "error") << how << " " << id;
      EXPECT_EQ(op["executors"]["host"]["error_class"], "runtime") << how << " " << id;
    }
    // Conv_conv1: 1x16x64x64 bf16, 131072 bytes.
    const std::string msg = rep["ops"]["Conv_conv1"]["executors"]["host"]["failure_report"]["summary"];
    const std::string have = how == "double" ? "262144" : "131071";
    EXPECT_NE(msg.find("run step (" + how + "-run) wrote output 0 (out0.bin) of " + have +
                       " bytes, expected 131072 (1x16x64x64xbf16)"),
              std::string::npos)
        << msg;
  }
}

// (d) --check-backend runs each tool once and refuses one that cannot run,
// naming the step, the tool and why; torq-gen-config (whose local workers
// are checked first) refuses the file with the same message.
TEST_F(ToolchainFaults, CheckBackendRefusesAToolThatCannotRun) {
  const std::string model = demo_in(dir);
  std::filesystem::create_directories(dir + "/a-directory");
  std::ofstream(dir + "/empty");
  std::ofstream(dir + "/not-executable") << "#!/bin/sh\nexit 0\n";
  const std::string empty_x = dir + "/empty-x";
  std::ofstream{empty_x};
  chmod(empty_x.c_str(), 0755);
  const struct {
    std::string tool, why;
  } cases[] = {
      {"/dev/zero", "/dev/zero cannot run: it is a character device, not a program"},
      {dir + "/empty", "empty cannot run: it is not executable (mode 0644)"},
      {dir + "/not-executable", "not-executable cannot run: it is not executable (mode 0644)"},
      {dir + "/a-directory", "a-directory cannot run: it is a directory, not a program"},
      {empty_x, "empty-x cannot run: it is an empty file"},
      {dir + "/missing", "missing cannot run: no such file"},
      {script(dir, "silent", "exit 0"), "`" + dir + "/silent --version` exited 0 but printed nothing"},
      {script(dir, "garbage", "echo 'error: libtorq.so: cannot open shared object file' >&2\nexit 127"),
       "`" + dir + "/garbage --version` exited with status 127: error: libtorq.so: cannot open shared object file"},
  };
  for (const auto& c : cases) {
    ASSERT_TRUE(standin_with(dir, "compile", "torq-compile", c.tool));
    const auto w = run_cmd(bin("torq-worker") + " --check-backend --backend toolchain --toolchain " + dir + "/tc.yaml");
    EXPECT_EQ(w.code, 2) << c.tool << ": " << w.output;
    EXPECT_NE(w.output.find("a tool cannot run\ncompile step: "), std::string::npos) << c.tool << ": " << w.output;
    EXPECT_NE(w.output.find(c.why), std::string::npos) << c.tool << ": " << w.output;
  }
  // The last file again, through torq-gen-config: refused before any job.
  const auto d = discover(model, dir + "/out", "--workers 1 --backend toolchain --toolchain " + dir + "/tc.yaml");
  EXPECT_EQ(d.code, 2) << d.output;
  EXPECT_NE(d.output.find("exited with status 127: error: libtorq.so"), std::string::npos) << d.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/out/torq_gen_config_demo.json"));
  // A run tool that cannot run is refused as the run step's.
  ASSERT_TRUE(standin_with(dir, "run", "torq-run-module", "/dev/zero"));
  const auto r = run_cmd(bin("torq-worker") + " --check-backend --backend toolchain --toolchain " + dir + "/tc.yaml");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("run step: /dev/zero cannot run: it is a character device"), std::string::npos) << r.output;
}

// The stand-in passes the probe, each persona answering as its real tool
// does: torq-compile --version (LLVM's parser, IREE's version text, exit 0),
// torq-run-module --help (IREE's runtime flags: usage, exit 0; no --version,
// exit 1), torq-import-onnx --help (argparse, exit 0).
TEST_F(ToolchainFaults, TheStandinAnswersTheProbesAsTheRealTools) {
  const auto w = run_cmd(bin("torq-worker") + " --check-backend --backend toolchain --toolchain " + standin_yaml());
  EXPECT_EQ(w.code, 0) << w.output;
  EXPECT_NE(w.output.find("compile step: `" + bin("torq-sim") + " torq-compile --version`: IREE (https://iree.dev):"),
            std::string::npos)
      << w.output;
  EXPECT_NE(w.output.find("run step: `" + bin("torq-sim") + " torq-run-module --help`: # IREE: torq-run-module"),
            std::string::npos)
      << w.output;
  EXPECT_NE(w.output.find("import step: `" + bin("torq-sim") + " torq-import-onnx --help`: usage: torq-import-onnx"),
            std::string::npos)
      << w.output;
  const std::string standin = std::string(TORQ_BIN_DIR) + "/../standin/";
  const auto v = run_cmd(standin + "torq-compile --version");
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("IREE compiler version "), std::string::npos) << v.output;
  // LLVM's parser exits on --version wherever it is.
  EXPECT_EQ(run_cmd(standin + "torq-compile in.mlir -o out.vmfb --version").code, 0);
  const auto h = run_cmd(standin + "torq-run-module --help");
  EXPECT_EQ(h.code, 0) << h.output;
  EXPECT_NE(h.output.find("--function="), std::string::npos) << h.output;
  const auto nv = run_cmd(standin + "torq-run-module --version");
  EXPECT_EQ(nv.code, 1) << nv.output;
  EXPECT_NE(nv.output.find("flag 'version' not recognized"), std::string::npos) << nv.output;
  const auto i = run_cmd(standin + "torq-import-onnx --help");
  EXPECT_EQ(i.code, 0) << i.output;
  EXPECT_NE(i.output.find("usage: torq-import-onnx"), std::string::npos) << i.output;
}

}  // namespace
}  // namespace torq::test
