// The toolchain backend with real processes: the stand-in personas give the
// sim backend's results, and every error class comes from a real child
// (fake tools written as small shell scripts by the tests).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "tests/toolchain/toolchain_helpers.h"
#include "pipeline/base/error.h"
#include "pipeline/base/toolchain_budget.h"
#include "worker/sim/demo_model.h"
#include "worker/toolchain/toolchain_backend.h"

namespace torq::test {
namespace {

using toolchain::ToolchainBackend;
using toolchain::ToolchainConfig;

// A fake tool: an executable shell script at dir/name.
std::string script(const std::string& dir, const std::string& name, const std::string& body) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

// A one-node model: y = Relu(x), x of shape [1, 8] in `elem` (ONNX type).
onnx::ModelProto relu_model(int elem = onnx::TensorProto::FLOAT) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("relu");
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->set_name("relu0");
  n->add_input("x");
  n->add_output("y");
  for (auto* v : {g->add_input(), g->add_output()}) {
    v->set_name(v == &g->input(0) ? "x" : "y");
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    tt->mutable_shape()->add_dim()->set_dim_value(1);
    tt->mutable_shape()->add_dim()->set_dim_value(8);
  }
  return m;
}

struct Fixture : ::testing::Test {
  std::string dir;
  onnx::ModelProto model = relu_model();
  std::vector<engine::Tensor> feeds;
  void SetUp() override {
    dir = fresh_dir(std::string("toolchain/") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    setenv("TORQ_SIM_BIN", bin("torq-sim").c_str(), 1);
    engine::Tensor x(engine::DType::kF32, {1, 8});
    for (int i = 0; i < 8; ++i) x.data<float>()[i] = static_cast<float>(i) - 4.f;
    feeds = {x};
  }
  // The stand-in toolchain with `overrides` (YAML lines) appended.
  ToolchainConfig config(const std::string& extra_yaml) {
    std::string text = slurp(standin_yaml());
    // Replace whole steps by later keys: the stand-in file's steps are kept
    // unless extra_yaml names them (a YAML file with the key twice is an
    // error, so cut them out).
    for (const char* step : {"import:", "run:"}) {
      if (extra_yaml.find(std::string("\n") + step) == std::string::npos &&
          extra_yaml.rfind(step, 0) != 0)
        continue;
      const size_t at = text.find(std::string("\n") + step);
      const size_t end = text.find("\n  timeout_s:", at);
      text.erase(at, text.find('\n', end + 1) - at);
    }
    const std::string path = dir + "/toolchain.yaml";
    std::ofstream(path) << text << "\n" << extra_yaml;
    return ToolchainConfig::load(path);
  }
  runner::BackendResult run(const ToolchainConfig& c, pipeline::Executor e = pipeline::Executor::kHost,
                            uint32_t timeout_ms = 60000) {
    ToolchainBackend b(c);
    runner::BackendRequest req;
    req.model = &model;
    req.feeds = &feeds;
    req.executor = e;
    req.timeout_ms = timeout_ms;
    req.label = "test";
    return b.run(req);
  }
};

using ToolchainBackendTest = Fixture;

TEST_F(ToolchainBackendTest, StandinRunsTheModelAndReadsRawOutputsBack) {
  const auto r = run(config(""));
  ASSERT_TRUE(r.ok) << r.error_class << ": " << r.error_message;
  EXPECT_TRUE(r.accepted);
  ASSERT_EQ(r.outputs.size(), 1u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r.outputs[0].data<float>()[i], std::max(0.f, static_cast<float>(i) - 4.f));
  EXPECT_GT(r.runtime_ms, 0);
  EXPECT_EQ(r.runs, 1u);
  EXPECT_EQ(r.chip, "SL2610");
}

// The stand-in refuses what the real tools refuse (issue 28), so a wrong
// toolchain file fails here as it would with a Torq release.
TEST_F(ToolchainBackendTest, StandinRefusesALowercaseChipAsTheRealTorqHwParserDoes) {
  auto c = config("");
  c.chip = "sl2610";
  const auto r = run(c);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_class, "compile");
  EXPECT_NE(r.error_message.find("expects a valid hardware name"), std::string::npos) << r.error_message;
  c.chip = "0x1:512:2:coral_v1:nss_v1";  // a custom spec is accepted
  const auto ok = run(c);
  EXPECT_TRUE(ok.ok) << ok.error_class << ": " << ok.error_message;
}

TEST_F(ToolchainBackendTest, StandinRefusesAnOptionTheRealCompilerLacks) {
  auto c = config("");
  c.compiler_options.push_back("--torq-bf16-rounding=rne");
  const auto r = run(c);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_class, "compile");
  EXPECT_NE(r.error_message.find("Unknown command line argument '--torq-bf16-rounding=rne'"), std::string::npos)
      << r.error_message;
}

TEST_F(ToolchainBackendTest, TheRunnerGetsTheImportsFunctionAndAnotherNameIsRefused) {
  // The import names its function after the ONNX graph, quoted when it is
  // no MLIR identifier; the runner is given that name.
  model.mutable_graph()->set_name("torch-jit-export");
  const auto r = run(config(""));
  ASSERT_TRUE(r.ok) << r.error_class << ": " << r.error_message;
  auto c = config("");
  c.function = "main";  // what torq.yaml passed before: no real import has it
  const auto bad = run(c);
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.error_class, "runtime");
  EXPECT_NE(bad.error_message.find("NOT_FOUND; function 'main' not found"), std::string::npos) << bad.error_message;
  EXPECT_NE(bad.error_message.find("exports 'torch-jit-export'"), std::string::npos) << bad.error_message;
}

TEST(ToolchainShippedFiles, RealToolchainFilesPassWhatTheRealToolsAccept) {
  for (const char* f : {"torq.yaml", "torq-astra.yaml"}) {
    const auto c = ToolchainConfig::load(std::string(TORQ_SOURCE_DIR) + "/configs/toolchains/" + f);
    EXPECT_EQ(c.chip, "SL2610") << f;
    EXPECT_TRUE(c.function.empty()) << f << ": the function must come from the import";
    EXPECT_EQ(c.import_step.timeout_s, 300) << f;
    EXPECT_EQ(c.compile_step.timeout_s, 300) << f;
    EXPECT_EQ(c.run_step.timeout_s, 240) << f;
    for (const auto& o : c.compiler_options) EXPECT_EQ(o.find("rounding"), std::string::npos) << f << ": " << o;
    // Each step its own budget, the job their sum (+1 s of staging).
    EXPECT_EQ(c.job_budget_ms(1), 841000u) << f;
    EXPECT_EQ(c.job_budget_ms(3), 1321000u) << f;
    // What a coordinator gives a job of this file: the same budget.
    EXPECT_EQ(base::toolchain_job_budget_ms(std::string(TORQ_SOURCE_DIR) + "/configs/toolchains/" + f, 3), 1321000u)
        << f;
  }
  const auto sim = ToolchainConfig::load(std::string(TORQ_SOURCE_DIR) + "/configs/toolchains/torq.yaml");
  EXPECT_EQ(sim.hw_type, "sim");
  EXPECT_EQ(sim.compiler_options, (std::vector<std::string>{"--torq-target-host-triple=native", "--torq-css-qemu"}));
  const auto astra = ToolchainConfig::load(std::string(TORQ_SOURCE_DIR) + "/configs/toolchains/torq-astra.yaml");
  EXPECT_EQ(astra.hw_type, "astra_machina");
  EXPECT_TRUE(astra.compiler_options.empty());
}

TEST_F(ToolchainBackendTest, ImportFailureIsClassImportWithTheToolsDiagnostic) {
  const std::string tool = script(dir, "bad-import", "echo 'note: reading model' >&2\necho 'error: unsupported opset 99' >&2\nexit 1");
  const auto r = run(config("import:\n  argv: [\"" + tool + "\", \"{onnx}\", -o, \"{mlir}\"]\n  timeout_s: 10\n"));
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.error_class, "import");
  EXPECT_NE(r.error_message.find("error: unsupported opset 99"), std::string::npos) << r.error_message;
  EXPECT_NE(r.error_message.find("exited with status 1"), std::string::npos) << r.error_message;
  EXPECT_EQ(r.error_message.find("model.onnx"), std::string::npos) << "no argv dump: " << r.error_message;
}

TEST_F(ToolchainBackendTest, CompileFailureIsTheStandinRejectingFp32OnNss) {
  const auto r = run(config(""), pipeline::Executor::kNss);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.error_class, "compile");
  EXPECT_NE(r.error_message.find("FP32 not supported on nss"), std::string::npos) << r.error_message;
  EXPECT_NE(r.error_message.find("error:"), std::string::npos) << r.error_message;
}

TEST_F(ToolchainBackendTest, RunFailureIsClassRuntime) {
  const std::string tool = script(dir, "bad-run", "echo 'error: DEVICE_LOST: torq device not responding' >&2\nexit 3");
  const auto r = run(config("run:\n  argv: [\"" + tool + "\", \"--module={vmfb}\", \"--input={shape}x{dtype}=@{in_i}\"]\n  timeout_s: 10\n"));
  EXPECT_TRUE(r.accepted);
  EXPECT_EQ(r.error_class, "runtime");
  EXPECT_NE(r.error_message.find("exited with status 3"), std::string::npos) << r.error_message;
  EXPECT_NE(r.error_message.find("DEVICE_LOST: torq device not responding"), std::string::npos) << r.error_message;
}

TEST_F(ToolchainBackendTest, CrashingToolIsClassCrash) {
  const std::string tool = script(dir, "segv-run", "echo 'about to fall over' >&2\nkill -SEGV $$");
  const auto r = run(config("run:\n  argv: [\"" + tool + "\", \"{vmfb}\"]\n  timeout_s: 10\n"));
  EXPECT_EQ(r.error_class, "crash");
  EXPECT_NE(r.error_message.find("SIGSEGV"), std::string::npos) << r.error_message;
}

bool gone(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  const size_t p = stat.rfind(')');
  return p != std::string::npos && p + 2 < stat.size() && stat[p + 2] == 'Z';
}

TEST_F(ToolchainBackendTest, HungToolTimesOutAndItsProcessGroupIsKilled) {
  // The tool starts a helper in the background, then hangs: both must die.
  const std::string pids = dir + "/pids";
  const std::string tool = script(dir, "hang-run", "sleep 300 &\necho $! > '" + pids + "'\necho $$ >> '" + pids + "'\nsleep 300");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run(config("run:\n  argv: [\"" + tool + "\"]\n  timeout_s: 1\n"));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.error_class, "timeout");
  EXPECT_NE(r.error_message.find("timed out"), std::string::npos) << r.error_message;
  EXPECT_LT(s, 10.0);
  std::ifstream f(pids);
  pid_t helper = 0, shell = 0;
  ASSERT_TRUE(f >> helper >> shell);
  for (int i = 0; i < 100 && !(gone(helper) && gone(shell)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(gone(helper)) << "orphan helper " << helper;
  EXPECT_TRUE(gone(shell)) << "orphan tool " << shell;
}

TEST_F(ToolchainBackendTest, ArgvTemplatesRepeatPerTensorAndNeverGoThroughAShell) {
  // The tool records its argv one per line: a model-controlled name with
  // shell metacharacters arrives as one literal argument.
  const std::string log = dir + "/argv";
  const std::string tool = script(dir, "echo-run", "for a in \"$@\"; do echo \"$a\" >> '" + log + "'; done\nexit 7");
  auto c = config("run:\n  argv: [\"" + tool + "\", \"--function={function}\", \"--input={shape}x{dtype}=@{in_i}\", "
                  "\"--output=@{out_i}\", \"{executor_flags}\"]\n  timeout_s: 10\n");
  c.function = "main; touch /tmp/pwned-$$";
  const auto r = run(c, pipeline::Executor::kCss);
  EXPECT_EQ(r.error_class, "runtime");
  const std::string args = slurp(log);
  EXPECT_NE(args.find("--function=main; touch /tmp/pwned-$$\n"), std::string::npos) << args;
  EXPECT_NE(args.find("--input=1x8xf32=@"), std::string::npos) << args;
  EXPECT_NE(args.find("/in0.bin\n--output=@"), std::string::npos) << args;
  EXPECT_NE(args.find("--torq-disable-slices\n--torq-disable-host\n"), std::string::npos) << args;
}

// Issue 32: the stand-in takes a latency per step from its toolchain file,
// per executor: the compile on the worker's host, the run (wherever it runs:
// the compile writes it into the module). A real toolchain file cannot have it.
TEST_F(ToolchainBackendTest, StandinLatencyIsTakenPerStepAndExecutor) {
  const ToolchainConfig c = config("stand_in_latency:\n  compile_s: 0.4\n  run_s: {host: 1.0}\n");
  EXPECT_EQ(c.standin_compile_s.at(pipeline::Executor::kCss), 0.4);
  EXPECT_EQ(c.standin_run_s.count(pipeline::Executor::kCss), 0u);
  auto t0 = std::chrono::steady_clock::now();
  const auto host = run(c, pipeline::Executor::kHost);
  const double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(host.ok) << host.error_class << ": " << host.error_message;
  EXPECT_GE(host_s, 1.4);
  EXPECT_GE(host.runtime_ms, 1000) << "the run's latency is the run's time";
  t0 = std::chrono::steady_clock::now();
  const auto css = run(c, pipeline::Executor::kCss);
  const double css_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(css.ok) << css.error_class << ": " << css.error_message;
  EXPECT_GE(css_s, 0.4);
  EXPECT_LT(css.runtime_ms, 1000) << "css has no run latency";
  // The outputs are still the model's.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(host.outputs[0].data<float>()[i], std::max(0.f, static_cast<float>(i) - 4.f));
}

TEST(ToolchainConfigTest, StandinLatencyIsOnlyForTheStandinAndIsValidated) {
  auto error_of = [](const std::string& text) {
    try {
      ToolchainConfig::parse(text, "tc.yaml");
    } catch (const engine::EngineError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // The default steps are the real tools'.
  EXPECT_NE(error_of("stand_in_latency: {compile_s: 2}\n").find("tc.yaml:1:"), std::string::npos);
  EXPECT_NE(error_of("stand_in_latency: {compile_s: 2}\n").find("for the stand-in toolchain only"), std::string::npos);
  const std::string standin = slurp(standin_yaml()) + "\n";
  EXPECT_EQ(error_of(standin + "stand_in_latency: {compile_s: 2, run_s: {nss: 0.05, css: 1}}\n"), "(no error)");
  EXPECT_NE(error_of(standin + "stand_in_latency: {run_s: {nss: -1}}\n").find("must be in [0, 3600] seconds"),
            std::string::npos);
  EXPECT_NE(error_of(standin + "stand_in_latency: {compile: 2}\n").find("did you mean 'compile_s'"),
            std::string::npos);
  EXPECT_NE(error_of(standin + "stand_in_latency: {run_s: {npu: 1}}\n").find("unknown key 'npu'"),
            std::string::npos);
}

TEST(ToolchainConfigTest, TypoKeyIsAnErrorWithLineColumnAndHint) {
  try {
    ToolchainConfig::parse("chip: sl2610\ncompile:\n  argv: [torq-compile]\n  timout_s: 5\n", "tc.yaml");
    FAIL() << "no error";
  } catch (const engine::EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("tc.yaml:4:3: unknown key 'timout_s'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("did you mean 'timeout_s'"), std::string::npos) << e.what();
  }
}

TEST(ToolchainConfigTest, ListPlaceholdersMustBeWholeItemsAndShapeNeedsATensor) {
  EXPECT_THROW(ToolchainConfig::parse("compile:\n  argv: [c, \"x{executor_flags}\"]\n", "a.yaml"), engine::EngineError);
  EXPECT_THROW(ToolchainConfig::parse("run:\n  argv: [r, \"--t={shape}\"]\n", "a.yaml"), engine::EngineError);
  EXPECT_THROW(ToolchainConfig::parse("run:\n  argv: [r, \"{in_i}{out_i}\"]\n", "a.yaml"), engine::EngineError);
  EXPECT_THROW(ToolchainConfig::parse("name: [a]\n", "a.yaml"), engine::EngineError);
}

TEST(ToolchainConfigTest, DefaultsAreTheRealToolsCommands) {
  const auto c = ToolchainConfig::parse("", "empty.yaml");
  toolchain::TemplateValues v;
  EXPECT_EQ(c.chip, "SL2610");
  EXPECT_EQ(c.hw_type, "sim");
  EXPECT_TRUE(c.function.empty());
  v.scalars = {{"onnx", "m.onnx"}, {"mlir", "m.mlir"}, {"vmfb", "m.vmfb"}, {"chip", c.chip},
               {"hw_type", c.hw_type}, {"function", "torch_jit"}};
  v.lists["executor_flags"] = c.executor_flags.at(pipeline::Executor::kNss);
  v.inputs = {{"in0.bin", "1x3", "bf16"}, {"in1.bin", "", "i64"}};
  v.outputs = {{"out0.bin", "1x3", "f32"}};
  using V = std::vector<std::string>;
  EXPECT_EQ(toolchain::expand_argv(c.import_step.argv, v),
            (V{"python3", "-m", "iree.compiler.tools.import_onnx", "m.onnx", "-o", "m.mlir", "--data-prop"}));
  EXPECT_EQ(toolchain::expand_argv(c.compile_step.argv, v),
            (V{"torq-compile", "m.mlir", "-o", "m.vmfb", "--torq-hw=SL2610", "--torq-disable-css", "--torq-disable-host"}));
  EXPECT_EQ(toolchain::expand_argv(c.run_step.argv, v),
            (V{"torq-run-module", "--module=m.vmfb", "--function=torch_jit", "--torq_hw_type=sim",
               "--input=1x3xbf16=@in0.bin", "--input=i64=@in1.bin", "--output=@out0.bin"}));
}

TEST(ToolchainCli, BadToolchainFileIsExit2WithLineColumn) {
  const std::string dir = fresh_dir("toolchain/bad-yaml");
  std::ofstream(dir + "/typo.yaml") << "name: x\nchip: sl2610\nrn:\n  argv: [torq-run-module]\n";
  const auto w = run_cmd(bin("torq-worker") + " --stdio --backend toolchain --toolchain " + dir + "/typo.yaml");
  EXPECT_EQ(w.code, 2) << w.output;
  EXPECT_NE(w.output.find("typo.yaml:3:1: unknown key 'rn'"), std::string::npos) << w.output;
  EXPECT_NE(w.output.find("did you mean 'run'"), std::string::npos) << w.output;
  const std::string model = dir + "/demo.onnx";
  std::ofstream(model, std::ios::binary) << sim::build_demo_model();
  const auto d = discover(model, dir + "/out", "--backend toolchain --toolchain " + dir + "/typo.yaml");
  EXPECT_EQ(d.code, 2) << d.output;
  EXPECT_NE(d.output.find("typo.yaml:3:1: unknown key 'rn'"), std::string::npos) << d.output;
  const auto n = discover(model, dir + "/out", "--backend toolchain");
  EXPECT_EQ(n.code, 2) << n.output;
  EXPECT_NE(n.output.find("--backend toolchain needs --toolchain"), std::string::npos) << n.output;
}

// dir/tc.yaml: the stand-in toolchain with its run argv starting with
// `head` (YAML items) instead of torq-sim's torq-run-module, and
// TORQ_SIM_BIN set for its other tools. False if the stand-in's run argv
// is not where it was.
bool write_standin_with_run(const std::string& dir, const std::string& head) {
  std::string yaml = slurp(standin_yaml());
  const std::string from = "run:\n  argv: [\"{torq_sim}\", torq-run-module,";
  if (yaml.find(from) == std::string::npos) return false;
  yaml.replace(yaml.find(from), from.size(), "run:\n  argv: [" + head + ",");
  std::ofstream(dir + "/tc.yaml") << yaml;
  setenv("TORQ_SIM_BIN", bin("torq-sim").c_str(), 1);
  return true;
}

TEST(ToolchainDiscover, DemoMatchesTheSimBackend) {
  const std::string dir = fresh_dir("toolchain/demo-model");
  const std::string model = dir + "/demo.onnx";
  std::ofstream(model, std::ios::binary) << sim::build_demo_model();
  discover_both_and_compare(model, "demo-fp32", "--workers 2");
  discover_both_and_compare(model, "demo-bf16", "--workers 2 --auto-convert-bf16");
}

TEST(ToolchainDiscover, ARunFailureReachesTheReportWithTheToolsDiagnostic) {
  const std::string dir = fresh_dir("toolchain/run-failure");
  const std::string model = dir + "/demo.onnx";
  std::ofstream(model, std::ios::binary) << sim::build_demo_model();
  // The device fails host modules only: the workers' health check (the
  // demo where the compiler decides: css) still passes.
  // (--check-backend's probe, `bad-run --help`, goes to the persona.)
  const std::string tool = script(dir, "bad-run",
                                  "case \"$1\" in --help) exec \"" + bin("torq-sim") + "\" torq-run-module --help;; esac\n"
                                  "if [ \"$1\" = host ]; then echo 'error: HAL_ERROR: out of device memory' >&2; exit 3; fi\n"
                                  "shift\nexec \"" + bin("torq-sim") + "\" torq-run-module \"$@\"");
  ASSERT_TRUE(write_standin_with_run(dir, "\"" + tool + "\", \"{executor}\""));
  const auto d = discover(model, dir + "/out", "--workers 2 --skip-executors nss,css --backend toolchain --toolchain " +
                                                   dir + "/tc.yaml");
  EXPECT_EQ(d.code, 1) << d.output;  // every layer fails everywhere: critical
  const auto rep = read_json(dir + "/out/torq_gen_config_demo.json");
  const auto& host = rep["ops"]["Conv_conv1"]["executors"]["host"];
  EXPECT_EQ(host["status"], "error");
  EXPECT_EQ(host["failure_report"]["type"], "runtime");
  EXPECT_NE(host["failure_report"]["summary"].get<std::string>().find("HAL_ERROR: out of device memory"),
            std::string::npos)
      << host.dump();
}

// The tools run with the caller's GLIBC_TUNABLES, not with the ones a job
// process gets for its own allocator (worker/runner/job_env.h): a
// toolchain's compiler is many threads, which one malloc arena would
// serialise. The stand-in's run tool records what it was started with.
TEST(ToolchainDiscover, TheToolsRunWithTheCallersGlibcTunables) {
  const std::string dir = fresh_dir("toolchain/tunables");
  const std::string model = dir + "/demo.onnx";
  std::ofstream(model, std::ios::binary) << sim::build_demo_model();
  const std::string tool = script(dir, "env-run",
                                  "echo \"GLIBC_TUNABLES=${GLIBC_TUNABLES-(unset)}\" >> \"" + dir + "/seen\"\n"
                                  "exec \"" + bin("torq-sim") + "\" torq-run-module \"$@\"");
  ASSERT_TRUE(write_standin_with_run(dir, "\"" + tool + "\""));
  const std::string flags = "--workers 1 --skip-executors nss,css --backend toolchain --toolchain " + dir + "/tc.yaml";
  auto seen = [&] {
    std::set<std::string> lines;
    std::istringstream in(slurp(dir + "/seen"));
    for (std::string l; std::getline(in, l);) lines.insert(l);
    std::filesystem::remove(dir + "/seen");
    return lines;
  };
  const auto unset = run_cmd("env -u GLIBC_TUNABLES timeout 600 " + bin("torq-gen-config") + " discover --model '" +
                             model + "' --output-dir '" + dir + "/out1' -q " + flags);
  EXPECT_EQ(unset.code, 0) << unset.output;
  EXPECT_EQ(seen(), std::set<std::string>{"GLIBC_TUNABLES=(unset)"});
  const auto set = run_cmd("GLIBC_TUNABLES=glibc.malloc.tcache_count=0 timeout 600 " + bin("torq-gen-config") +
                           " discover --model '" + model + "' --output-dir '" + dir + "/out2' -q " + flags);
  EXPECT_EQ(set.code, 0) << set.output;
  EXPECT_EQ(seen(), std::set<std::string>{"GLIBC_TUNABLES=glibc.malloc.tcache_count=0"});
}

// dir/tc.yaml: the stand-in toolchain whose compile records its argv (one
// line per compile) in dir/compiles before it runs torq-sim's torq-compile.
bool write_standin_recording_compiles(const std::string& dir) {
  std::string yaml = slurp(standin_yaml());
  const std::string from = "compile:\n  argv: [\"{torq_sim}\", torq-compile,";
  if (yaml.find(from) == std::string::npos) return false;
  // (--check-backend's probe, `rec-compile --version`, is no compile.)
  const std::string tool = script(dir, "rec-compile", "[ \"$1\" = --version ] || echo \"$*\" >> \"" + dir +
                                                          "/compiles\"\nexec \"" + bin("torq-sim") +
                                                          "\" torq-compile \"$@\"");
  yaml.replace(yaml.find(from), from.size(), "compile:\n  argv: [\"" + tool + "\",");
  std::ofstream(dir + "/tc.yaml") << yaml;
  setenv("TORQ_SIM_BIN", bin("torq-sim").c_str(), 1);
  return true;
}

// With a toolchain, the report's mlir_location (and so the compiler JSON's
// keys) come from the import that toolchain makes: an importer that writes
// one line more before the function moves every location one line down.
TEST(ToolchainDiscover, LocationsComeFromTheToolchainsOwnImport) {
  const std::string dir = fresh_dir("toolchain/own-import");
  const std::string model = dir + "/demo.onnx";
  std::ofstream(model, std::ios::binary) << sim::build_demo_model();
  std::string yaml = slurp(standin_yaml());
  const std::string from = "import:\n  argv: [\"{torq_sim}\", torq-import-onnx,";
  ASSERT_NE(yaml.find(from), std::string::npos);
  // (--check-backend's probe, `import-plus-one --help`, goes to the persona.)
  const std::string tool = script(dir, "import-plus-one",
                                  "case \"$1\" in --help) exec \"" + bin("torq-sim") + "\" torq-import-onnx --help;; esac\n"
                                  "\"" + bin("torq-sim") + "\" torq-import-onnx \"$@\" || exit $?\n"
                                  "out=$3; { echo '// a header line'; cat \"$out\"; } > \"$out.tmp\" && mv \"$out.tmp\" \"$out\"");
  yaml.replace(yaml.find(from), from.size(), "import:\n  argv: [\"" + tool + "\",");
  std::ofstream(dir + "/tc.yaml") << yaml;
  setenv("TORQ_SIM_BIN", bin("torq-sim").c_str(), 1);
  const auto s = discover(model, dir + "/sim", "--workers 2 --skip-executors nss,css");
  ASSERT_EQ(s.code, 0) << s.output;
  const auto t = discover(model, dir + "/tc", "--workers 2 --skip-executors nss,css --backend toolchain --toolchain " +
                                                  dir + "/tc.yaml");
  ASSERT_EQ(t.code, 0) << t.output;
  const auto a = read_json(dir + "/sim/torq_gen_config_demo.json"), b = read_json(dir + "/tc/torq_gen_config_demo.json");
  size_t checked = 0;
  for (const auto& [id, op] : a["ops"].items()) {
    const std::string la = op["mlir_location"], lb = b["ops"][id]["mlir_location"];
    EXPECT_EQ(std::stoi(lb.substr(0, lb.find(':'))), std::stoi(la.substr(0, la.find(':'))) + 1) << id;
    EXPECT_EQ(lb.substr(lb.find(':')), la.substr(la.find(':'))) << id;
    ++checked;
  }
  EXPECT_GT(checked, 10u);
  EXPECT_EQ(slurp(dir + "/tc/demo.torch.mlir").rfind("// a header line\n", 0), 0u);
}

// `run` with the real tools is the real experiment (issue 28): the whole
// model imported and compiled once with --torq-executor-map=<compiler JSON
// keyed on that import>, no --torq-disable-*, run once, compared.
TEST(ToolchainRun, CompilesTheWholeModelOnceWithTheExecutorMap) {
  const std::string dir = fresh_dir("toolchain/run-whole");
  const std::string model = dir + "/demo.onnx";
  std::ofstream(model, std::ios::binary) << sim::build_demo_model();
  ASSERT_TRUE(write_standin_recording_compiles(dir));
  const std::string tc = " --backend toolchain --toolchain " + dir + "/tc.yaml";
  const auto d = discover(model, dir + "/out", "--workers 2 --auto-convert-bf16" + tc);
  ASSERT_EQ(d.code, 0) << d.output;
  std::filesystem::remove(dir + "/compiles");
  const auto r = run_cmd("timeout 600 " + bin("torq-gen-config") + " run --model '" + model + "' --output-dir '" +
                         dir + "/out' --auto-convert-bf16 --workers 1 --debug-ir " + dir + "/ir" + tc);
  EXPECT_EQ(r.code, 0) << r.output;
  const std::string compiles = slurp(dir + "/compiles");
  std::istringstream lines(compiles);
  std::vector<std::string> argvs;
  for (std::string l; std::getline(lines, l);) argvs.push_back(l);
  ASSERT_EQ(argvs.size(), 1u) << compiles;
  EXPECT_NE(argvs[0].find("--torq-executor-map="), std::string::npos) << argvs[0];
  EXPECT_EQ(argvs[0].find("--torq-disable-"), std::string::npos) << argvs[0];
  EXPECT_NE(argvs[0].find("--torq-hw=SL2610"), std::string::npos) << argvs[0];
  // --debug-ir with a toolchain: the compiler's own IR-dump flags, the dump in DIR.
  EXPECT_NE(argvs[0].find("--mlir-print-ir-after-all --mlir-print-ir-tree-dir=" + dir + "/ir/"), std::string::npos)
      << argvs[0];
  EXPECT_NE(argvs[0].find("--mlir-elide-elementsattrs-if-larger=50"), std::string::npos) << argvs[0];
  EXPECT_NE(r.output.find("debug-ir: " + dir + "/ir/"), std::string::npos) << r.output;
  bool dumped = false;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir + "/ir"))
    dumped = dumped || e.path().extension() == ".mlir";
  EXPECT_TRUE(dumped) << "no IR dump under " << dir << "/ir";
  // The full-model result matches the sim backend's run of the same report.
  const auto rep = read_json(dir + "/out/torq_gen_config_demo.json");
  EXPECT_EQ(rep["full_model"]["status"], "success") << rep["full_model"].dump();
}

// The stand-in applies --torq-executor-map as the real pass does: by
// line:col against the MLIR it compiles. Softmax assigned to nss (which
// refuses it) fails the compile; the same map one line off assigns nothing
// to Softmax, so the compiler places it and the compile passes: an
// off-by-one map misassigns here as it would with the real tools.
TEST(ToolchainRun, TheStandinKeysTheExecutorMapOnTheImportsLineAndColumn) {
  const std::string dir = fresh_dir("toolchain/executor-map");
  std::ofstream(dir + "/demo.onnx", std::ios::binary) << sim::build_demo_model();
  const std::string sim = bin("torq-sim");
  ASSERT_EQ(run_cmd(sim + " torq-import-onnx " + dir + "/demo.onnx -o " + dir + "/demo.mlir").code, 0);
  std::string softmax;
  {
    std::istringstream in(slurp(dir + "/demo.mlir"));
    int no = 0;
    for (std::string l; std::getline(in, l);) {
      ++no;
      if (l.find("\"onnx.Softmax\"") != std::string::npos)
        softmax = std::to_string(no) + ":" + std::to_string(l.find("torch.operator") + 1);
    }
  }
  ASSERT_FALSE(softmax.empty());
  const std::string line = softmax.substr(0, softmax.find(':')), col = softmax.substr(softmax.find(':'));
  auto compile = [&](const std::string& key) {
    std::ofstream(dir + "/map.json") << "{\"op_assignments\": {\"" << key << "\": {\"executor\": \"nss\"}}}\n";
    return run_cmd(sim + " torq-compile " + dir + "/demo.mlir -o " + dir + "/demo.vmfb --torq-hw=SL2610 "
                   "--torq-executor-map=" + dir + "/map.json");
  };
  const auto exact = compile(softmax);
  EXPECT_EQ(exact.code, 1) << exact.output;
  EXPECT_NE(exact.output.find("Softmax"), std::string::npos) << exact.output;
  EXPECT_NE(exact.output.find("on nss"), std::string::npos) << exact.output;
  const auto off = compile(std::to_string(std::stoi(line) + 1) + col);
  EXPECT_EQ(off.code, 0) << off.output;
  // A map that is not JSON fails the compile, as the real pass fails.
  std::ofstream(dir + "/map.json") << "{not json";
  const auto bad = run_cmd(sim + " torq-compile " + dir + "/demo.mlir -o " + dir + "/demo.vmfb --torq-executor-map=" +
                           dir + "/map.json");
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_NE(bad.output.find("--torq-executor-map"), std::string::npos) << bad.output;
}

// Repro bundles (issue 28): a folder per (layer, executor) whose run.sh,
// run in a fresh shell outside the build tree, reproduces the report's
// result: exit 1 with the status and the tool's message for an error,
// exit 0 for a success.
TEST(ReproBundle, ErrorAndSuccessLayersReproduceOutsideTheBuildTree) {
  const std::string dir = fresh_dir("toolchain/repro");
  const std::string model = dir + "/demo.onnx";
  std::ofstream(model, std::ios::binary) << sim::build_demo_model();
  const auto d = discover(model, dir + "/out", "--workers 2 --auto-convert-bf16");
  ASSERT_EQ(d.code, 0) << d.output;
  const auto rep = read_json(dir + "/out/torq_gen_config_demo.json");
  ASSERT_EQ(rep["ops"]["Softmax_probabilities"]["executors"]["nss"]["status"], "error");
  ASSERT_EQ(rep["ops"]["Conv_conv1"]["executors"]["nss"]["status"], "success");
  const std::string outside = "/tmp/torq-repro-test-" + std::to_string(getpid());
  std::filesystem::remove_all(outside);
  auto bundle = [&](const std::string& layer, const std::string& name, const std::string& extra) {
    const auto r = run_cmd(bin("torq-gen-config") + " repro --model '" + model + "' --output-dir '" + dir +
                           "/out' --auto-convert-bf16 " + layer + " --executor nss -o '" + dir + "/" + name + "'" +
                           extra);
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("repro bundle: " + dir + "/" + name), std::string::npos) << r.output;
    for (const char* f : {"model.onnx", "model.mlir", "input_0.bin", "expected_0.bin", "run_module_io_flags.txt",
                          "run.sh", "compare.py", "README.md"})
      EXPECT_TRUE(std::filesystem::exists(dir + "/" + name + "/" + f)) << name << ": " << f;
    // Copied outside the build tree and run in a fresh shell.
    std::filesystem::create_directories(outside);
    std::filesystem::copy(dir + "/" + name, outside + "/" + name, std::filesystem::copy_options::recursive);
    return run_cmd("cd " + outside + " && env -i PATH=/usr/bin:/bin HOME=" + outside + " sh " + outside + "/" + name +
                   "/run.sh");
  };
  const auto err = bundle("Softmax_probabilities", "softmax-nss", "");
  EXPECT_EQ(err.code, 1) << err.output;
  EXPECT_NE(err.output.find("status: error (compile)"), std::string::npos) << err.output;
  EXPECT_NE(err.output.find("Softmax is not supported on nss"), std::string::npos) << err.output;
  const auto ok = bundle("Conv_conv1", "conv-nss", "");
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_NE(ok.output.find("status: success"), std::string::npos) << ok.output;
  const std::string readme = slurp(dir + "/softmax-nss/README.md");
  EXPECT_NE(readme.find("status: **error**"), std::string::npos) << readme;
  EXPECT_NE(readme.find("Softmax is not supported on nss"), std::string::npos) << readme;
  EXPECT_NE(readme.find("torq-gen-config repro"), std::string::npos) << readme;
  // The same layer through the toolchain backend's steps (the stand-in file).
  const auto tc = bundle("Conv_conv1", "conv-nss-toolchain", " --backend toolchain --toolchain " + standin_yaml());
  EXPECT_EQ(tc.code, 0) << tc.output;
  EXPECT_NE(slurp(dir + "/conv-nss-toolchain/run.sh").find("--torq-hw=SL2610"), std::string::npos);
  // A bundle folder is never overwritten; an unknown layer names the closest.
  const auto again = run_cmd(bin("torq-gen-config") + " repro --model '" + model + "' --output-dir '" + dir +
                             "/out' --auto-convert-bf16 Conv_conv1 --executor nss -o '" + dir + "/conv-nss'");
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("not empty"), std::string::npos) << again.output;
  const auto typo = run_cmd(bin("torq-gen-config") + " repro --model '" + model + "' --output-dir '" + dir +
                            "/out' --auto-convert-bf16 Conv_conv --executor nss -o '" + dir + "/typo'");
  EXPECT_EQ(typo.code, 2) << typo.output;
  EXPECT_NE(typo.output.find("Conv_conv1"), std::string::npos) << typo.output;
  std::filesystem::remove_all(outside);
}

}  // namespace
}  // namespace torq::test
