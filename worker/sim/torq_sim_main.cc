// torq-sim: run ONNX models on the functional simulator under an executor
// profile (nss, css, host), and check the engine against ONNX backend tests.
// Invoked as torq-import-onnx / torq-compile / torq-run-module (a symlink),
// or with one of those as its subcommand, it is the stand-in of the real
// Torq tool (worker/sim/personas.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "worker/engine/compare.h"
#include "pipeline/base/error.h"
#include "pipeline/base/file_bytes.h"
#include "worker/engine/session.h"
#include "worker/engine/tensor_io.h"
#include "worker/sim/conformance.h"
#include "worker/sim/demo_model.h"
#include "worker/sim/personas.h"

using namespace torq::engine;

namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs, outputs;
  std::string profile = "host";
  std::string numerics = "model";
  std::string rounding = "rne";
  std::vector<std::string> expect;
  bool per_node = false;
  int threads = 0;
  int bench = 0;
  uint64_t seed = 0;
};

void print_summary(const std::string& name, const Tensor& t) {
  std::printf("  output %-16s %-5s %-18s", name.c_str(), dtype_name(t.dtype()), shape_str(t.shape()).c_str());
  if (t.numel() == 0) {
    std::printf(" (empty)\n");
    return;
  }
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t argmax = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get_as_double(i);
    if (v > hi) argmax = i;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::printf(" min %.6g max %.6g mean %.6g argmax %lld\n", lo, hi, sum / static_cast<double>(t.numel()),
              static_cast<long long>(argmax));
}

int run_model(const RunArgs& a, const std::string& bytes_or_empty) {
  SessionOptions so;
  so.threads = a.threads;
  so.numerics = a.numerics == "bf16" ? Numerics::kBF16 : Numerics::kAsModel;
  so.rounding = a.rounding == "truncate" ? Rounding::kTruncate : Rounding::kNearestEven;
  so.profile = std::make_shared<ExecutorProfile>(ExecutorProfile::resolve(a.profile));
  const auto t0 = std::chrono::steady_clock::now();
  auto session = bytes_or_empty.empty() ? Session::from_file(a.model, so) : Session::from_bytes(bytes_or_empty, so);
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<Tensor> feeds;
  if (a.inputs.empty()) {
    feeds = session->random_inputs(a.seed);
  } else {
    if (a.inputs.size() != session->inputs().size())
      throw EngineError(ErrorKind::kInvalidInput, "model takes " + std::to_string(session->inputs().size()) +
                                                      " inputs, " + std::to_string(a.inputs.size()) + " given");
    for (const auto& f : a.inputs) feeds.push_back(read_tensor_file(f));
  }
  std::printf("model %s: opset %d, %zu nodes, profile %s (%s), numerics %s\n",
              bytes_or_empty.empty() ? a.model.c_str() : "<built-in demo>", session->opset(),
              session->num_nodes(), so.profile->name().c_str(), dtype_name(so.profile->float_type()),
              a.numerics.c_str());
  for (size_t i = 0; i < session->inputs().size(); ++i)
    std::printf("  input  %-16s %-5s %s%s\n", session->inputs()[i].name.c_str(), dtype_name(feeds[i].dtype()),
                shape_str(feeds[i].shape()).c_str(), a.inputs.empty() ? " (seeded random)" : "");
  const auto t1 = std::chrono::steady_clock::now();
  auto outs = session->run(feeds);
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  for (size_t i = 0; i < outs.size(); ++i) print_summary(session->outputs()[i].name, outs[i]);
  const RunStats& st = session->last_stats();
  std::printf("simulated time: %.4f ms (%llu cycles on %s)\n", st.sim_ms,
              static_cast<unsigned long long>(st.sim_cycles), so.profile->name().c_str());
  std::printf("host: load %.2f ms, first run %.2f ms\n", load_ms, first_ms);
  if (a.bench > 0) {
    std::vector<double> times;
    for (int i = 0; i < a.bench; ++i) {
      const auto tb = std::chrono::steady_clock::now();
      session->run(feeds);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tb).count());
    }
    std::sort(times.begin(), times.end());
    std::printf("bench: %d runs, min %.3f ms, median %.3f ms\n", a.bench, times.front(), times[times.size() / 2]);
  }

  for (size_t i = 0; i < a.expect.size() && i < outs.size(); ++i) {
    const TensorDiff m = compare_tensors(outs[i], read_tensor_file(a.expect[i]));
    std::printf("compare output %zu with %s: pcc %.8f max_abs %.6g max_ref %.6g rmse %.6g nan_mismatch %lld\n", i,
                a.expect[i].c_str(), m.pcc, m.max_abs, m.max_ref, m.rmse, static_cast<long long>(m.nan_mismatch));
  }
  if (a.per_node) {
    std::map<std::string, std::pair<double, int>> by_op;
    for (const auto& n : session->last_stats().nodes) {
      by_op[n.op_type].first += n.wall_ms;
      by_op[n.op_type].second += 1;
    }
    for (const auto& [op, v] : by_op) std::printf("  %-20s %4d nodes %9.3f ms\n", op.c_str(), v.second, v.first);
  }
  for (size_t i = 0; i < a.outputs.size() && i < outs.size(); ++i) {
    write_tensor_file(outs[i], a.outputs[i]);
    std::printf("wrote %s\n", a.outputs[i].c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string self = std::filesystem::path(argv[0]).filename().string();
  if (torq::sim::is_persona(self)) return torq::sim::run_persona(self, std::vector<std::string>(argv + 1, argv + argc));
  if (argc > 1 && torq::sim::is_persona(argv[1]))
    return torq::sim::run_persona(argv[1], std::vector<std::string>(argv + 2, argv + argc));
  CLI::App app{"torq-sim: the Torq functional simulator (ONNX engine on oneDNN with nss/css/host profiles)"};
  app.require_subcommand(1);

  RunArgs ra;
  auto* run = app.add_subcommand("run", "Run an ONNX model under an executor profile");
  run->add_option("model", ra.model, "ONNX model file")->required();
  run->add_option("--input,-i", ra.inputs, "Input tensor file (.pb TensorProto or .npy), one per model input, in order");
  run->add_option("--output,-o", ra.outputs, "Write outputs (.pb or .npy), one per model output, in order");
  run->add_option("--profile,-p", ra.profile, "Executor profile: nss, css, host, or a profile YAML path")->capture_default_str();
  run->add_option("--numerics", ra.numerics, "model: types as in the model; bf16: convert fp32 weights/inputs to bf16")
      ->check(CLI::IsMember({"model", "fp32", "bf16"}))->capture_default_str();
  run->add_option("--rounding", ra.rounding, "fp32 -> bf16 rounding: rne or truncate")
      ->check(CLI::IsMember({"rne", "truncate"}))->capture_default_str();
  run->add_option("--threads,-t", ra.threads, "Host threads (0: all cores)")->capture_default_str();
  run->add_option("--expect,-e", ra.expect, "Expected output files: print PCC and max |diff| against them");
  run->add_flag("--per-op", ra.per_node, "Print host time per op type (last run)");
  run->add_option("--bench", ra.bench, "Also time N runs and print min and median host wall time");
  run->add_option("--seed", ra.seed, "Seed for random inputs when no --input is given")->capture_default_str();

  RunArgs da;
  da.profile = "host";
  auto* demo = app.add_subcommand("demo", "Run the built-in demo CNN (no files needed) under a profile");
  demo->add_option("--profile,-p", da.profile, "Executor profile")->capture_default_str();
  demo->add_option("--numerics", da.numerics, "model or bf16")->check(CLI::IsMember({"model", "fp32", "bf16"}))->capture_default_str();
  demo->add_option("--threads,-t", da.threads, "Host threads")->capture_default_str();
  demo->add_option("--bench", da.bench, "Time N runs");
  std::string demo_save;
  demo->add_option("--save", demo_save, "Also write the demo model to this .onnx file");

  torq::sim::ConformanceOptions co;
  std::vector<std::string> roots;
  auto* conf = app.add_subcommand("conformance", "Run ONNX backend-test cases (model.onnx + test_data_set_*) under DIR");
  conf->add_option("dirs", roots, "Directories to search for test cases")->required();
  conf->add_option("--filter,-k", co.filters, "Only cases whose name contains this substring (repeatable)");
  conf->add_option("--profile,-p", co.profile, "Executor profile")->capture_default_str();
  conf->add_option("--rtol", co.rtol, "Relative tolerance")->capture_default_str();
  conf->add_option("--atol", co.atol, "Absolute tolerance")->capture_default_str();
  conf->add_option("--threads,-t", co.threads, "Host threads");
  std::string conf_rounding = "truncate";
  conf->add_option("--rounding", conf_rounding, "fp32 -> bf16 rounding (ONNX 1.12 reference data truncates)")
      ->check(CLI::IsMember({"rne", "truncate"}))->capture_default_str();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*run) return run_model(ra, "");
    if (*demo) {
      std::string bytes = torq::sim::build_demo_model();
      if (!demo_save.empty()) {
        if (const std::string why = torq::base::not_a_writable_file(demo_save); !why.empty())
          throw EngineError(ErrorKind::kInvalidInput, demo_save + ": cannot write: " + why);
        std::ofstream f(demo_save, std::ios::binary);
        f << bytes;
        if (!f) throw EngineError(ErrorKind::kInvalidInput, demo_save + ": cannot write");
      }
      return run_model(da, bytes);
    }
    co.rounding = conf_rounding == "rne" ? Rounding::kNearestEven : Rounding::kTruncate;
    if (*conf) return torq::sim::run_conformance(roots, co, std::cout) == 0 ? 0 : 1;
  } catch (const EngineError& e) {
    std::fprintf(stderr, "torq-sim: error (%s): %s\n", error_kind_name(e.kind()), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torq-sim: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
