#include "coordinator/gen_config/discover.h"

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <optional>

#include <onnx/onnx_pb.h>

#include "coordinator/fleet/assigned_run.h"
#include "coordinator/gen_config/discover_parts.h"
#include "coordinator/fleet/local_fleet.h"
#include "coordinator/gen_config/local_serve.h"
#include "coordinator/fleet/unit_run.h"
#include "pipeline/base/yaml_strict.h"
#include "pipeline/report/full_model.h"
#include "pipeline/model/model_import.h"
#include "pipeline/plan/plan.h"
#include "pipeline/plan/recommend.h"
#include "pipeline/report/report.h"
#include "pipeline/store/store.h"
#include "pipeline/model/subgraph.h"
#include "pipeline/report/view.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;
using Clock = std::chrono::steady_clock;

namespace {

// One discover, phase by phase; each leaves here what the next one reads.
// A phase throws (PipelineError or another std::exception) for what ends
// the command with exit 2.
class Discover {
 public:
  Discover(const DiscoverOptions& o, std::ostream& out) : o_(o), out_(out), log_(out, o.log_file, o.quiet) {}

  // The local workers or job processes (they start while the model is
  // imported), the store and the imported model.
  void start();
  void log_model();
  // --subgraph-from/--subgraph-to: the range and its report's name.
  void choose_range();
  // The unit to run, with the previous report's tolerances and (skip mode)
  // its known successes; the run id; with --recompute-cache, the run's
  // stored results erased.
  void plan();
  void serve();
  // Writes the report files and prints the summary; returns the exit code.
  int finish();
  DiscoverLog& log() { return log_; }

 private:
  ImportedModel& model() { return *units_[0].model; }
  void read_previous();
  ModelReport report();
  void write_report(const ModelReport& rep, const std::optional<FullModelRun>& full);
  void log_totals(const ModelReport& rep);

  const DiscoverOptions& o_;
  std::ostream& out_;
  DiscoverLog log_;
  const Clock::time_point started_ = Clock::now();
  std::vector<RunUnit> units_ = std::vector<RunUnit>(1);  // one unit: this model tested this way
  std::unique_ptr<Store> store_;
  std::unique_ptr<LocalWorkers> workers_;    // --backend toolchain: fleet workers
  std::unique_ptr<runner::LocalPool> pool_;  // sim: the job processes themselves
  std::string store_dir_, cache_dir_;
  const PrivateEndpoint endpoint_;
  std::optional<LayerRange> range_;
  std::string name_;  // of the report: the model's, or the subgraph's
  ModelReport previous_;
  std::map<std::string, const LayerReport*> prev_by_id_;
  int skipped_known_ = 0;
  int pins_kept_ = 0, pins_released_ = 0;
  VariantRecord variant_;  // what this discover's results are of (issue 29)  // edit --executor decisions kept / released by --recompute-cache
  std::string run_;
  ServeTotals totals_;
};

void Discover::start() {
  if (o_.executors.empty()) throw PipelineError("no executor left to test (all skipped)");
  require_model_file(o_.model);
  check_writable_dir(o_.output_dir);
  store_dir_ = o_.output_dir + "/.torq-store";
  cache_dir_ = store_dir_ + "/models";
  fs::create_directories(cache_dir_);
  base::sweep_dead_temp_files(cache_dir_);
  // The sim backend's millisecond jobs go straight to a pool of job
  // processes (serve_on_pool); a toolchain's take the fleet's path: an
  // embedded FleetBroker on a private ipc:// endpoint, served by local
  // `torq-worker --connect` processes. Either starts (process launch,
  // library and engine initialisation) while the model is imported.
  if (o_.backend != "sim" && !o_.targets_file.empty())
    throw PipelineError("--targets (sim profiles) does not apply to --backend " + o_.backend);
  const LocalWorkersOptions lo = discover_workers(o_, store_dir_, cache_dir_, endpoint_.str());
  if (o_.backend == "sim") pool_ = start_local_pool(lo);
  else workers_ = std::make_unique<LocalWorkers>(lo);
  ImportOptions io;
  io.convert_bf16 = o_.convert_bf16;
  io.rounding = o_.rounding;
  // Local workers read the model from the cache file, written in the pass
  // that hashes it; the store's models column family (a synced 50 MB write
  // for resnet18) serves fleet workers and is filled by torq-coordinator.
  io.copy_to = cache_import_path(cache_dir_);
  // The store opens (tens of ms: RocksDB's recovery and option files)
  // while the model is imported.
  auto opening = std::async(std::launch::async, [this] { return Store::open(store_dir_ + "/db"); });
  try {
    units_[0].model = ImportedModel::from_file(o_.model, io);
  } catch (...) {
    adopt_cache_file(cache_dir_, "");
    try {
      opening.get();
    } catch (...) {  // the import's error is the one to report
    }
    throw;
  }
  adopt_cache_file(cache_dir_, model().hash());
  store_ = opening.get();
  if (!o_.save_bf16_model.empty()) {
    if (!o_.convert_bf16) throw PipelineError("--save-bf16-model needs --auto-convert-bf16");
    model().write_file(o_.save_bf16_model);
  }
}

void Discover::log_model() {
  for (const auto& w : model().warnings()) log_.line("warning: " + w);
  log_.line("model " + model().name() + ": " + std::to_string(model().layers().size()) + " layers, sha256 " +
            model().hash().substr(0, 16) +
            (o_.convert_bf16 ? ", converted to bf16 (" + std::string(engine::rounding_name(o_.rounding)) + ")" : ""));
  if (!o_.convert_bf16) return;
  double worst = 0;
  std::string worst_name;
  for (const auto& c : model().conversion())
    if (c.max_rel > worst) {
      worst = c.max_rel;
      worst_name = c.tensor;
    }
  log_.line("bf16 conversion: " + std::to_string(model().conversion().size()) +
            " tensors, worst max relative error " + fmt(worst, 5) +
            (worst_name.empty() ? "" : " (" + worst_name + ")"));
}

void Discover::choose_range() {
  name_ = model().name();
  if (o_.subgraph_from.empty() && o_.subgraph_to.empty()) return;
  // A subgraph: its own report files, named by node indices as the seed does.
  if (o_.subgraph_from.empty() || o_.subgraph_to.empty())
    throw PipelineError("--subgraph-from and --subgraph-to go together");
  range_ = resolve_range(model(), o_.subgraph_from, o_.subgraph_to);
  name_ = subgraph_name(model().name(), *range_);
  log_.line("subgraph " + name_ + ": layers " + std::to_string(range_->first) + ".." +
            std::to_string(range_->last) + " (" + model().layers()[range_->first].id + " .. " +
            model().layers()[range_->last].id + ")");
}

// The previous report, if any: edited tolerances, skip-mode knowledge.
void Discover::read_previous() {
  variant_ = variant_of(o_.model, o_.convert_bf16, o_.rounding, o_.quantization, o_.backend, o_.toolchain_file,
                        o_.targets_file);
  const std::string rpath = report_path(o_.output_dir, name_);
  if (!fs::exists(rpath)) return;
  try {
    previous_ = read_report_file(rpath);
  } catch (const std::exception& e) {
    log_.line(std::string("warning: ignoring unreadable previous report: ") + e.what());
    return;
  }
  // One report, one variant: never results of two in one file.
  if (previous_.variant) {
    const std::string why = variant_mismatch(*previous_.variant, variant_, rpath);
    if (!why.empty() && !o_.recompute_cache) throw PipelineError(why);
    if (!why.empty()) {
      log_.line("replacing " + rpath + " (" + variant_text(*previous_.variant) + ") with " + variant_text(variant_) +
                " (--recompute-cache)");
      previous_ = ModelReport{};
      return;
    }
  }
  for (const auto& l : previous_.layers) prev_by_id_[l.info.id] = &l;
}

namespace {

// -k that selects nothing is an error, not a run of nothing that reports
// "No critical failures": the closest <layer id>_<executor> keys are named.
void check_filter_selects(const DiscoverOptions& o, const std::string& model_name,
                          const std::vector<LayerInfo>& layers) {
  if (o.filter.empty()) return;
  std::vector<std::string> keys;
  for (const auto& l : layers)
    for (Executor e : o.executors) {
      const std::string key = l.id + "_" + executor_name(e);
      const std::string seed_case =
          model_name + "_layer_" + l.op_type + "_" + std::to_string(l.index) + "_" + executor_name(e);
      if (key.find(o.filter) != std::string::npos || seed_case.find(o.filter) != std::string::npos) return;
      keys.push_back(key);
    }
  std::string near;
  for (const auto& c : engine::closest(o.filter, keys, 5)) near += (near.empty() ? "" : ", ") + c;
  throw PipelineError("-k '" + o.filter + "' selects no layer and executor of " + model_name +
                      " (it matches '<layer id>_<executor>' or '" + model_name +
                      "_layer_<OpType>_<index>_<executor>')" + (near.empty() ? "" : "; closest: " + near));
}

}  // namespace

void Discover::plan() {
  check_filter_selects(o_, model().name(), range_ ? subgraph_layers(model(), *range_) : model().layers());
  // A bad --targets file is reported as itself (file:line:col), before the
  // report's variant is compared with it.
  if (!o_.targets_file.empty() && !o_.op_catalog)
    throw PipelineError("--targets " + o_.targets_file + ": no op catalog to check its profiles against");
  const auto targets = o_.targets_file.empty() ? std::map<Executor, std::string>{}
                                               : read_targets(o_.targets_file, *o_.op_catalog);
  read_previous();
  // The unit: the model's layers (or a subgraph's) with the previous
  // report's tolerance overrides and skip-mode knowledge.
  RunUnit& u = units_[0];
  u.label = model().name();
  u.plan = discover_plan(o_, model().name());
  u.recommend_by_timing = o_.recommend_by_timing;
  u.use_store = !o_.recompute_cache;
  for (const auto& l : model().layers()) {
    auto it = prev_by_id_.find(l.id);
    if (it != prev_by_id_.end() && it->second->tolerance) u.layer_tolerances[l.index] = *it->second->tolerance;
  }
  if (range_) {
    u.range = *range_;
    u.full_model = true;  // the full-subgraph job: the range on its recommended executors
    u.bisect = true;
    FullModelRule rule;
    rule.tolerance = o_.tolerance;
    u.passes = [rule](const ExecResult& r) { return full_model_passes(r, rule); };
  }
  if (o_.skip_mode && !o_.recompute_cache)
    for (const auto& l : model().layers()) {
      auto it = prev_by_id_.find(l.id);
      if (it == prev_by_id_.end() || !it->second->recommended) continue;
      if (it->second->pinned) {  // decided by the user: nothing to test
        u.skip_layers.push_back(l.index);
        ++skipped_known_;
        continue;
      }
      for (const auto& [e, r] : it->second->results)
        if (r.status == Status::kSuccess) {
          u.skip_layers.push_back(l.index);
          ++skipped_known_;
          break;
        }
    }
  if (!o_.targets_file.empty()) u.plan.executor_targets = targets;
  run_ = discover_run_id(o_, model().hash(), u.plan);
  if (o_.recompute_cache) {
    std::vector<int> all;
    for (const auto& l : model().layers()) all.push_back(l.index);
    store_->erase_results(run_, model().hash(), all, o_.executors);
    store_->erase_result(run_, u.full_key(), 0, Executor::kHost);
  }
}

void Discover::serve() {
  auto serve_log = [this](const std::string& s) {
    if (s.rfind("jobs ", 0) == 0) {
      if (log_.tty()) log_.progress("[discover " + name_ + "] " + s);
      else log_.line("[discover " + name_ + "] " + s);
    } else if (s.find("bisect") != std::string::npos || s.find("failing range") != std::string::npos ||
               s.find("no assigned run") != std::string::npos) {
      log_.line(s);
    } else {
      log_.file_line("[coordinator] " + s);
    }
  };
  if (pool_)
    totals_ = serve_on_pool(units_, *store_, run_, *pool_, serve_log);
  else
    totals_ = serve_on_local_workers(units_, *store_, run_, *workers_, endpoint_.str(), store_dir_ + "/workers.log",
                                     serve_log, [this](const std::string& s) { log_.file_line("[coordinator] " + s); });
  log_.progress_clear();
}

// The previous report's layers, overlaid with this run's results (a
// subgraph's layers come renumbered from 0, under its own name), with
// their MLIR locations.
ModelReport Discover::report() {
  ModelReport rep = unit_layers_report(units_[0], *store_, run_, o_.tolerance);
  rep.variant = variant_;
  for (auto& l : rep.layers) {
    auto prev = prev_by_id_.find(l.info.id);
    if (prev == prev_by_id_.end()) continue;
    l.tolerance = prev->second->tolerance;
    l.extra = prev->second->extra;
    l.result_extra = prev->second->result_extra;
    for (const auto& [e, r] : prev->second->results)
      if (!l.results.count(e)) l.results[e] = r;
    l.recommended = recommend(l, o_.recommend_by_timing);
    // A user's decision (edit --executor) stays until they release it.
    if (prev->second->pinned) {
      if (o_.recompute_cache) {
        ++pins_released_;
      } else {
        l.recommended = prev->second->recommended;
        l.pinned = true;
        ++pins_kept_;
      }
    }
  }
  // Keys of the previous report we do not know stay (e.g. the relaxed
  // full-model `tolerance`); its full-model run is stale after a discover.
  for (const auto& kv : previous_.extra)
    if (kv.first != "full_model" && kv.first != "subgraph") rep.extra.push_back(kv);
  // MLIR locations: the user's import, or the torch-mlir form we emit (of
  // the subgraph as a standalone model for a subgraph report).
  const onnx::ModelProto sub_proto = range_ ? extract_subgraph(model(), *range_) : onnx::ModelProto();
  add_mlir_locations(o_, name_, range_ ? sub_proto : model().proto(), log_, rep);
  return rep;
}

void Discover::write_report(const ModelReport& rep, const std::optional<FullModelRun>& full) {
  write_report_files(rep, o_.output_dir);
  if (range_) {
    nlohmann::ordered_json j = report_to_json(rep);
    j["subgraph"] = {{"model", model().name()},
                     {"from", o_.subgraph_from},
                     {"to", o_.subgraph_to},
                     {"first_node", range_->first},
                     {"last_node", range_->last},
                     {"first_layer", model().layers()[range_->first].id},
                     {"last_layer", model().layers()[range_->last].id}};
    if (full) attach_full_model(&j, *full);
    write_json_atomic(report_path(o_.output_dir, name_), j);
  }
  if (o_.collect_profile) {
    const size_t n = export_layer_profiles(rep, o_.output_dir + "/" + name_ + "_profiles");
    log_.line("profiles: " + std::to_string(n) + " layer runs in " + o_.output_dir + "/" + name_ +
              "_profiles (CSVs and Perfetto trace JSON each)");
  }
}

void Discover::log_totals(const ModelReport& rep) {
  const double total_s = std::chrono::duration<double>(Clock::now() - started_).count();
  const size_t dispatched = totals_.fleet_jobs;
  double job_time_ms = 0;
  for (const auto& l : rep.layers)
    for (const auto& [e, r] : l.results)
      if (!r.cached && r.dedup_of.empty()) job_time_ms += r.host_ms;
  log_.line("jobs: " + std::to_string(dispatched) + " run, " + std::to_string(totals_.resumed) +
            " resumed from the store, " + std::to_string(totals_.cache_hits) + " from the cache, " +
            std::to_string(totals_.saved_by_dedup) + " saved by dedup, " + std::to_string(skipped_known_) +
            " layers skipped (known success or pinned)");
  if (pins_kept_ > 0)
    log_.line("pinned: " + std::to_string(pins_kept_) + " layer(s) keep the executor `edit --executor` chose "
              "(release with: torq-gen-config edit --layer ... --executor auto, or discover --recompute-cache)");
  if (pins_released_ > 0)
    log_.line("pinned: " + std::to_string(pins_released_) + " pin(s) released by --recompute-cache");
  // efficiency = (sum of job run times) / (wall time x workers), over the
  // whole command (import and report included).
  log_.line("wall " + fmt(total_s, 2) + " s (jobs " + fmt(totals_.run_s, 2) + " s), " +
            fmt(total_s > 0 ? static_cast<double>(dispatched) / total_s : 0) + " jobs/s, efficiency " +
            fmt(total_s > 0 ? job_time_ms / 1000.0 / (total_s * std::max(1, o_.workers)) : 0, 2) + " on " +
            std::to_string(o_.workers) + " workers");
  log_.line("report: " + report_path(o_.output_dir, name_));
  log_.line("compiler: " + compiler_path(o_.output_dir, name_));
}

int Discover::finish() {
  const ModelReport rep = report();
  std::optional<FullModelRun> full;
  if (range_ && units_[0].full_result) {
    std::vector<LayerInfo> infos;
    for (const auto& l : rep.layers) infos.push_back(l.info);
    full = full_model_run(units_[0], infos, FullModelRule{o_.tolerance, {}, {}, ""});
  }
  write_report(rep, full);
  const ReportSummary sum = summarize(rep);
  if (!o_.quiet) {
    std::string text = render_final_report(rep);
    if (!text.empty() && text.back() != '\n') text += '\n';
    out_ << text;
    if (full) out_ << "\n" << full_model_text(*full);
  }
  log_totals(rep);
  if (full && !full->passed) return 1;
  return sum.critical_failures.empty() ? 0 : 1;
}

}  // namespace

int run_discover(const DiscoverOptions& o, std::ostream& out, std::ostream& err) {
  std::unique_ptr<Discover> d;
  try {
    d = std::make_unique<Discover>(o, out);
  } catch (const std::exception& e) {
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
  try {
    d->start();
    d->log_model();
    d->choose_range();
    d->plan();
    d->serve();
    return d->finish();
  } catch (const std::exception& e) {
    d->log().progress_clear();
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace torq::coordinator
