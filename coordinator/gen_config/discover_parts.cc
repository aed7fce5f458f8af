#include "coordinator/gen_config/discover_parts.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <filesystem>
#include <sstream>

#include "pipeline/base/file_bytes.h"
#include "coordinator/fleet/unit_run.h"
#include "pipeline/model/mlir.h"
#include "pipeline/model/model_import.h"
#include "pipeline/report/profile_merge.h"
#include "pipeline/base/yaml_strict.h"
#include "pipeline/base/temp_files.h"
#include "pipeline/report/atomic_file.h"
#include "pipeline/targets/target_profile.h"
#include "worker/runner/preload.h"
#include "worker/toolchain/subprocess.h"
#include "worker/toolchain/toolchain_config.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;

namespace {

std::string builtin_profile_path(Executor e) {
  return targets::TargetProfile::targets_dir() + "/" + executor_name(e) + ".yaml";
}

}  // namespace

std::map<Executor, std::string> read_targets(const std::string& file, const targets::OpCatalog& ops) {
  if (const std::string why = base::not_a_regular_file(file); !why.empty())
    throw PipelineError(file + ": cannot open targets file: " + why);
  std::ifstream f(file);
  if (!f) throw PipelineError(file + ": cannot open targets file");
  std::stringstream ss;
  ss << f.rdbuf();
  base::YamlReader r(file);
  YAML::Node root = base::yaml_parse(ss.str(), file);
  r.expect_map(root, {"nss", "css", "host"}, "targets");
  std::map<Executor, std::string> out;
  for (const auto& kv : root) {
    std::string path = r.str(kv.second, "profile path of " + kv.first.Scalar());
    if (!path.empty() && path[0] != '/') path = (fs::path(file).parent_path() / path).string();
    if (!fs::exists(path)) r.fail(kv.second, "profile file '" + path + "' does not exist");
    targets::TargetProfile::load(path, ops);
    out[*executor_from_name(kv.first.Scalar())] = path;
  }
  return out;
}

size_t export_layer_profiles(const ModelReport& rep, const std::string& dir) {
  prepare_output_dir(dir);
  size_t n = 0;
  for (const auto& l : rep.layers)
    for (const auto& [e, r] : l.results) {
      if (r.profiles.empty()) continue;
      std::string stem = l.info.id + "_" + executor_name(e);
      for (char& c : stem)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
      export_profile(merge_layer_profiles(r.profiles, stem), dir, stem, nullptr);
      ++n;
    }
  return n;
}

void check_writable_dir(const std::string& dir) {
  prepare_output_dir(dir);
  // A file made and removed at once, in the temporary files' form (a kill
  // in between leaves one the next start sweeps).
  const std::string probe = base::temp_path_for(dir + "/.torq-write-test");
  const int fd = base::create_temp_file(probe);
  if (fd < 0) throw PipelineError("output directory " + dir + ": not writable: " + std::strerror(errno));
  ::unlink(probe.c_str());
  ::close(fd);
}

PlanOptions discover_plan(const DiscoverOptions& o, const std::string& model_name) {
  PlanOptions po;
  po.executors = o.executors;
  po.skip_mode = o.skip_mode;
  po.filter = o.filter;
  po.case_prefix = model_name;
  po.dedup = o.dedup ? (o.dedup_exact ? DedupMode::kExact : DedupMode::kSignature) : DedupMode::kOff;
  po.job_template.tolerance = o.tolerance;
  po.job_template.timing_runs = o.collect_timing ? std::max<uint32_t>(1, o.timing_runs) : 1;
  po.job_template.collect_profile = o.collect_profile;
  po.job_template.timeout_ms = o.timeout_ms;
  po.job_template.random_inputs = o.random_inputs;
  po.job_template.seed = o.seed;
  po.job_template.input_lo = o.input_lo;
  po.job_template.input_hi = o.input_hi;
  po.job_template.bf16_rne = o.rounding == base::Rounding::kNearestEven;
  po.job_template.target = o.backend == "toolchain" ? toolchain_target(o.toolchain_file) : "sim";
  return po;
}

std::string discover_run_id(const DiscoverOptions& o, const std::string& model_hash, const PlanOptions& po) {
  std::map<Executor, std::string> digests;
  for (Executor e : kExecutorPriority) {
    auto t = po.executor_targets.find(e);
    digests[e] = file_digest(t != po.executor_targets.end() ? t->second : builtin_profile_path(e));
  }
  return sha256_hex(model_hash + "|" + std::to_string(po.job_template.timing_runs) + "|" +
                    (o.random_inputs ? "r" + std::to_string(o.seed) + "," + fmt(o.input_lo, 3) + "," +
                                           fmt(o.input_hi, 3)
                                     : "a" + std::to_string(o.seed)) +
                    (po.job_template.bf16_rne ? "|rne" : "|trunc") + "|" + digests[Executor::kNss] +
                    digests[Executor::kCss] + digests[Executor::kHost] +
                    (o.backend == "sim" ? "" : "|" + po.job_template.target) +
                    isa_cap_suffix("|isa "))
      .substr(0, 16);
}

LocalWorkersOptions discover_workers(const DiscoverOptions& o, const std::string& store_dir,
                                     const std::string& cache_dir, const std::string& endpoint) {
  LocalWorkersOptions lo;
  lo.workers = std::max(1, o.workers);
  lo.endpoint = endpoint;
  lo.cache_dir = cache_dir;
  lo.threads_per_job = std::max(1, o.threads_per_worker);
  lo.log_file = store_dir + "/workers.log";
  lo.target = "local";
  lo.backend = o.backend;
  lo.toolchain_file = o.toolchain_file;
  lo.trusted_cache = true;  // the coordinator's import writes the model there, before any job
  // The job process imports the model too, as the coordinator does and at
  // the same time, so the first layer job finds it loaded.
  if (o.backend == "sim") {
    runner::PreloadOptions pre;
    pre.model = fs::absolute(o.model).string();
    pre.convert_bf16 = o.convert_bf16;
    pre.rne = o.rounding == base::Rounding::kNearestEven;
    pre.seed = o.seed;
    lo.extra_args = runner::preload_args(pre);
  }
  return lo;
}

namespace {

// The import a toolchain makes of `proto` (its own import step, in a scratch
// folder), or nullopt with a log line when the step fails.
std::optional<std::string> toolchain_import(const DiscoverOptions& o, const onnx::ModelProto& proto,
                                            DiscoverLog& log) {
  std::string dir = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) +
                    "/torq-import-XXXXXX";
  if (!mkdtemp(dir.data())) return std::nullopt;
  struct Remove {
    std::string d;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } remove{dir};
  try {
    const toolchain::ToolchainConfig cfg = toolchain::ToolchainConfig::load(o.toolchain_file);
    {
      std::ofstream f(dir + "/model.onnx", std::ios::binary);
      if (!proto.SerializeToOstream(&f)) return std::nullopt;
    }
    toolchain::TemplateValues v;
    const char* sim = std::getenv("TORQ_SIM_BIN");
    v.scalars = {{"onnx", dir + "/model.onnx"}, {"mlir", dir + "/model.mlir"}, {"vmfb", dir + "/model.vmfb"},
                 {"workdir", dir}, {"chip", cfg.chip}, {"hw_type", cfg.hw_type}, {"function", cfg.function},
                 {"executor", "host"}, {"torq_sim", sim ? sim : toolchain::self_dir() + "/torq-sim"},
                 {"worker_dir", toolchain::self_dir()}};
    for (const auto& [n, p] : cfg.tools) v.scalars[n] = p;
    const auto r = toolchain::run_process(toolchain::expand_argv(cfg.import_step.argv, v),
                                          static_cast<int>(cfg.import_step.timeout_s * 1000), dir);
    std::ifstream f(dir + "/model.mlir");
    if (!r.ok() || !f) {
      log.line("MLIR: the toolchain's import step failed (" + toolchain::diagnostic_excerpt(r.err, 2) +
               "); locations come from the emitted import");
      return std::nullopt;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  } catch (const std::exception& e) {
    log.line(std::string("MLIR: the toolchain's import step could not run (") + e.what() +
             "); locations come from the emitted import");
    return std::nullopt;
  }
}

}  // namespace

VariantRecord variant_of(const std::string& model_file, bool convert_bf16, base::Rounding rounding,
                         const std::string& quantization, const std::string& backend,
                         const std::string& toolchain_file, const std::string& targets_file) {
  VariantRecord v;
  std::ifstream f(model_file, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  v.model_sha256 = sha256_hex(ss.str());
  v.dtype = !quantization.empty() ? "int8" : convert_bf16 ? "bf16" : "fp32";
  if (convert_bf16) v.rounding = rounding == base::Rounding::kNearestEven ? "rne" : "truncate";
  v.quantization = quantization;
  v.executors = backend == "toolchain" ? toolchain_target(toolchain_file)
                : targets_file.empty() ? std::string("sim")
                                       : "sim, --targets " + file_digest(targets_file);
  return v;
}

void add_mlir_locations(const DiscoverOptions& o, const std::string& name, const onnx::ModelProto& proto,
                        DiscoverLog& log, ModelReport& rep) {
  std::string text, path = o.mlir_file;
  if (path.empty()) {
    // With a real toolchain, the import that toolchain makes: the compiler
    // reads its executor map against exactly that text.
    path = o.output_dir + "/" + name + ".torch.mlir";
    std::optional<std::string> made;
    if (o.backend == "toolchain") made = toolchain_import(o, proto, log);
    text = made ? *made : emit_torch_mlir(proto);
    std::ofstream f(path);
    f << text;
  } else {
    if (const std::string why = base::not_a_regular_file(path); !why.empty())
      throw PipelineError(path + ": cannot open MLIR file: " + why);
    std::ifstream f(path);
    if (!f) throw PipelineError(path + ": cannot open MLIR file");
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  for (const auto& p : set_layer_locations(text, proto, rep.layers)) log.line("MLIR " + path + ": " + p);
}

}  // namespace torq::coordinator
