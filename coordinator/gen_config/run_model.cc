#include "coordinator/gen_config/run_model.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "coordinator/fleet/assigned_run.h"
#include "coordinator/fleet/assignment_file.h"
#include "coordinator/gen_config/debug_ir.h"
#include "coordinator/gen_config/discover_parts.h"
#include "coordinator/fleet/fp32_original.h"
#include "coordinator/gen_config/local_serve.h"
#include "pipeline/base/file_bytes.h"
#include "pipeline/report/full_model.h"
#include "pipeline/model/mlir.h"
#include "pipeline/model/model_import.h"
#include "pipeline/report/profile_merge.h"
#include "pipeline/report/report.h"
#include "pipeline/store/store.h"
#include "pipeline/model/subgraph.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;
using json = nlohmann::ordered_json;

namespace {

std::string debug_ir_dir(const RunOptions& o) {
  return o.debug_ir_dir.empty() ? o.output_dir + "/debug_ir" : o.debug_ir_dir;
}

void say(std::ostream& out, std::ofstream& log, bool quiet, const std::string& s) {
  if (!quiet) out << s << "\n" << std::flush;
  if (log) log << s << "\n" << std::flush;
}

// One `run`: what were run_model's locals (in their order, so built and destroyed in it) and its steps.
struct ModelRun {
  ModelRun(const RunOptions& opts, std::ostream& out_stream, std::ostream& err_stream)
      : o(opts), out(out_stream), err(err_stream) {}

  const RunOptions& o;
  std::ostream& out;
  std::ostream& err;
  std::ofstream logf;
  std::vector<RunUnit> units = std::vector<RunUnit>(1);
  RunUnit& u = units[0];
  std::unique_ptr<Store> store;
  std::unique_ptr<LocalWorkers> workers;
  std::optional<LayerRange> range;
  std::string name, store_dir;
  const PrivateEndpoint private_endpoint;
  const std::string& endpoint = private_endpoint.str();
  AssignmentFile plan;
  onnx::ModelProto sub_proto;
  std::vector<LayerInfo> layers;
  // A converted model's fp32 original (issue 29), for the end-to-end figure.
  const std::string original = !o.original_model.empty() ? o.original_model : o.convert_bf16 ? o.model : "";
  FullModelRule rule;  // the plan's, set by configure_unit
  ServeTotals totals;

  // Opens the log, imports the model, loads its assignment, starts the workers; false after the error (exit 2).
  bool prepare() {
    try {
      if (!o.log_file.empty()) {
        if (const std::string why = base::not_a_writable_file(o.log_file); !why.empty())
          throw PipelineError(o.log_file + ": cannot open log file: " + why);
        logf.open(o.log_file, std::ios::app);
        if (!logf) throw PipelineError(o.log_file + ": cannot open log file");
      }
      ImportOptions io;
      import_model(io);
      load_assignment();
      start_workers(io);
    } catch (const std::exception& e) {
      adopt_cache_file("", "", o.output_dir);  // removes the copy if it is still there
      err << "torq-gen-config: error: " << e.what() << "\n";
      return false;
    }
    return true;
  }

  // Checks the model and the flags, imports the model into `u` and cuts the subgraph; throws.
  void import_model(ImportOptions& io) {
    require_model_file(o.model);
    if (o.subgraph_from.empty() != o.subgraph_to.empty())
      throw PipelineError("--subgraph-from and --subgraph-to go together");
    io.convert_bf16 = o.convert_bf16;
    io.rounding = o.rounding;
    // The workers' copy of the model is written in the pass that hashes it,
    // beside the output, and adopted into the cache once there is something
    // to run (an output directory that does not exist holds no
    // configuration: the error below).
    if (fs::is_directory(o.output_dir)) {
      base::sweep_dead_temp_files(o.output_dir);
      io.copy_to = cache_import_path(o.output_dir);
    }
    u.model = ImportedModel::from_file(o.model, io);
    name = u.model->name();
    layers = u.model->layers();
    if (!o.subgraph_from.empty()) {
      range = resolve_range(*u.model, o.subgraph_from, o.subgraph_to);
      name = subgraph_name(u.model->name(), *range);
      layers = subgraph_layers(*u.model, *range);
      sub_proto = extract_subgraph(*u.model, *range);
    }
  }

  // Reads the assignment into `plan` from the report JSON, else the compiler JSON; throws.
  void load_assignment() {
    const std::string rpath = report_path(o.output_dir, name), cpath = compiler_path(o.output_dir, name);
    const onnx::ModelProto& proto = range ? sub_proto : u.model->proto();
    if (fs::exists(rpath)) {
      // The assignment of another variant (a bf16 report run as fp32) is
      // not this model's: refused, naming the flag (issue 29).
      if (const auto was = read_report_file(rpath).variant) {
        VariantRecord now = variant_of(o.model, o.convert_bf16, o.rounding, o.quantization, o.backend,
                                       o.toolchain_file, "");
        now.executors = was->executors;  // running a report's plan on other executors is an experiment
        if (const std::string why = variant_mismatch(*was, now, rpath); !why.empty())
          throw PipelineError(why.substr(0, why.find(". Results of two")) +
                              ": run it with the flags its discover had");
      }
      plan = assignment_from_report(rpath, cpath, layers);
    }
    else if (fs::exists(cpath))
      plan = assignment_from_compiler(cpath, o.output_dir + "/" + name + ".torch.mlir", proto, name, layers);
    else
      throw PipelineError("no configuration for " + name + " in " + o.output_dir + " (looked for " + rpath + " and " +
                          cpath + "); run discovery first:\n  torq-gen-config discover --model " + o.model +
                          (o.output_dir == "." ? "" : " --output-dir " + o.output_dir) +
                          (o.convert_bf16 ? " --auto-convert-bf16" : "") +
                          (range ? " --subgraph-from " + o.subgraph_from + " --subgraph-to " + o.subgraph_to : ""));
  }

  // Starts the local workers, adopts the model's copy into their cache, opens the store; throws.
  void start_workers(const ImportOptions& io) {
    store_dir = o.output_dir + "/.torq-store";
    fs::create_directories(store_dir + "/models");
    base::sweep_dead_temp_files(store_dir + "/models");
    LocalWorkersOptions lo;
    lo.workers = std::max(1, o.workers);
    lo.endpoint = endpoint;
    lo.cache_dir = store_dir + "/models";
    lo.log_file = store_dir + "/workers.log";
    lo.target = "local";
    lo.backend = o.backend;
    lo.toolchain_file = o.toolchain_file;
    lo.trusted_cache = true;  // the model's file is adopted below, before any job
    if (o.backend != "sim" && !o.targets_file.empty())
      throw PipelineError("--targets (sim profiles) does not apply to --backend " + o.backend);
    // With the real tools, --debug-ir is the compiler's own IR dump.
    if (o.debug_ir && o.backend == "toolchain")
      lo.extra_args = {"--debug-ir-dir", fs::absolute(debug_ir_dir(o)).lexically_normal().string()};
    workers = std::make_unique<LocalWorkers>(lo);
    if (o.backend == "toolchain") u.plan.job_template.target = toolchain_target(o.toolchain_file);
    adopt_cache_file(lo.cache_dir, u.model->hash(), o.output_dir);
    store = Store::open(store_dir + "/db");
    if (!original.empty() && !range) u.original_hash = store_fp32_original(original, io, *store);
  }

  // Says what runs: the op count, where the assignment came from, the end-to-end comparison.
  void announce() {
    say(out, logf, o.quiet,
        "run " + name + ": " + std::to_string(layers.size()) + " ops, assignment from " + plan.source);
    if (!original.empty())
      say(out, logf, o.quiet,
          range ? "end to end: not measured for a subgraph (its outputs are no outputs of the fp32 original " +
                      original + "; run the whole model for that figure)"
                : "end to end: the outputs are also compared with the fp32 original " + original +
                      " on the same input");
  }

  // Fills in the unit and its job template from the plan; returns the run's id.
  std::string configure_unit() {
    // The unit: no layer jobs, one assigned run of the range (and the bisect).
    u.label = name;
    u.range = range;
    for (const auto& l : u.model->layers()) u.skip_layers.push_back(l.index);
    u.full_model = u.fixed_assignment = true;
    u.assignment = plan.assignment;
    u.passed_alone = plan.passed_alone;
    u.bisect = o.bisect;
    u.use_store = !o.recompute_cache;
    rule = plan.rule;
    u.passes = [rule = rule](const ExecResult& r) { return full_model_passes(r, rule); };
    JobSpec& jt = u.plan.job_template;
    jt.tolerance = rule.tolerance;
    jt.seed = o.seed;
    jt.timeout_ms = o.timeout_ms;
    jt.bf16_rne = o.rounding == engine::Rounding::kNearestEven;
    jt.collect_profile = o.collect_profile;
    std::string assigned;
    for (const auto& a : plan.assignment) assigned += a ? executor_name(*a)[0] : '-';
    return sha256_hex(units_run_id("run", units) + "|" + assigned).substr(0, 16);
  }

  // Serves the unit on the local workers into `totals`, then stops them; false after the error (exit 2).
  bool serve(const std::string& run) {
    try {
      totals = serve_on_local_workers(
          units, *store, run, *workers, endpoint, store_dir + "/workers.log",
          [&](const std::string& s) {
            if (s.find("bisect") != std::string::npos || s.find("failing range") != std::string::npos)
              say(out, logf, o.quiet, s);
            else if (logf)
              logf << "[coordinator] " << s << "\n";
          },
          [&](const std::string& s) {
            if (logf) logf << "[coordinator] " << s << "\n";
          });
      workers.reset();
    } catch (const std::exception& e) {
      err << "torq-gen-config: error: " << e.what() << "\n";
      return false;
    }
    return true;
  }

  // Writes the report's full_model section, the debug IR and the profile; false after the error (exit 2).
  bool write_outputs(const FullModelRun& full, std::string& overview) {
    try {
      if (plan.from_report) {
        attach_full_model(&plan.report, full);
        if (o.collect_profile && !full.result.profiles.empty())
          plan.report["full_model"]["profile_overview"] =
              export_profile(merge_layer_profiles(full.result.profiles, name), o.output_dir, name, &overview);
        write_json_atomic(report_path(o.output_dir, name), plan.report);
      }
      if (o.debug_ir && o.backend == "toolchain") {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(debug_ir_dir(o), ec))
          say(out, logf, o.quiet, "debug-ir: " + e.path().string() + " (the compiler's IR after each pass)");
      } else if (o.debug_ir) {
        for (const auto& p : write_debug_ir(debug_ir_dir(o), name, range ? sub_proto : u.model->proto(), layers,
                                            full.result.placed, full.result.layer_ms))
          say(out, logf, o.quiet, "debug-ir: " + p);
      }
    } catch (const std::exception& e) {
      err << "torq-gen-config: error: " << e.what() << "\n";
      return false;
    }
    if (o.collect_profile && !plan.from_report && !full.result.profiles.empty()) {
      try {
        export_profile(merge_layer_profiles(full.result.profiles, name), o.output_dir, name, &overview);
      } catch (const std::exception& e) {
        err << "torq-gen-config: error: " << e.what() << "\n";
        return false;
      }
    }
    return true;
  }

  // Prints (and logs) the run's result, the profile overview and the job counts.
  void print_summary(const FullModelRun& full, const std::string& overview) {
    std::string text = full_model_text(full);
    if (!overview.empty())
      text += "\n" + overview + (overview.back() == '\n' ? "" : "\n") + "profile: " + o.output_dir + "/" + name +
              ".trace.json (open in ui.perfetto.dev), " + name + ".device_trace.csv, " + name + ".host_profile.csv\n";
    if (!o.quiet) out << text;
    if (logf) logf << text;
    say(out, logf, o.quiet,
        "jobs: " + std::to_string(totals.fleet_jobs) + " run, " + std::to_string(totals.resumed) + " resumed, " +
            std::to_string(totals.cache_hits) + " from the cache (worker " + full.result.worker_id + ")" +
            (plan.from_report ? "; report: " + report_path(o.output_dir, name) : ""));
  }
};

}  // namespace

int run_model(const RunOptions& o, std::ostream& out, std::ostream& err) {
  ModelRun m(o, out, err);
  if (!m.prepare()) return 2;
  m.announce();
  const std::string run = m.configure_unit();
  if (!m.serve(run)) return 2;
  if (!m.u.full_result) {
    err << "torq-gen-config: error: the assigned run produced no result\n";
    return 2;
  }
  const FullModelRun full = full_model_run(m.u, m.layers, m.rule);
  std::string overview;
  if (!m.write_outputs(full, overview)) return 2;
  m.print_summary(full, overview);
  return full.passed ? 0 : 1;
}

}  // namespace torq::coordinator
