#include "worker/toolchain/repro_bundle.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <onnx/onnx_pb.h>

#include "pipeline/model/mlir.h"
#include "worker/toolchain/raw_tensor.h"
#include "worker/toolchain/repro_compare_py.h"

namespace torq::toolchain {
namespace {

namespace fs = std::filesystem;

// Template values that stand for a shell variable of run.sh (marked by var()).
const std::string kVarOpen = "\x01", kVarClose = "\x02";
std::string var(const std::string& name) { return kVarOpen + name + kVarClose; }

// One argv item as a double-quoted shell word: literal text escaped, the
// var() markers as ${NAME}.
std::string shell_word(const std::string& item) {
  std::string out = "\"";
  for (size_t i = 0; i < item.size(); ++i) {
    if (item.compare(i, kVarOpen.size(), kVarOpen) == 0) {
      const size_t end = item.find(kVarClose, i);
      out += "${" + item.substr(i + 1, end - i - 1) + "}";
      i = end;
      continue;
    }
    const char c = item[i];
    if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A single-quoted shell word (for text shown or passed as is).
std::string sq(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void write_text(const std::string& path, const std::string& text, bool executable = false) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw std::runtime_error(path + ": cannot write");
  if (executable) chmod(path.c_str(), 0755);
}

// The step's argv as shell words, its program overridable by `tool_var`
// (a stand-in step's {torq_sim} is $TORQ_SIM already).
std::string step_line(const std::string& name, std::vector<std::string> argv, const std::string& tool_var) {
  std::string line = "step " + name;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i == 0 && argv[0] != var("TORQ_SIM")) {
      line += " \"${" + tool_var + ":-" + shell_word(argv[0]).substr(1, shell_word(argv[0]).size() - 2) + "}\"";
      continue;
    }
    line += " " + shell_word(argv[i]);
  }
  return line + "\n";
}

std::string run_sh(const ReproSpec& s, const runner::JobRunner::LayerCase& c, const std::string& torq_sim) {
  const ToolchainConfig& tc = s.toolchain;
  TemplateValues v;
  v.scalars = {{"onnx", var("HERE") + "/model.onnx"}, {"mlir", var("WORK") + "/model.mlir"},
               {"vmfb", var("WORK") + "/model.vmfb"}, {"workdir", var("WORK")}, {"chip", tc.chip},
               {"hw_type", tc.hw_type}, {"function", tc.function.empty() ? var("FUNC") : tc.function},
               {"executor", pipeline::executor_name(s.executor)}, {"torq_sim", var("TORQ_SIM")},
               {"worker_dir", self_dir()}};
  for (const auto& [name, path] : tc.tools) v.scalars[name] = path;
  v.lists["executor_flags"] =
      tc.executor_flags.count(s.executor) ? tc.executor_flags.at(s.executor) : std::vector<std::string>{};
  v.lists["compiler_options"] = tc.compiler_options;
  std::string compare = "\"$PYTHON\" \"$HERE/compare.py\" --fp-max-tol " + std::to_string(s.tolerance.fp_max_tol) +
                        " --allowed-wrong " + std::to_string(s.tolerance.allowed_wrong);
  for (size_t i = 0; i < c.feeds.size(); ++i)
    v.inputs.push_back({var("HERE") + "/input_" + std::to_string(i) + ".bin", shape_text(c.feeds[i].shape()),
                        iree_dtype_name(c.feeds[i].dtype())});
  for (size_t i = 0; i < c.expected.size(); ++i) {
    const std::string n = std::to_string(i);
    v.outputs.push_back({var("WORK") + "/output_" + n + ".bin", shape_text(c.expected[i].shape()),
                         iree_dtype_name(c.expected[i].dtype())});
    compare += " \"" + iree_type(c.expected[i].dtype(), c.expected[i].shape()) + ":$HERE/expected_" + n +
               ".bin:$WORK/output_" + n + ".bin\"";
  }
  std::ostringstream o;
  o << "#!/bin/sh\n"
    << "# Repro of " << s.layer_id << " on " << pipeline::executor_name(s.executor) << " (" << s.model_name << ", "
    << s.variant << "), made by torq-farm: see README.md.\n"
    << "# The tools: override with TORQ_SIM, IMPORT_TOOL, COMPILE_TOOL, RUN_TOOL; PYTHON runs compare.py;\n"
    << "# WORK keeps the intermediate files (default: a fresh temporary folder).\n"
    << "set -u\n"
    << "HERE=$(cd \"$(dirname \"$0\")\" && pwd)\n"
    << "WORK=${WORK:-$(mktemp -d \"${TMPDIR:-/tmp}/torq-repro.XXXXXX\")}\n"
    << "mkdir -p \"$WORK\"\n"
    << "TORQ_SIM=${TORQ_SIM:-" << sq(torq_sim) << "}\n"
    << "PYTHON=${PYTHON:-python3}\n"
    << "# The job's fp32 -> bf16 rounding (the stand-in reads it; the real tools ignore it).\n"
    << "export TORQ_FARM_BF16_ROUNDING=" << (s.bf16_rne ? "rne" : "truncate") << "\n"
    << "step() {  # CLASS ARGV...: runs one step; on failure prints the status and the tool's message\n"
    << "  class=$1; shift\n"
    << "  echo \"+ $*\" >> \"$WORK/commands.log\"\n"
    << "  \"$@\" > \"$WORK/$class.out\" 2> \"$WORK/$class.err\"\n"
    << "  rc=$?\n"
    << "  [ \"$rc\" -eq 0 ] && return 0\n"
    << "  echo \"status: error ($class): the $class step exited with status $rc\"\n"
    << "  echo \"message:\"\n"
    << "  sed -n '1,20p' \"$WORK/$class.err\" \"$WORK/$class.out\"\n"
    << "  exit 1\n"
    << "}\n";
  o << step_line("import", expand_argv(tc.import_step.argv, v), "IMPORT_TOOL");
  if (tc.function.empty())
    o << "# The runner is given the function the import wrote (named after the ONNX graph).\n"
      << "FUNC=$(sed -n 's/^ *func\\.func @\"\\{0,1\\}\\([^\"(]*\\)\"\\{0,1\\}(.*/\\1/p' \"$WORK/model.mlir\" | head -n 1)\n";
  o << step_line("compile", expand_argv(tc.compile_step.argv, v), "COMPILE_TOOL");
  o << step_line("runtime", expand_argv(tc.run_step.argv, v), "RUN_TOOL");
  o << compare << "\n";
  return o.str();
}

std::string fmt_double(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

std::string readme(const ReproSpec& s, const runner::JobRunner::LayerCase& c) {
  std::ostringstream o;
  o << "# " << s.layer_id << " on " << pipeline::executor_name(s.executor) << "\n\n"
    << "Model `" << s.model_name << "` (" << s.variant << "), layer " << s.layer_index << " `" << s.layer_id
    << "`, executor `" << pipeline::executor_name(s.executor) << "`.\n\n"
    << "## What the report recorded\n\n";
  if (s.status.empty()) {
    o << "Not tested on this executor yet.\n";
  } else {
    o << "- status: **" << s.status << "**\n";
    if (!s.failure_type.empty()) o << "- failure: " << s.failure_type << ": " << s.failure_summary << "\n";
    if (s.max_rel >= 0) o << "- max relative difference " << fmt_double(s.max_rel) << ", max absolute difference "
                          << fmt_double(s.max_abs) << "\n";
    if (!s.toolchain_identity.empty()) o << "- produced by: " << s.toolchain_identity << "\n";
  }
  o << "- tolerance: fp_max_tol " << fmt_double(s.tolerance.fp_max_tol) << ", fp_avg_tol "
    << fmt_double(s.tolerance.fp_avg_tol) << ", allowed_wrong " << fmt_double(s.tolerance.allowed_wrong)
    << " (an element is wrong when |e-o| / (|e|+|o|+1e-6) > fp_max_tol)\n\n"
    << "## Reproduce\n\n"
    << "```sh\nsh run.sh\n```\n\n"
    << "It imports `model.onnx`, compiles it for `" << pipeline::executor_name(s.executor) << "` and runs it on "
    << "`input_*.bin` with the " << (s.backend == "sim" ? "stand-in of the Torq tools (torq-sim's personas, "
                                                           "which give the sim backend's results)"
                                                         : "Torq toolchain `" + s.toolchain.name + "` (" +
                                                               s.toolchain.path + ")")
    << ", then compares the outputs with `expected_*.bin` (the fp32 host reference) by `compare.py`. "
    << "Exit 0: the executor matches the reference; 1: it differs or a step fails (the status and the tool's "
    << "message are printed); 2: the bundle is broken. Point it at other tools with `TORQ_SIM=...`, "
    << "`IMPORT_TOOL=...`, `COMPILE_TOOL=...`, `RUN_TOOL=...`; `WORK=DIR` keeps the intermediate files.\n\n"
    << "## Files\n\n"
    << "- `model.onnx`: the layer alone (constants baked in as initializers)\n"
    << "- `model.mlir`: its import, as iree-import-onnx writes it\n";
  for (size_t i = 0; i < c.feeds.size(); ++i)
    o << "- `input_" << i << ".bin`: " << iree_type(c.feeds[i].dtype(), c.feeds[i].shape()) << "\n";
  for (size_t i = 0; i < c.expected.size(); ++i)
    o << "- `expected_" << i << ".bin`: " << iree_type(c.expected[i].dtype(), c.expected[i].shape()) << " (output `"
      << (i < c.outs.size() ? c.outs[i] : "?") << "`)\n";
  o << "- `run_module_io_flags.txt`: the runner's flags for these files\n\n"
    << "Made by: `" << s.command << "`\n";
  return o.str();
}

}  // namespace

std::vector<std::string> write_repro_bundle(const ReproSpec& s, const runner::JobRunner::LayerCase& c) {
  std::error_code ec;
  if (fs::exists(s.dir) && !fs::is_empty(s.dir, ec))
    throw std::runtime_error(s.dir + ": not empty (a bundle goes into a new folder)");
  fs::create_directories(s.dir, ec);
  if (ec) throw std::runtime_error(s.dir + ": cannot create (" + ec.message() + ")");
  std::vector<std::string> files;
  auto add = [&](const std::string& name) { return files.emplace_back(s.dir + "/" + name); };
  {
    const std::string path = add("model.onnx");
    std::ofstream f(path, std::ios::binary);
    if (!c.model->SerializeToOstream(&f)) throw std::runtime_error(path + ": cannot write");
  }
  write_text(add("model.mlir"), pipeline::emit_torch_mlir(*c.model));
  std::string flags;
  for (size_t i = 0; i < c.feeds.size(); ++i) {
    const std::string name = "input_" + std::to_string(i) + ".bin";
    write_raw(c.feeds[i], add(name));
    flags += "--input=" + iree_type(c.feeds[i].dtype(), c.feeds[i].shape()) + "=@" + name + "\n";
  }
  for (size_t i = 0; i < c.expected.size(); ++i) {
    const std::string name = "expected_" + std::to_string(i) + ".bin";
    write_raw(c.expected[i], add(name));
    flags += "--expected_output=" + iree_type(c.expected[i].dtype(), c.expected[i].shape()) + "=@" + name + "\n";
  }
  write_text(add("run_module_io_flags.txt"), flags);
  const char* env = std::getenv("TORQ_SIM_BIN");
  write_text(add("run.sh"), run_sh(s, c, env ? env : self_dir() + "/torq-sim"), true);
  write_text(add("compare.py"), kReproComparePy, true);
  write_text(add("README.md"), readme(s, c));
  return files;
}

}  // namespace torq::toolchain
