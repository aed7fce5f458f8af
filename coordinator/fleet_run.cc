// torq-coordinator's run: plan → fleet → store → reports (see fleet_run.h).
#include "coordinator/fleet_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "pipeline/mlir.h"
#include "pipeline/model_import.h"
#include "pipeline/plan.h"
#include "pipeline/recommend.h"
#include "pipeline/report.h"
#include "pipeline/store.h"
#include "worker/engine/profile.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;
using Clock = std::chrono::steady_clock;

namespace {

// Identity of the executor backend in cache keys (as torq-gen-config discover).
constexpr const char* kEngineIdentity = "torq-sim-0.1";

std::string fmt(double v, int prec = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string profile_digest(Executor e) {
  std::ifstream f(engine::ExecutorProfile::targets_dir() + "/" + executor_name(e) + ".yaml");
  std::stringstream ss;
  ss << f.rdbuf();
  return sha256_hex(ss.str()).substr(0, 16);
}

struct Model {
  std::unique_ptr<ImportedModel> model;
  std::unique_ptr<Planner> planner;
  size_t jobs_done = 0;
};

// The per-model report from the store (DESIGN §5), with MLIR locations.
ModelReport build_report(const Model& m, Store& store, const std::string& run, const Tolerance& tol,
                         const std::string& export_dir, const std::function<void(const std::string&)>& log) {
  ModelReport rep;
  rep.model_name = m.model->name();
  rep.default_tolerance = tol;
  auto all = store.model_results(run, m.model->hash());
  for (const auto& info : m.model->layers()) {
    LayerReport lr;
    lr.info = info;
    auto it = all.find(info.index);
    if (it != all.end())
      for (const auto& r : it->second) lr.results[r.executor] = r;
    rep.layers.push_back(lr);
  }
  for (const auto& [dup, src] : m.planner->dedup_of()) {
    auto& d = rep.layers[static_cast<size_t>(dup)];
    d.dedup_of = rep.layers[static_cast<size_t>(src)].info.id;
    for (auto [e, r] : rep.layers[static_cast<size_t>(src)].results) {
      r.dedup_of = d.dedup_of;
      d.results[e] = r;
    }
  }
  for (auto& l : rep.layers) l.recommended = recommend(l, false);
  const std::string mlir = emit_torch_mlir(m.model->proto());
  if (!export_dir.empty()) {
    std::ofstream f(export_dir + "/" + rep.model_name + ".torch.mlir");
    f << mlir;
  }
  MlirMapping mm = map_mlir_locations(mlir, non_constant_op_types(m.model->proto()));
  for (const auto& p : mm.problems) log(rep.model_name + " MLIR: " + p);
  for (size_t i = 0; i < rep.layers.size() && i < mm.locations.size(); ++i)
    rep.layers[i].info.mlir_location = mm.locations[i];
  return rep;
}

}  // namespace

int run_fleet(const FleetRunOptions& o, std::ostream& out, std::ostream& err) {
  auto log = [&err](const std::string& s) { err << "[coordinator] " << s << "\n" << std::flush; };
  const auto t_start = Clock::now();
  const FleetSpec& spec = o.spec;

  // Import the models into the store (workers fetch them by hash).
  std::unique_ptr<Store> store;
  std::vector<Model> models;
  std::map<std::string, size_t> by_hash;
  try {
    if (spec.models.empty()) throw PipelineError("no models given (--model or --spec)");
    if (spec.executors.empty()) throw PipelineError("no executors to test");
    if (!o.export_dir.empty()) {
      fs::create_directories(o.export_dir);
      if (!fs::is_directory(o.export_dir)) throw PipelineError(o.export_dir + ": cannot create export directory");
    }
    {
      std::error_code ec;  // RocksDB creates the last level only
      const fs::path parent = fs::path(o.db).parent_path();
      if (!parent.empty()) fs::create_directories(parent, ec);
    }
    store = Store::open(o.db);
    ImportOptions io;
    io.convert_bf16 = spec.auto_convert_bf16;
    std::set<std::string> names;
    for (const auto& path : spec.models) {
      Model m;
      m.model = ImportedModel::from_file(path, io);
      if (by_hash.count(m.model->hash())) {
        log(path + ": the same model as another one in this run; counted once");
        continue;
      }
      if (!names.insert(m.model->name()).second)
        throw PipelineError(path + ": another model of this run is also named '" + m.model->name() +
                            "' (its report files would collide)");
      for (const auto& w : m.model->warnings()) log(m.model->name() + ": warning: " + w);
      store->put_model(m.model->hash(), m.model->bytes());
      by_hash[m.model->hash()] = models.size();
      models.push_back(std::move(m));
    }
  } catch (const std::exception& e) {
    err << "torq-coordinator: error: " << e.what() << "\n";
    return 2;
  }

  // Plan every model; the run id names models + options, so a rerun resumes.
  std::string run_key = "fleet|" + spec.target + "|";
  for (Executor e : spec.executors) run_key += std::string(executor_name(e)) + ",";
  run_key += std::string(spec.auto_convert_bf16 ? "|bf16" : "|fp32") + (spec.dedup ? "|dedup" : "") +
             (spec.skip_mode ? "|skip" : "") + "|t" + std::to_string(spec.timing_runs) + "|to" +
             std::to_string(o.job_timeout_ms) + "|tol" + fmt(o.tolerance.fp_avg_tol, 6) + "," +
             fmt(o.tolerance.fp_max_tol, 6) + "," + fmt(o.tolerance.allowed_wrong, 6);
  std::vector<std::string> hashes;
  for (const auto& m : models) hashes.push_back(m.model->hash());
  std::sort(hashes.begin(), hashes.end());
  for (const auto& h : hashes) run_key += "|" + h;
  const std::string run = sha256_hex(run_key).substr(0, 16);
  size_t total_layers = 0, estimate = 0, saved_by_dedup = 0;
  for (auto& m : models) {
    PlanOptions po;
    po.executors = spec.executors;
    po.skip_mode = spec.skip_mode;
    po.dedup = spec.dedup ? DedupMode::kSignature : DedupMode::kOff;
    po.job_template.target = spec.target;
    po.job_template.tolerance = o.tolerance;
    po.job_template.timing_runs = spec.timing_runs;
    po.job_template.timeout_ms = o.job_timeout_ms;
    std::vector<std::string> signatures;
    if (spec.dedup)
      for (const auto& l : m.model->layers())
        signatures.push_back(layer_signature(m.model->proto(), m.model->node_positions(), l.index, po.dedup));
    m.planner = std::make_unique<Planner>(m.model->hash(), m.model->layers(), signatures, po, std::map<int, Tolerance>{});
    total_layers += m.model->layers().size();
    estimate += m.planner->jobs_total_estimate();
    saved_by_dedup += m.planner->jobs_saved_by_dedup();
  }
  try {
    nlohmann::json meta = {{"kind", "fleet"}, {"target", spec.target}, {"models", nlohmann::json::array()}};
    for (const auto& m : models) meta["models"].push_back({{"name", m.model->name()}, {"hash", m.model->hash()}});
    store->put_run_meta(run, meta.dump());
  } catch (const std::exception& e) {
    err << "torq-coordinator: error: " << e.what() << "\n";
    return 2;
  }
  std::map<Executor, std::string> digests;
  for (Executor e : kExecutorPriority) digests[e] = profile_digest(e);

  // Counters and the record of every finished job (fresh, resumed, cached).
  size_t done_jobs = 0, fleet_jobs = 0, resumed = 0, cache_hits = 0;
  std::map<Status, size_t> by_status;
  std::map<std::string, size_t> by_class;
  const auto t_run = Clock::now();
  auto record = [&](Model& m, const JobSpec& j, const ExecResult& r) {
    m.planner->finished(j, r);
    ++m.jobs_done;
    ++done_jobs;
    ++by_status[r.status];
    if (r.status == Status::kError) ++by_class[r.error_class.empty() ? "unknown" : r.error_class];
    if (done_jobs % 25 == 0) {
      const double secs = std::chrono::duration<double>(Clock::now() - t_run).count();
      log("jobs " + std::to_string(done_jobs) + "/" + std::to_string(std::max(estimate, done_jobs)) + " | " +
          fmt(secs > 0 ? static_cast<double>(fleet_jobs) / secs : 0) + " jobs/s");
    }
  };
  size_t rr = 0;
  // Cache hits are committed in one batch per model each time next() returns
  // (nothing is acknowledged for them: a crash before that just serves them
  // from the cache again).
  std::map<std::string, std::vector<Store::Commit>> cached_commits;
  auto commit_cached = [&] {
    for (const auto& [hash, commits] : cached_commits) store->commit_results(run, hash, commits);
    cached_commits.clear();
  };
  auto next = [&]() -> std::optional<JobSpec> {
    for (size_t k = 0; k < models.size(); ++k) {
      Model& m = models[(rr + k) % models.size()];
      while (auto j = m.planner->next()) {
        const int layer = static_cast<int>(j->first_node);
        bool known = false;
        for (const auto& r : store->layer_results(run, j->model_hash, layer))
          if (r.executor == j->executor && r.tolerance_used == j->tolerance) {
            ++resumed;
            record(m, *j, r);
            known = true;
            break;
          }
        if (known) continue;
        if (auto c = store->get_cache(cache_key(*j, digests[j->executor], kEngineIdentity))) {
          c->cached = true;
          c->job_id = j->id;
          cached_commits[j->model_hash].push_back(Store::Commit{layer, *c, j->id, encode_job(*j)});
          ++cache_hits;
          record(m, *j, *c);
          continue;
        }
        rr = (rr + k + 1) % models.size();
        commit_cached();
        return j;
      }
    }
    commit_cached();
    return std::nullopt;
  };
  std::vector<std::pair<std::string, ExecResult>> to_cache;  // written once per group commit
  auto done = [&](const JobSpec& j, const ExecResult& r) {
    if (r.status != Status::kError || r.error_class == "unsupported" || r.error_class == "compile")
      to_cache.emplace_back(cache_key(j, digests[j.executor], kEngineIdentity), r);
    ++fleet_jobs;
    record(models[by_hash.at(j.model_hash)], j, r);
  };

  // Serve the fleet.
  bool complete = false;
  BrokerStats fleet;
  std::string endpoint;
  try {
    BrokerOptions bo = o.broker;
    bo.log = log;
    FleetBroker broker(*store, run, bo);
    endpoint = broker.endpoint();
    log("run " + run + ": " + std::to_string(models.size()) + " models, " + std::to_string(total_layers) +
        " layers, ~" + std::to_string(estimate) + " jobs; listening on " + endpoint);
    complete = broker.run(next, done, [&] {
      store->put_caches(to_cache);
      to_cache.clear();
    });
    store->put_caches(to_cache);  // any reported outside a group commit
    fleet = broker.stats();
    if (!complete)
      log("stopped early with " + std::to_string(broker.pending()) +
          " jobs unfinished; run again with the same --db to resume");
  } catch (const std::exception& e) {
    err << "torq-coordinator: error: " << e.what() << "\n";
    return 2;
  }
  const double run_s = std::chrono::duration<double>(Clock::now() - t_run).count();

  // Reports per model.
  std::vector<std::string> exported;
  int critical = 0;
  if (complete) {
    try {
      for (const auto& m : models) {
        ModelReport rep = build_report(m, *store, run, o.tolerance, o.export_dir, log);
        critical += static_cast<int>(summarize(rep).critical_failures.size());
        if (!o.export_dir.empty()) {
          write_report_files(rep, o.export_dir);
          exported.push_back(report_path(o.export_dir, rep.model_name));
          exported.push_back(compiler_path(o.export_dir, rep.model_name));
        }
      }
    } catch (const std::exception& e) {
      err << "torq-coordinator: error: " << e.what() << "\n";
      return 2;
    }
  }

  // The one-screen summary.
  const double wall_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  std::string classes;
  for (const auto& [c, n] : by_class) classes += (classes.empty() ? "" : ", ") + c + " " + std::to_string(n);
  out << "== torq-coordinator run " << run << ": " << (complete ? "complete" : "STOPPED EARLY (resumable)") << " ==\n";
  out << "models    " << models.size() << " (";
  for (size_t i = 0; i < models.size(); ++i)
    out << (i ? ", " : "") << models[i].model->name() << " " << models[i].model->layers().size() << " layers";
  out << ")\n";
  out << "layers    " << total_layers << ", critical failures " << critical << "\n";
  out << "jobs      " << done_jobs << " finished: " << fleet_jobs << " run on the fleet, " << resumed
      << " resumed from the store, " << cache_hits << " cache hits; " << saved_by_dedup << " saved by dedup\n";
  out << "results   success " << by_status[Status::kSuccess] << ", difference " << by_status[Status::kDifference]
      << ", error " << by_status[Status::kError] << (classes.empty() ? "" : " (" + classes + ")") << "\n";
  out << "fleet     " << fleet.workers_seen << " worker registrations, " << fleet.workers_expired << " expired, "
      << fleet.requeued << " jobs requeued, " << fleet.crashed << " crashed, " << fleet.duplicates
      << " duplicate results dropped, " << fleet.bad_frames << " bad frames, " << fleet.blobs_served
      << " model blobs served\n";
  out << "time      wall " << fmt(wall_s, 2) << " s, fleet " << fmt(run_s, 2) << " s, "
      << fmt(run_s > 0 ? static_cast<double>(fleet_jobs) / run_s : 0) << " jobs/s\n";
  if (!fleet.dispatch_latency_us.empty())
    out << "dispatch  " << fleet.dispatch_latency_us.size() << " results, latency JOB sent -> RESULT received p50 "
        << fmt(fleet.dispatch_latency_ms(0.5), 3) << " ms, p99 " << fmt(fleet.dispatch_latency_ms(0.99), 3)
        << " ms; first JOB to last commit " << fmt(fleet.dispatch_window_s, 3) << " s, "
        << fmt(fleet.dispatch_window_s > 0 ? static_cast<double>(fleet.completed) / fleet.dispatch_window_s : 0)
        << " jobs/s; synced writes: " << fleet.result_commits << " result batches, " << fleet.lease_commits
        << " lease batches\n";
  for (const auto& p : exported) out << "export    " << p << "\n";
  out << std::flush;
  if (!complete) return 0;
  return critical > 0 ? 1 : 0;
}

}  // namespace torq::coordinator
