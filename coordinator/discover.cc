#include "coordinator/discover.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <fstream>
#include <map>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "coordinator/assigned_run.h"
#include "coordinator/fleet_broker.h"
#include "coordinator/local_fleet.h"
#include "coordinator/local_serve.h"
#include "coordinator/unit_run.h"
#include "worker/runner/preload.h"
#include "pipeline/edit.h"
#include "pipeline/full_model.h"
#include "pipeline/mlir.h"
#include "pipeline/model_import.h"
#include "pipeline/plan.h"
#include "pipeline/profile_merge.h"
#include "pipeline/recommend.h"
#include "pipeline/report.h"
#include "pipeline/store.h"
#include "pipeline/subgraph.h"
#include "pipeline/view.h"
#include "pipeline/base/error.h"
#include "worker/engine/profile.h"
#include "pipeline/base/yaml_strict.h"

namespace torq::coordinator {


namespace fs = std::filesystem;
using namespace pipeline;
using Clock = std::chrono::steady_clock;

namespace {

class Log {
 public:
  Log(std::ostream& out, const std::string& file, bool quiet) : out_(out), quiet_(quiet) {
    if (!file.empty()) {
      file_.open(file, std::ios::app);
      if (!file_) throw PipelineError(file + ": cannot open log file");
    }
  }
  void line(const std::string& s) {
    progress_clear();
    if (!quiet_) out_ << s << "\n" << std::flush;
    if (file_) file_ << s << "\n" << std::flush;
  }
  void progress(const std::string& s) {
    if (tty_ && !quiet_) {
      std::fprintf(stderr, "\r%s\033[K", s.c_str());
      std::fflush(stderr);
      shown_ = true;
    }
  }
  void progress_clear() {
    if (shown_) {
      std::fprintf(stderr, "\r\033[K");
      shown_ = false;
    }
  }
  // Only to the log file (broker chatter).
  void file_line(const std::string& s) {
    if (file_) file_ << s << "\n" << std::flush;
  }
  bool tty() const { return tty_; }

 private:
  std::ostream& out_;
  std::ofstream file_;
  bool quiet_;
  bool tty_ = isatty(STDERR_FILENO) != 0;
  bool shown_ = false;
};

std::string fmt(double v, int prec = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string file_digest(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return sha256_hex(ss.str()).substr(0, 16);
}

std::string builtin_profile_path(Executor e) {
  return engine::ExecutorProfile::targets_dir() + "/" + executor_name(e) + ".yaml";
}

// --targets FILE: a YAML map from executor name to a profile file (relative
// paths are relative to FILE). Every profile is validated now, so a typo is
// an error with its location before any job runs.
std::map<Executor, std::string> read_targets(const std::string& file) {
  std::ifstream f(file);
  if (!f) throw PipelineError(file + ": cannot open targets file");
  std::stringstream ss;
  ss << f.rdbuf();
  engine::YamlReader r(file);
  YAML::Node root = engine::yaml_parse(ss.str(), file);
  r.expect_map(root, {"nss", "css", "host"}, "targets");
  std::map<Executor, std::string> out;
  for (const auto& kv : root) {
    std::string path = r.str(kv.second, "profile path of " + kv.first.Scalar());
    if (!path.empty() && path[0] != '/') path = (fs::path(file).parent_path() / path).string();
    if (!fs::exists(path)) r.fail(kv.second, "profile file '" + path + "' does not exist");
    engine::ExecutorProfile::load(path);
    out[*executor_from_name(kv.first.Scalar())] = path;
  }
  return out;
}

// Every layer result's profiling CSVs, with its trace JSON and overview,
// as <dir>/<layer id>_<executor>.*; returns how many were written.
size_t export_layer_profiles(const ModelReport& rep, const std::string& dir) {
  fs::create_directories(dir);
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
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw PipelineError("output dir " + dir + ": cannot create (" + ec.message() + ")");
  const std::string probe = dir + "/.torq-write-test";
  std::ofstream f(probe);
  if (!f) throw PipelineError("output dir " + dir + ": not writable");
  f.close();
  fs::remove(probe, ec);
}

}  // namespace

int run_discover(const DiscoverOptions& o, std::ostream& out, std::ostream& err) {
  std::unique_ptr<Log> log;
  try {
    log = std::make_unique<Log>(out, o.log_file, o.quiet);
  } catch (const PipelineError& e) {
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
  const auto t_start = Clock::now();
  std::vector<RunUnit> units(1);  // one unit: this model tested this way
  std::unique_ptr<ImportedModel>& model = units[0].model;
  std::unique_ptr<Store> store;
  std::unique_ptr<LocalWorkers> workers;         // --backend toolchain: fleet workers
  std::unique_ptr<runner::LocalPool> pool;       // sim: the job processes themselves
  std::string store_dir, cache_dir;
  const PrivateEndpoint private_endpoint;
  const std::string& endpoint = private_endpoint.str();
  try {
    if (o.executors.empty()) throw PipelineError("no executor left to test (all skipped)");
    if (!fs::exists(o.model)) throw PipelineError(o.model + ": cannot open model");
    check_writable_dir(o.output_dir);
    store_dir = o.output_dir + "/.torq-store";
    cache_dir = store_dir + "/models";
    fs::create_directories(cache_dir);
    // The sim backend's millisecond jobs go straight to a pool of job
    // processes (serve_on_pool); a toolchain's take the fleet's path: an
    // embedded FleetBroker on a private ipc:// endpoint, served by local
    // `torq-worker --connect` processes. Either starts (process launch,
    // library and engine initialisation) while the model is imported.
    LocalWorkersOptions lo;
    lo.workers = std::max(1, o.workers);
    lo.endpoint = endpoint;
    lo.cache_dir = cache_dir;
    lo.threads_per_job = std::max(1, o.threads_per_worker);
    lo.log_file = store_dir + "/workers.log";
    lo.target = "local";
    lo.backend = o.backend;
    lo.toolchain_file = o.toolchain_file;
    lo.trusted_cache = true;  // the import below writes the model there, before any job
    if (o.backend != "sim" && !o.targets_file.empty())
      throw PipelineError("--targets (sim profiles) does not apply to --backend " + o.backend);
    // The job process imports the model too, as the coordinator does below
    // and at the same time, so the first layer job finds it loaded.
    runner::PreloadOptions pre;
    pre.model = fs::absolute(o.model).string();
    pre.convert_bf16 = o.convert_bf16;
    pre.rne = o.rounding == engine::Rounding::kNearestEven;
    pre.seed = o.seed;
    if (o.backend == "sim") {
      lo.extra_args = runner::preload_args(pre);
      pool = start_local_pool(lo);
    } else {
      workers = std::make_unique<LocalWorkers>(lo);
    }
    ImportOptions io;
    io.convert_bf16 = o.convert_bf16;
    io.rounding = o.rounding;
    // Local workers read the model from the cache file, written in the
    // pass that hashes it; the store's models column family (a synced 50 MB
    // write for resnet18) serves fleet workers and is filled by
    // torq-coordinator.
    io.copy_to = cache_import_path(cache_dir);
    // The store opens (tens of ms: RocksDB's recovery and option files)
    // while the model is imported.
    auto opening = std::async(std::launch::async, [&] { return Store::open(store_dir + "/db"); });
    try {
      model = ImportedModel::from_file(o.model, io);
    } catch (...) {
      adopt_cache_file(cache_dir, "");
      try {
        opening.get();
      } catch (...) {  // the import's error is the one to report
      }
      throw;
    }
    adopt_cache_file(cache_dir, model->hash());
    store = opening.get();
    if (!o.save_bf16_model.empty()) {
      if (!o.convert_bf16) throw PipelineError("--save-bf16-model needs --auto-convert-bf16");
      model->write_file(o.save_bf16_model);
    }
  } catch (const std::exception& e) {
    log->progress_clear();
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
  for (const auto& w : model->warnings()) log->line("warning: " + w);
  log->line("model " + model->name() + ": " + std::to_string(model->layers().size()) + " layers, sha256 " +
            model->hash().substr(0, 16) + (o.convert_bf16 ? ", converted to bf16 (" +
            std::string(engine::rounding_name(o.rounding)) + ")" : ""));
  if (o.convert_bf16) {
    double worst = 0;
    std::string worst_name;
    for (const auto& c : model->conversion())
      if (c.max_rel > worst) {
        worst = c.max_rel;
        worst_name = c.tensor;
      }
    log->line("bf16 conversion: " + std::to_string(model->conversion().size()) + " tensors, worst max relative error " +
              fmt(worst, 5) + (worst_name.empty() ? "" : " (" + worst_name + ")"));
  }

  // A subgraph: its own report files, named by node indices as the seed does.
  std::optional<LayerRange> range;
  std::string name = model->name();
  if (!o.subgraph_from.empty() || !o.subgraph_to.empty()) {
    try {
      if (o.subgraph_from.empty() || o.subgraph_to.empty())
        throw PipelineError("--subgraph-from and --subgraph-to go together");
      range = resolve_range(*model, o.subgraph_from, o.subgraph_to);
    } catch (const std::exception& e) {
      err << "torq-gen-config: error: " << e.what() << "\n";
      return 2;
    }
    name = subgraph_name(model->name(), *range);
    log->line("subgraph " + name + ": layers " + std::to_string(range->first) + ".." + std::to_string(range->last) +
              " (" + model->layers()[range->first].id + " .. " + model->layers()[range->last].id + ")");
  }

  // The previous report, if any: edited tolerances, skip-mode knowledge.
  const std::string rpath = report_path(o.output_dir, name);
  ModelReport previous;
  bool have_previous = false;
  if (fs::exists(rpath)) {
    try {
      previous = read_report_file(rpath);
      have_previous = true;
    } catch (const std::exception& e) {
      log->line(std::string("warning: ignoring unreadable previous report: ") + e.what());
    }
  }
  std::map<std::string, const LayerReport*> prev_by_id;
  if (have_previous)
    for (const auto& l : previous.layers) prev_by_id[l.info.id] = &l;

  std::map<int, Tolerance> layer_tols;
  for (const auto& l : model->layers()) {
    auto it = prev_by_id.find(l.id);
    if (it != prev_by_id.end() && it->second->tolerance) layer_tols[l.index] = *it->second->tolerance;
  }

  // The unit: the model's layers (or a subgraph's) with the previous
  // report's tolerance overrides and skip-mode knowledge.
  RunUnit& u = units[0];
  u.label = model->name();
  PlanOptions& po = u.plan;
  po.executors = o.executors;
  po.skip_mode = o.skip_mode;
  po.filter = o.filter;
  po.case_prefix = model->name();
  po.dedup = o.dedup ? (o.dedup_exact ? DedupMode::kExact : DedupMode::kSignature) : DedupMode::kOff;
  po.job_template.tolerance = o.tolerance;
  po.job_template.timing_runs = o.collect_timing ? std::max<uint32_t>(1, o.timing_runs) : 1;
  po.job_template.collect_profile = o.collect_profile;
  po.job_template.timeout_ms = o.timeout_ms;
  po.job_template.random_inputs = o.random_inputs;
  po.job_template.seed = o.seed;
  po.job_template.input_lo = o.input_lo;
  po.job_template.input_hi = o.input_hi;
  po.job_template.bf16_rne = o.rounding == engine::Rounding::kNearestEven;
  po.job_template.target = o.backend == "toolchain" ? toolchain_target(o.toolchain_file) : "sim";
  u.recommend_by_timing = o.recommend_by_timing;
  u.use_store = !o.recompute_cache;
  u.layer_tolerances = layer_tols;
  if (range) {
    u.range = *range;
    u.full_model = true;  // the full-subgraph job: the range on its recommended executors
    u.bisect = true;
    FullModelRule rule;
    rule.tolerance = o.tolerance;
    u.passes = [rule](const ExecResult& r) { return full_model_passes(r, rule); };
  }
  int skipped_known = 0;
  if (o.skip_mode && !o.recompute_cache)
    for (const auto& l : model->layers()) {
      auto it = prev_by_id.find(l.id);
      if (it == prev_by_id.end() || !it->second->recommended) continue;
      for (const auto& [e, r] : it->second->results)
        if (r.status == Status::kSuccess) {
          u.skip_layers.push_back(l.index);
          ++skipped_known;
          break;
        }
    }
  std::map<Executor, std::string> digests;
  try {
    if (!o.targets_file.empty()) po.executor_targets = read_targets(o.targets_file);
  } catch (const std::exception& e) {
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
  for (Executor e : kExecutorPriority)
    digests[e] = file_digest(po.executor_targets.count(e) ? po.executor_targets[e] : builtin_profile_path(e));
  const std::string run = sha256_hex(model->hash() + "|" + std::to_string(po.job_template.timing_runs) + "|" +
                                     (o.random_inputs ? "r" + std::to_string(o.seed) + "," + fmt(o.input_lo, 3) + "," +
                                                            fmt(o.input_hi, 3)
                                                      : "a" + std::to_string(o.seed)) +
                                     (po.job_template.bf16_rne ? "|rne" : "|trunc") + "|" +
                                     digests[Executor::kNss] + digests[Executor::kCss] + digests[Executor::kHost] +
                                     (o.backend == "sim" ? "" : "|" + po.job_template.target))
                              .substr(0, 16);
  if (o.recompute_cache) {
    std::vector<int> all;
    for (const auto& l : model->layers()) all.push_back(l.index);
    store->erase_results(run, model->hash(), all, o.executors);
    store->erase_result(run, u.full_key(), 0, Executor::kHost);
  }

  // Run: the embedded broker and the local workers.
  ServeTotals totals;
  auto serve_log = [&](const std::string& s) {
    if (s.rfind("jobs ", 0) == 0) {
      if (log->tty()) log->progress("[discover " + name + "] " + s);
      else log->line("[discover " + name + "] " + s);
    } else if (s.find("bisect") != std::string::npos || s.find("failing range") != std::string::npos ||
               s.find("no assigned run") != std::string::npos) {
      log->line(s);
    } else {
      log->file_line("[coordinator] " + s);
    }
  };
  try {
    if (pool)
      totals = serve_on_pool(units, *store, run, *pool, serve_log);
    else
      totals = serve_on_local_workers(units, *store, run, *workers, endpoint, store_dir + "/workers.log", serve_log,
                                      [&log](const std::string& s) { log->file_line("[coordinator] " + s); });
  } catch (const std::exception& e) {
    log->progress_clear();
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
  log->progress_clear();
  const double wall_s = totals.run_s;

  // Report: previous report's layers, overlaid with this run's results.
  // (a subgraph's layers come renumbered from 0, under its own name)
  ModelReport rep = unit_report(u, *store, run, o.tolerance, "", [](const std::string&) {});
  for (auto& l : rep.layers) {
    auto prev = prev_by_id.find(l.info.id);
    if (prev == prev_by_id.end()) continue;
    l.tolerance = prev->second->tolerance;
    l.extra = prev->second->extra;
    l.result_extra = prev->second->result_extra;
    for (const auto& [e, r] : prev->second->results)
      if (!l.results.count(e)) l.results[e] = r;
    l.recommended = recommend(l, o.recommend_by_timing);
  }
  // Keys of the previous report we do not know stay (e.g. the relaxed
  // full-model `tolerance`); its full-model run is stale after a discover.
  for (const auto& kv : previous.extra)
    if (kv.first != "full_model" && kv.first != "subgraph") rep.extra.push_back(kv);
  // MLIR locations: the user's import, or the torch-mlir form we emit (of
  // the subgraph as a standalone model for a subgraph report).
  std::string mlir_text, mlir_path = o.mlir_file;
  const onnx::ModelProto sub_proto = range ? extract_subgraph(*model, *range) : onnx::ModelProto();
  const onnx::ModelProto& mlir_proto = range ? sub_proto : model->proto();
  if (mlir_path.empty()) {
    mlir_path = o.output_dir + "/" + name + ".torch.mlir";
    mlir_text = emit_torch_mlir(mlir_proto);
    std::ofstream f(mlir_path);
    f << mlir_text;
  } else {
    std::ifstream f(mlir_path);
    if (!f) {
      err << "torq-gen-config: error: " << mlir_path << ": cannot open MLIR file\n";
      return 2;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    mlir_text = ss.str();
  }
  MlirMapping mm = map_layer_locations(mlir_text, mlir_proto);
  for (const auto& p : mm.problems) log->line("MLIR " + mlir_path + ": " + p);
  for (size_t i = 0; i < rep.layers.size() && i < mm.locations.size(); ++i)
    rep.layers[i].info.mlir_location = mm.locations[i];
  std::optional<FullModelRun> full;
  if (range && u.full_result) {
    std::vector<LayerInfo> infos;
    for (const auto& l : rep.layers) infos.push_back(l.info);
    full = full_model_run(u, infos, FullModelRule{o.tolerance, {}, {}, ""});
  }
  try {
    write_report_files(rep, o.output_dir);
    if (range) {
      nlohmann::ordered_json j = report_to_json(rep);
      j["subgraph"] = {{"model", model->name()},
                       {"from", o.subgraph_from},
                       {"to", o.subgraph_to},
                       {"first_node", range->first},
                       {"last_node", range->last},
                       {"first_layer", model->layers()[range->first].id},
                       {"last_layer", model->layers()[range->last].id}};
      if (full) attach_full_model(&j, *full);
      write_json_atomic(report_path(o.output_dir, name), j);
    }
  } catch (const std::exception& e) {
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
  if (o.collect_profile) {
    try {
      const size_t n = export_layer_profiles(rep, o.output_dir + "/" + name + "_profiles");
      log->line("profiles: " + std::to_string(n) + " layer runs in " + o.output_dir + "/" + name +
                "_profiles (CSVs and Perfetto trace JSON each)");
    } catch (const std::exception& e) {
      err << "torq-gen-config: error: " << e.what() << "\n";
      return 2;
    }
  }
  const ReportSummary sum = summarize(rep);
  if (!o.quiet) {
    std::string text = render_final_report(rep);
    if (!text.empty() && text.back() != '\n') text += '\n';
    out << text;
    if (full) out << "\n" << full_model_text(*full);
  }
  const double total_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  const size_t dispatched = totals.fleet_jobs;
  double job_time_ms = 0;
  for (const auto& l : rep.layers)
    for (const auto& [e, r] : l.results)
      if (!r.cached && r.dedup_of.empty()) job_time_ms += r.host_ms;
  log->line("jobs: " + std::to_string(dispatched) + " run, " + std::to_string(totals.resumed) +
            " resumed from the store, " + std::to_string(totals.cache_hits) + " from the cache, " +
            std::to_string(totals.saved_by_dedup) +
            " saved by dedup, " + std::to_string(skipped_known) + " layers skipped (known success)");
  // efficiency = (sum of job run times) / (wall time x workers), over the
  // whole command (import and report included).
  log->line("wall " + fmt(total_s, 2) + " s (jobs " + fmt(wall_s, 2) + " s), " +
            fmt(total_s > 0 ? static_cast<double>(dispatched) / total_s : 0) + " jobs/s, efficiency " +
            fmt(total_s > 0 ? job_time_ms / 1000.0 / (total_s * std::max(1, o.workers)) : 0, 2) + " on " +
            std::to_string(o.workers) + " workers");
  log->line("report: " + rpath);
  log->line("compiler: " + compiler_path(o.output_dir, name));
  if (full && !full->passed) return 1;
  return sum.critical_failures.empty() ? 0 : 1;
}

}  // namespace torq::coordinator
