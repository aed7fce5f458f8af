#include "worker/toolchain/toolchain_config.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "pipeline/base/error.h"
#include "pipeline/base/toolchain_budget.h"
#include "pipeline/base/yaml_strict.h"

namespace torq::toolchain {

namespace fs = std::filesystem;
using engine::YamlReader;

namespace {

// No template name stands for an option the real tools lack: the job's bf16
// rounding reaches the stand-in through TORQ_FARM_BF16_ROUNDING instead.
const std::set<std::string> kScalars = {"onnx",     "mlir",     "vmfb",     "workdir",   "chip",
                                        "hw_type",  "function", "executor", "torq_sim",  "worker_dir"};
const std::set<std::string> kLists = {"executor_flags", "compiler_options"};
const std::set<std::string> kTensor = {"in_i", "out_i", "shape", "dtype"};

Step default_step(const std::string& which) {
  if (which == "import")
    return {{"python3", "-m", "iree.compiler.tools.import_onnx", "{onnx}", "-o", "{mlir}", "--data-prop"},
            base::kImportTimeoutS};
  if (which == "compile")
    return {{"torq-compile", "{mlir}", "-o", "{vmfb}", "--torq-hw={chip}", "{executor_flags}", "{compiler_options}"},
            base::kCompileTimeoutS};
  return {{"torq-run-module", "--module={vmfb}", "--function={function}", "--torq_hw_type={hw_type}",
           "--input={shape}x{dtype}=@{in_i}", "--output=@{out_i}"},
          base::kRunTimeoutS};
}

// The placeholder names in `item`, in order; throws std::invalid_argument
// for an unclosed or empty brace.
std::vector<std::string> placeholders(const std::string& item) {
  std::vector<std::string> out;
  for (size_t p = item.find('{'); p != std::string::npos; p = item.find('{', p + 1)) {
    const size_t q = item.find('}', p);
    if (q == std::string::npos) throw std::invalid_argument("unclosed '{' in '" + item + "'");
    if (q == p + 1) throw std::invalid_argument("empty placeholder '{}' in '" + item + "'");
    out.push_back(item.substr(p + 1, q - p - 1));
  }
  return out;
}

// Checks one argv item's placeholders against what is known.
void check_item(const YamlReader& r, const YAML::Node& at, const std::string& item,
                const std::map<std::string, std::string>& tools) {
  std::vector<std::string> names;
  try {
    names = placeholders(item);
  } catch (const std::invalid_argument& e) {
    r.fail(at, e.what());
  }
  std::vector<std::string> known(kScalars.begin(), kScalars.end());
  known.insert(known.end(), kLists.begin(), kLists.end());
  known.insert(known.end(), kTensor.begin(), kTensor.end());
  for (const auto& [t, _] : tools) known.push_back(t);
  bool in = false, out = false, tensor_field = false;
  for (const auto& n : names) {
    if (std::find(known.begin(), known.end(), n) == known.end()) {
      const std::string hint = engine::did_you_mean(n, known);
      r.fail(at, "unknown placeholder '{" + n + "}'" + (hint.empty() ? "" : " (did you mean '{" + hint + "}'?)"));
    }
    if (kLists.count(n) && item != "{" + n + "}")
      r.fail(at, "'{" + n + "}' expands to several arguments and must be a whole argv item");
    in = in || n == "in_i";
    out = out || n == "out_i";
    tensor_field = tensor_field || n == "shape" || n == "dtype";
  }
  if (in && out) r.fail(at, "an argv item takes {in_i} or {out_i}, not both");
  if (tensor_field && !in && !out) r.fail(at, "{shape} and {dtype} need {in_i} or {out_i} in the same argv item");
}

std::vector<std::string> str_list(const YamlReader& r, const YAML::Node& n, const std::string& what) {
  std::vector<std::string> out;
  for (const auto& item : r.seq(n, what)) out.push_back(r.str(item, what + " item"));
  return out;
}

Step read_step(const YamlReader& r, const YAML::Node& n, const std::string& which,
               const std::map<std::string, std::string>& tools) {
  Step s = default_step(which);
  if (!n) return s;
  r.expect_map(n, {"argv", "timeout_s"}, which);
  if (n["argv"]) {
    s.argv = str_list(r, n["argv"], which + ".argv");
    if (s.argv.empty() || s.argv[0].empty()) r.fail(n["argv"], which + ".argv must name a program");
    size_t i = 0;
    for (const auto& item : n["argv"]) check_item(r, item, s.argv[i++], tools);
  }
  if (n["timeout_s"]) {
    s.timeout_s = r.number(n["timeout_s"], which + ".timeout_s");
    if (!(s.timeout_s > 0 && s.timeout_s <= 86400)) r.fail(n["timeout_s"], "timeout_s must be in (0, 86400]");
  }
  return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

void read_tools(const YamlReader& r, const YAML::Node& n, const fs::path& base, ToolchainConfig* c) {
  r.expect_map(n, {}, "tools");
  for (const auto& kv : n) {
    const std::string name = kv.first.Scalar();
    if (kScalars.count(name) || kLists.count(name) || kTensor.count(name))
      r.fail(kv.first, "tool name '" + name + "' is a built-in placeholder");
    std::string path = replace_all(r.str(kv.second, "tools." + name), "{worker_dir}", self_dir());
    if (path.empty()) r.fail(kv.second, "tools." + name + " must not be empty");
    if (path.find('/') != std::string::npos && fs::path(path).is_relative()) path = (base / path).lexically_normal();
    c->tools[name] = path;
  }
}

void read_flags(const YamlReader& r, const YAML::Node& n, ToolchainConfig* c) {
  r.expect_map(n, {"nss", "css", "host"}, "executor_flags");
  for (const auto& kv : n)
    c->executor_flags[*pipeline::executor_from_name(kv.first.Scalar())] =
        str_list(r, kv.second, "executor_flags." + kv.first.Scalar());
}

// One stand_in_latency figure: seconds for every executor, or a map of them.
void read_latency(const YamlReader& r, const YAML::Node& n, const std::string& what,
                  std::map<pipeline::Executor, double>* out) {
  auto seconds = [&](const YAML::Node& v, const std::string& w) {
    const double s = r.number(v, w);
    if (!(s >= 0 && s <= 3600)) r.fail(v, w + " must be in [0, 3600] seconds");
    return s;
  };
  if (n.IsMap()) {
    r.expect_map(n, {"nss", "css", "host"}, what);
    for (const auto& kv : n)
      (*out)[*pipeline::executor_from_name(kv.first.Scalar())] = seconds(kv.second, what + "." + kv.first.Scalar());
    return;
  }
  const double s = seconds(n, what);
  for (auto e : {pipeline::Executor::kNss, pipeline::Executor::kCss, pipeline::Executor::kHost}) (*out)[e] = s;
}

void read_standin_latency(const YamlReader& r, const YAML::Node& n, ToolchainConfig* c) {
  r.expect_map(n, {"compile_s", "run_s"}, "stand_in_latency");
  for (const Step* s : {&c->import_step, &c->compile_step, &c->run_step})
    if (s->argv.empty() || s->argv[0] != "{torq_sim}")
      r.fail(n, "stand_in_latency is for the stand-in toolchain only (every step's argv starting with {torq_sim}); "
                "a real toolchain's steps take their own time");
  if (n["compile_s"]) read_latency(r, n["compile_s"], "stand_in_latency.compile_s", &c->standin_compile_s);
  if (n["run_s"]) read_latency(r, n["run_s"], "stand_in_latency.run_s", &c->standin_run_s);
}

}  // namespace

ToolchainConfig ToolchainConfig::load(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw engine::EngineError(engine::ErrorKind::kInvalidInput, path + ": cannot open toolchain file");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path);
}

ToolchainConfig ToolchainConfig::parse(const std::string& text, const std::string& path) {
  YamlReader r(path);
  const YAML::Node root = engine::yaml_parse(text, path);
  ToolchainConfig c;
  c.path = fs::absolute(path).lexically_normal();
  c.name = fs::path(path).stem();
  c.executor_flags = {{pipeline::Executor::kNss, {"--torq-disable-css", "--torq-disable-host"}},
                      {pipeline::Executor::kCss, {"--torq-disable-slices", "--torq-disable-host"}},
                      {pipeline::Executor::kHost, {"--torq-disable-slices", "--torq-disable-css"}}};
  c.import_step = default_step("import");
  c.compile_step = default_step("compile");
  c.run_step = default_step("run");
  if (!root || root.IsNull()) return c;
  r.expect_map(root,
               {"name", "chip", "hw_type", "function", "tools", "compiler_options", "executor_flags", "work_dir",
                "keep_work_dir", "stand_in_latency", "import", "compile", "run"},
               "toolchain");
  auto text_of = [&](const char* key, std::string* out) {
    if (!root[key]) return;
    *out = r.str(root[key], key);
    if (out->empty()) r.fail(root[key], std::string(key) + " must not be empty");
  };
  text_of("name", &c.name);
  text_of("chip", &c.chip);
  text_of("hw_type", &c.hw_type);
  text_of("function", &c.function);
  text_of("work_dir", &c.work_dir);
  if (root["tools"]) read_tools(r, root["tools"], fs::path(c.path).parent_path(), &c);
  if (root["compiler_options"]) c.compiler_options = str_list(r, root["compiler_options"], "compiler_options");
  if (root["executor_flags"]) read_flags(r, root["executor_flags"], &c);
  if (root["keep_work_dir"]) c.keep_work_dir = r.boolean(root["keep_work_dir"], "keep_work_dir");
  c.import_step = read_step(r, root["import"], "import", c.tools);
  c.compile_step = read_step(r, root["compile"], "compile", c.tools);
  c.run_step = read_step(r, root["run"], "run", c.tools);
  if (root["stand_in_latency"]) read_standin_latency(r, root["stand_in_latency"], &c);
  return c;
}

uint32_t ToolchainConfig::job_budget_ms(uint32_t runs) const {
  return base::job_budget_ms(import_step.timeout_s, compile_step.timeout_s, run_step.timeout_s, runs);
}

namespace {

std::string substitute(const std::string& item, const TemplateValues& v, const TemplateValues::Tensor* t) {
  std::string out;
  size_t pos = 0;
  for (size_t p = item.find('{'); p != std::string::npos; p = item.find('{', pos)) {
    const size_t q = item.find('}', p);
    out += item.substr(pos, p - pos);
    const std::string name = item.substr(p + 1, q - p - 1);
    pos = q + 1;
    if (t && (name == "in_i" || name == "out_i")) {
      out += t->file;
    } else if (t && name == "dtype") {
      out += t->dtype;
    } else if (t && name == "shape") {
      out += t->shape;
      if (t->shape.empty() && pos < item.size() && item[pos] == 'x') ++pos;  // a scalar: "f32", not "xf32"
    } else {
      auto s = v.scalars.find(name);
      if (s == v.scalars.end()) throw std::invalid_argument("no value for placeholder {" + name + "}");
      out += s->second;
    }
  }
  return out + item.substr(pos);
}

}  // namespace

std::vector<std::string> expand_argv(const std::vector<std::string>& argv, const TemplateValues& v) {
  std::vector<std::string> out;
  for (const auto& item : argv) {
    if (item.size() > 2 && item.front() == '{' && item.back() == '}' && kLists.count(item.substr(1, item.size() - 2))) {
      auto l = v.lists.find(item.substr(1, item.size() - 2));
      if (l != v.lists.end()) out.insert(out.end(), l->second.begin(), l->second.end());
      continue;
    }
    const bool per_in = item.find("{in_i}") != std::string::npos;
    const bool per_out = item.find("{out_i}") != std::string::npos;
    if (per_in || per_out) {
      for (const auto& t : per_in ? v.inputs : v.outputs) out.push_back(substitute(item, v, &t));
      continue;
    }
    out.push_back(substitute(item, v, nullptr));
  }
  return out;
}

std::string self_dir() {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

std::string torq_sim_path() {
  if (const char* env = std::getenv("TORQ_SIM_BIN")) return env;
  const std::string beside = self_dir() + "/torq-sim";
  return access(beside.c_str(), X_OK) == 0 ? beside : "torq-sim";
}

}  // namespace torq::toolchain
