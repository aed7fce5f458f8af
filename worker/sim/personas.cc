#include "worker/sim/personas.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <cstdio>
#include <fstream>
#include <optional>
#include <thread>
#include <sstream>
#include <stdexcept>

#include <onnx/onnx_pb.h>

#include "pipeline/model/mlir.h"
#include "pipeline/core/types.h"
#include "pipeline/base/error.h"
#include "worker/engine/session.h"
#include "worker/sim/assigned_module.h"
#include "worker/sim/persona_probes.h"
#include "worker/sim/persona_profiling.h"
#include "worker/sim/sim_backend.h"
#include "worker/toolchain/raw_tensor.h"

namespace torq::sim {

namespace {

using engine::EngineError;
using engine::ErrorKind;
using pipeline::Executor;

constexpr const char* kMagic = "TORQ-STANDIN-MODULE 1";

// Bad usage: exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void spill(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  if (!f) throw std::runtime_error(path + ": cannot write");
}

// "--key=value" -> value when arg starts with "--key=".
std::optional<std::string> value_of(const std::string& arg, const std::string& key) {
  const std::string p = key + "=";
  if (arg.rfind(p, 0) == 0) return arg.substr(p.size());
  return std::nullopt;
}

engine::SessionOptions options_for(Executor e, engine::Rounding rounding) {
  engine::SessionOptions so;
  so.threads = 1;
  so.rounding = rounding;
  so.profile = profile_for(e);
  return so;
}

// --- import ---

int import_persona(const std::vector<std::string>& args) {
  std::string in, out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" && i + 1 < args.size()) out = args[++i];
    else if (args[i] == "--data-prop") continue;
    else if (!args[i].empty() && args[i][0] == '-') throw UsageError("unknown option " + args[i]);
    else if (in.empty()) in = args[i];
    else throw UsageError("more than one input file: " + args[i]);
  }
  if (in.empty() || out.empty()) throw UsageError("usage: torq-import-onnx MODEL.onnx -o OUT.mlir [--data-prop]");
  const std::string bytes = slurp(in);
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) throw std::runtime_error(in + ": not an ONNX model");
  spill(out, pipeline::emit_torch_mlir(m));
  spill(out + ".onnx", bytes);
  return 0;
}

// --- compile ---

// torq-compile --torq-hw (the real TorqHw parser): exactly "SL2610", or a
// custom "hw_id:lram_kb:slices:css:nss[:dma[:factor:triple:cpu:features]]"
// spec of 5 to 10 fields with numeric id, LRAM size and slice count.
// Anything else is refused as the real option parser refuses it.
bool valid_torq_hw(const std::string& v) {
  if (v == "SL2610") return true;
  std::vector<std::string> f;
  for (size_t p = 0;;) {
    const size_t q = v.find(':', p);
    f.push_back(v.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (f.size() < 5 || f.size() > 10) return false;
  auto number = [](const std::string& s, int base) {
    if (s.empty()) return false;
    char* end = nullptr;
    std::strtoull(s.c_str(), &end, base);
    return *end == '\0';
  };
  return number(f[0], 0) && number(f[1], 10) && number(f[2], 10) && !f[3].empty() && !f[4].empty();
}

// The options of the real torq-compile (and the MLIR/IREE ones the real
// tool's harness passes) that the stand-in knows; any other option is
// refused, as LLVM's option parser refuses an unknown one.
bool known_compile_flag(const std::string& a) {
  static const char* kValued[] = {"--torq-target-host-triple", "--torq-target-host-cpu",
                                  "--torq-target-host-cpu-features", "--mlir-print-ir-tree-dir",
                                  "--mlir-elide-elementsattrs-if-larger", "--dump-compilation-phases-to",
                                  "--torq-debug-info"};
  static const char* kBare[] = {"--torq-css-qemu", "--mlir-print-ir-after-all", "--torq-fallback-f32-to-host"};
  for (const char* k : kValued)
    if (value_of(a, k)) return true;
  for (const char* k : kBare)
    if (a == k) return true;
  return false;
}

struct CompileArgs {
  std::string in, out, chip = "SL2610", profile_csv, executor_map, ir_tree_dir;
  bool ir_after_all = false;
  bool disable[3] = {false, false, false};  // by Executor
  bool profiling = false;
  engine::Rounding rounding = engine::Rounding::kTruncate;
  // stand_in_latency (toolchain_config.h), from the environment: what this
  // compile takes on top of its work, and what the module's runs take (-1: none).
  int64_t latency_ms = 0, run_latency_ms = -1;
};

// A latency variable of the environment in ms, or `none` when unset.
int64_t latency_env(const char* name, int64_t none) {
  const char* v = std::getenv(name);
  if (!v) return none;
  char* end = nullptr;
  const long long ms = std::strtoll(v, &end, 10);
  if (!*v || *end || ms < 0 || ms > 3600000)
    throw UsageError(std::string(name) + " must be a whole number of ms in [0, 3600000], got '" + v + "'");
  return ms;
}

// The module header's line for its runs' latency ("" without one).
std::string run_latency_line(const CompileArgs& c) {
  return c.run_latency_ms < 0 ? std::string() : "\nrun_latency_ms " + std::to_string(c.run_latency_ms);
}

CompileArgs parse_compile(const std::vector<std::string>& args) {
  CompileArgs c;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" && i + 1 < args.size()) c.out = args[++i];
    else if (auto v = value_of(a, "--torq-hw")) {
      if (!valid_torq_hw(*v))
        throw UsageError("for the --torq-hw option: expects a valid hardware name (pass 'list' to see available "
                         "types) or a custom hardware specification, got '" + *v + "'");
      c.chip = *v;
    }
    else if (a == "--torq-disable-slices") c.disable[static_cast<int>(Executor::kNss)] = true;
    else if (a == "--torq-disable-css") c.disable[static_cast<int>(Executor::kCss)] = true;
    else if (a == "--torq-disable-host") c.disable[static_cast<int>(Executor::kHost)] = true;
    else if (a == "--torq-enable-profiling") c.profiling = true;
    else if (auto v = value_of(a, "--torq-dump-profiling")) c.profile_csv = *v;
    else if (auto v = value_of(a, "--torq-executor-map")) c.executor_map = *v;
    else if (auto v = value_of(a, "--mlir-print-ir-tree-dir")) c.ir_tree_dir = *v;
    else if (a == "--mlir-print-ir-after-all") c.ir_after_all = true;
    else if (known_compile_flag(a))
      std::fprintf(stderr, "note: torq-compile (stand-in): %s has no effect on the stand-in\n", a.c_str());
    else if (!a.empty() && a[0] == '-')
      throw UsageError("Unknown command line argument '" + a + "'.  Try: 'torq-compile --help'");
    else if (c.in.empty()) c.in = a;
    else throw UsageError("more than one input file: " + a);
  }
  if (c.in.empty() || c.out.empty()) throw UsageError("usage: torq-compile IN.mlir -o OUT.vmfb --torq-hw=CHIP ...");
  if (!c.profile_csv.empty() && !c.profiling) throw UsageError("--torq-dump-profiling needs --torq-enable-profiling");
  // The job's bf16 rounding: the environment, never an option (the real
  // compiler has none).
  if (const char* r = std::getenv("TORQ_FARM_BF16_ROUNDING")) {
    if (std::string(r) != "rne" && std::string(r) != "truncate")
      throw UsageError(std::string("TORQ_FARM_BF16_ROUNDING must be rne or truncate, got '") + r + "'");
    c.rounding = std::string(r) == "rne" ? engine::Rounding::kNearestEven : engine::Rounding::kTruncate;
  }
  c.latency_ms = latency_env("TORQ_FARM_STANDIN_COMPILE_MS", 0);
  c.run_latency_ms = latency_env("TORQ_FARM_STANDIN_RUN_MS", -1);
  return c;
}

// Loads `bytes` under e's profile and runs it once on zeros: nullopt when
// the profile accepts it (stats in *st), else the profile's reason.
std::optional<std::string> check_under(const std::string& bytes, Executor e, engine::Rounding rounding,
                                       engine::RunStats* st) {
  try {
    auto s = engine::Session::from_bytes(bytes, options_for(e, rounding));
    std::vector<engine::Tensor> zeros;
    for (const auto& in : s->inputs()) {
      engine::Shape shape;
      for (int64_t d : in.dims) shape.push_back(d < 0 ? 1 : d);
      zeros.push_back(engine::Tensor::zeros(in.dtype, shape));
    }
    try {
      s->run(zeros);
      *st = s->last_stats();
    } catch (const EngineError& ex) {
      if (ex.kind() == ErrorKind::kUnsupported) return std::string(ex.what());
      // Anything else depends on the values: the run decides.
    }
    return std::nullopt;
  } catch (const EngineError& ex) {
    return std::string(ex.what());
  }
}

// A module of the whole model with the executor map applied (assigned_module.h):
// the map keyed on the operators of the MLIR compiled; the module checked
// once on zeros, an assigned executor that refuses its op failing the
// compile as the real compiler fails.
int compile_assigned(const CompileArgs& c, const std::string& function, const std::string& bytes) {
  std::vector<std::optional<Executor>> assignment;
  onnx::ModelProto model;
  model.ParseFromString(bytes);
  try {
    assignment = apply_executor_map(slurp(c.executor_map), slurp(c.in), pipeline::non_constant_op_types(model).size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: --torq-executor-map=%s: %s\n", c.in.c_str(), c.executor_map.c_str(), e.what());
    return 1;
  }
  AssignedRun check;
  try {
    std::vector<engine::Tensor> zeros;
    auto s = engine::Session::from_bytes(bytes, options_for(Executor::kHost, c.rounding));
    for (const auto& in : s->inputs()) {
      engine::Shape shape;
      for (int64_t d : in.dims) shape.push_back(d < 0 ? 1 : d);
      zeros.push_back(engine::Tensor::zeros(in.dtype, shape));
    }
    check = run_assigned_module(model, assignment, c.rounding, zeros);
  } catch (const EngineError& ex) {
    if (ex.kind() == ErrorKind::kUnsupported || ex.kind() == ErrorKind::kInvalidInput) {
      std::fprintf(stderr, "%s: error: %s\n", c.in.c_str(), ex.what());
      return 1;
    }
    // Anything else depends on the values: the run decides.
  }
  std::string placed;
  for (const auto& a : assignment) placed += a ? pipeline::executor_name(*a)[0] : '-';
  std::ostringstream m;
  m << kMagic << "\nfunction " << function << "\nexecutor host\nassignment " << (placed.empty() ? "none" : placed)
    << "\nchip " << c.chip << "\nrounding " << engine::rounding_name(c.rounding) << run_latency_line(c) << "\nonnx "
    << bytes.size() << "\n" << bytes;
  spill(c.out, m.str());
  if (!c.profile_csv.empty()) {
    const Locations locs = locations_of(c.in, slurp(c.in), model);
    std::vector<Task> tasks;
    for (size_t k = 0; k < check.stats.size() && k < check.placed.size(); ++k)
      for (auto& t : tasks_of(check.stats[k], *profile_for(check.placed[k]), check.placed[k], &locs))
        tasks.push_back(t);
    write_compile_profile(c.profile_csv, tasks);
  }
  return 0;
}

// --mlir-print-ir-after-all --mlir-print-ir-tree-dir=D: the stand-in has one
// "pass", its input, written where MLIR's tree printer puts a module's dump.
void dump_ir(const CompileArgs& c) {
  if (!c.ir_after_all || c.ir_tree_dir.empty()) return;
  const std::string dir = c.ir_tree_dir + "/builtin_module_no-symbol-name";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  spill(dir + "/0_torq-stand-in-input.mlir", slurp(c.in));
}

int compile_persona(const std::vector<std::string>& args) {
  const CompileArgs c = parse_compile(args);
  // A simulated board farm's compile time (issue 32), whatever the outcome.
  std::this_thread::sleep_for(std::chrono::milliseconds(c.latency_ms));
  dump_ir(c);
  // The module's function is the one the import defines.
  const std::string function = pipeline::mlir_text_function_name(slurp(c.in));
  if (function.empty()) {
    std::fprintf(stderr, "%s: error: no func.func in the input\n", c.in.c_str());
    return 1;
  }
  std::string bytes;
  try {
    bytes = slurp(c.in + ".onnx");
  } catch (const std::exception&) {
    std::fprintf(stderr, "%s: error: no %s.onnx beside it (the stand-in compiles what torq-import-onnx wrote)\n",
                 c.in.c_str(), c.in.c_str());
    return 1;
  }
  // The real compiler reads the executor map on its slice path only: with
  // --torq-disable-slices it is never read.
  if (!c.executor_map.empty() && !c.disable[static_cast<int>(Executor::kNss)])
    return compile_assigned(c, function, bytes);
  std::optional<std::string> first_reason;
  for (Executor e : pipeline::kExecutorPriority) {
    if (c.disable[static_cast<int>(e)]) continue;
    engine::RunStats st;
    auto reason = check_under(bytes, e, c.rounding, &st);
    if (reason) {
      if (!first_reason) first_reason = pipeline::executor_name(e) + std::string(": ") + *reason;
      continue;
    }
    std::ostringstream m;
    m << kMagic << "\nfunction " << function << "\nexecutor " << pipeline::executor_name(e) << "\nchip " << c.chip
      << "\nrounding " << engine::rounding_name(c.rounding) << run_latency_line(c) << "\nonnx " << bytes.size()
      << "\n" << bytes;
    spill(c.out, m.str());
    if (!c.profile_csv.empty()) {
      onnx::ModelProto model;
      model.ParseFromString(bytes);
      const Locations locs = locations_of(c.in, slurp(c.in), model);
      write_compile_profile(c.profile_csv, tasks_of(st, *profile_for(e), e, &locs));
    }
    return 0;
  }
  if (!first_reason) first_reason = "every executor is disabled (--torq-disable-slices/-css/-host)";
  std::fprintf(stderr, "%s: error: %s\n", c.in.c_str(), first_reason->c_str());
  return 1;
}

// --- run-module ---

struct Module {
  std::string function;
  std::optional<std::vector<std::optional<Executor>>> assignment;  // a module compiled with an executor map
  Executor executor = Executor::kHost;
  engine::Rounding rounding = engine::Rounding::kTruncate;
  int64_t run_latency_ms = 0;  // stand_in_latency's run time, from the compile
  std::string onnx;
};

Module load_module(const std::string& path) {
  const std::string bytes = slurp(path);
  std::istringstream in(bytes);
  std::string line, key, value;
  if (!std::getline(in, line) || line != kMagic) throw std::runtime_error(path + ": not a stand-in module");
  Module m;
  while (std::getline(in, line)) {
    std::istringstream kv(line);
    kv >> key >> value;
    if (key == "function") m.function = line.substr(9);  // the rest of the line: a name may hold spaces
    else if (key == "assignment") {
      m.assignment.emplace();
      for (char ch : value == "none" ? std::string() : value)
        m.assignment->push_back(ch == 'n' ? std::optional<Executor>(Executor::kNss)
                                : ch == 'c' ? std::optional<Executor>(Executor::kCss)
                                : ch == 'h' ? std::optional<Executor>(Executor::kHost) : std::nullopt);
    }
    else if (key == "executor") m.executor = *pipeline::executor_from_name(value);
    else if (key == "run_latency_ms") m.run_latency_ms = std::stoll(value);
    else if (key == "rounding") m.rounding = value == "truncate" ? engine::Rounding::kTruncate : engine::Rounding::kNearestEven;
    else if (key == "onnx") {
      const size_t n = std::stoull(value);
      const auto at = static_cast<size_t>(in.tellg());
      if (at + n != bytes.size()) throw std::runtime_error(path + ": truncated module");
      m.onnx = bytes.substr(at, n);
      return m;
    }
  }
  throw std::runtime_error(path + ": truncated module");
}

struct RunArgs {
  std::string module, function, hw_type, host_profile;
  std::vector<std::string> inputs, outputs, expected;
};

RunArgs parse_run(const std::vector<std::string>& args) {
  RunArgs r;
  for (const auto& a : args) {
    if (auto v = value_of(a, "--module")) r.module = *v;
    else if (auto v = value_of(a, "--function")) r.function = *v;
    else if (auto v = value_of(a, "--torq_hw_type")) {
      if (*v != "sim" && *v != "astra_machina" && *v != "aws_fpga" && *v != "soc_fpga")
        throw UsageError("--torq_hw_type takes sim, astra_machina, aws_fpga or soc_fpga, got '" + *v + "'");
      r.hw_type = *v;
    }
    else if (auto v = value_of(a, "--input")) r.inputs.push_back(*v);
    else if (auto v = value_of(a, "--output")) {
      if (v->rfind("@", 0) != 0) throw UsageError("--output takes @FILE, got " + *v);
      r.outputs.push_back(v->substr(1));
    } else if (auto v = value_of(a, "--expected_output")) r.expected.push_back(*v);
    else if (auto v = value_of(a, "--torq_profile_host")) r.host_profile = *v;
    else if (value_of(a, "--device")) continue;
    else if (a.rfind("--torq_", 0) == 0) std::fprintf(stderr, "warning: torq-run-module (stand-in): ignoring %s\n", a.c_str());
    else throw UsageError("unknown argument " + a);
  }
  if (r.module.empty() || r.function.empty())
    throw UsageError("usage: torq-run-module --module=M.vmfb --function=F --input=SHAPExDTYPE=@FILE... --output=@FILE...");
  return r;
}

// iree-run-module's --expected_output=TYPE=@FILE check: floats within the
// runner's default thresholds (f16 1e-3, f32 and f64 1e-4 absolute; bf16
// 1e-2), anything else exact. Prints [SUCCESS] or [FAILED] and returns
// the exit code.
int check_expected(const RunArgs& a, const std::vector<engine::Tensor>& outs) {
  if (a.expected.size() != outs.size())
    throw UsageError("the function returns " + std::to_string(outs.size()) + " results, " +
                     std::to_string(a.expected.size()) + " --expected_output given");
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string& spec = a.expected[i];
    const size_t eq = spec.find("=@");
    if (eq == std::string::npos) throw UsageError("--expected_output takes TYPE=@FILE, got " + spec);
    const toolchain::TensorType t = toolchain::parse_iree_type(spec.substr(0, eq));
    const engine::Tensor want = toolchain::read_raw(spec.substr(eq + 2), t.dtype, t.shape);
    if (want.dtype() != outs[i].dtype() || want.numel() != outs[i].numel()) {
      std::printf("[FAILED] result[%zu]: type %s, expected %s\n", i,
                  toolchain::iree_type(outs[i].dtype(), outs[i].shape()).c_str(), spec.substr(0, eq).c_str());
      return 1;
    }
    const engine::Tensor got = engine::cast_tensor(outs[i], engine::DType::kF64, engine::Rounding::kNearestEven);
    const engine::Tensor exp = engine::cast_tensor(want, engine::DType::kF64, engine::Rounding::kNearestEven);
    const double tol = want.dtype() == engine::DType::kF16 ? 1e-3 : want.dtype() == engine::DType::kBF16 ? 1e-2
                       : engine::is_float(want.dtype()) ? 1e-4 : 0.0;
    for (int64_t k = 0; k < got.numel(); ++k) {
      const double x = got.data<double>()[k], y = exp.data<double>()[k];
      if ((std::isnan(x) && std::isnan(y)) || x == y || std::fabs(x - y) <= tol) continue;
      std::printf("[FAILED] result[%zu]: element at index %lld (%g) does not match the expected (%g)\n", i,
                  static_cast<long long>(k), x, y);
      return 1;
    }
  }
  std::printf("[SUCCESS] all function outputs matched their expected values.\n");
  return 0;
}

// The feeds the --input arguments give, checked against the session.
std::vector<engine::Tensor> read_inputs(const RunArgs& a, const engine::Session& s) {
  if (a.inputs.size() != s.inputs().size())
    throw UsageError("the function takes " + std::to_string(s.inputs().size()) + " inputs, " +
                     std::to_string(a.inputs.size()) + " given");
  std::vector<engine::Tensor> feeds;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const std::string& spec = a.inputs[i];
    const size_t eq = spec.find("=@");
    if (eq == std::string::npos) throw UsageError("--input takes SHAPExDTYPE=@FILE, got " + spec);
    toolchain::TensorType t;
    try {
      t = toolchain::parse_iree_type(spec.substr(0, eq));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("input ") + std::to_string(i) + ": " + e.what());
    }
    const auto& want = s.inputs()[i];
    bool same = t.dtype == want.dtype && t.shape.size() == want.dims.size();
    for (size_t d = 0; same && d < t.shape.size(); ++d) same = want.dims[d] < 0 || want.dims[d] == t.shape[d];
    if (!same) throw UsageError("input " + std::to_string(i) + ": the function takes " + engine::dtype_name(want.dtype) +
                                " of rank " + std::to_string(want.dims.size()) + ", got " + spec.substr(0, eq));
    feeds.push_back(toolchain::read_raw(spec.substr(eq + 2), t.dtype, t.shape));
  }
  return feeds;
}

int run_persona_impl(const std::vector<std::string>& args) {
  const RunArgs a = parse_run(args);
  const Module m = load_module(a.module);
  // IREE resolves --function against the module's exports.
  if (a.function != m.function)
    throw std::runtime_error("NOT_FOUND; function '" + a.function + "' not found in module '" + a.module +
                             "' (it exports '" + m.function + "')");
  // A simulated board farm's run time (issue 32), written by the compile.
  std::this_thread::sleep_for(std::chrono::milliseconds(m.run_latency_ms));
  auto s = engine::Session::from_bytes(m.onnx, options_for(m.executor, m.rounding));
  const auto feeds = read_inputs(a, *s);
  if (a.outputs.size() != s->outputs().size() && !(a.outputs.empty() && !a.expected.empty()))
    throw UsageError("the function returns " + std::to_string(s->outputs().size()) + " results, " +
                     std::to_string(a.outputs.size()) + " --output given");
  if (m.assignment) {  // compiled with an executor map: node by node, each on its executor
    onnx::ModelProto model;
    model.ParseFromString(m.onnx);
    const AssignedRun run = run_assigned_module(model, *m.assignment, m.rounding, feeds);
    for (size_t i = 0; i < run.outputs.size(); ++i) toolchain::write_raw(run.outputs[i], a.outputs[i]);
    if (!a.host_profile.empty()) {
      std::vector<Task> tasks;
      for (size_t k = 0; k < run.stats.size(); ++k)
        for (auto& t : tasks_of(run.stats[k], *profile_for(run.placed[k]), run.placed[k])) tasks.push_back(t);
      write_host_profile(a.host_profile, tasks);
    }
    return 0;
  }
  const auto outs = s->run(feeds);
  for (size_t i = 0; i < outs.size() && i < a.outputs.size(); ++i) toolchain::write_raw(outs[i], a.outputs[i]);
  if (!a.host_profile.empty()) write_host_profile(a.host_profile, tasks_of(s->last_stats(), *profile_for(m.executor), m.executor));
  return a.expected.empty() ? 0 : check_expected(a, outs);
}

}  // namespace

bool is_persona(const std::string& name) {
  return name == "torq-compile" || name == "torq-run-module" || name == "torq-import-onnx";
}

int run_persona(const std::string& name, const std::vector<std::string>& args) {
  try {
    if (name == "torq-import-onnx") {
      if (const auto rc = import_probe(args)) return *rc;
      return import_persona(args);
    }
    if (name == "torq-compile") {
      if (const auto rc = compile_probe(args)) return *rc;
      return compile_persona(args);
    }
    if (name == "torq-run-module") {
      if (const auto rc = run_probe(args)) return *rc;
      return run_persona_impl(args);
    }
    std::fprintf(stderr, "error: unknown persona %s\n", name.c_str());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), e.what());
    return 1;
  }
}

}  // namespace torq::sim
