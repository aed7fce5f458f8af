// Units → plan → fleet → store (see unit_run.h).
#include "coordinator/unit_run.h"

#include <unordered_map>

#include "coordinator/cache_writer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "coordinator/assigned_run.h"
#include "pipeline/mlir.h"
#include "pipeline/recommend.h"
#include "pipeline/report.h"
#include "pipeline/base/config_dir.h"

namespace torq::coordinator {

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

std::string file_digest(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return sha256_hex(ss.str()).substr(0, 16);
}

// The profile a job runs under: its target's file for a sim profile set,
// else the built-in profile of its executor; an assigned full-model run
// runs under all three.
std::string profile_digest(const JobSpec& j, std::map<std::string, std::string>& memo);
std::string single_profile_digest(const JobSpec& j, std::map<std::string, std::string>& memo) {
  const std::string path = j.target.find('/') != std::string::npos
                               ? j.target
                               : base::targets_dir() + "/" + executor_name(j.executor) + ".yaml";
  auto it = memo.find(path);
  if (it == memo.end()) it = memo.emplace(path, file_digest(path)).first;
  return it->second;
}
std::string profile_digest(const JobSpec& j, std::map<std::string, std::string>& memo) {
  if (j.assignment.empty()) return single_profile_digest(j, memo);
  std::string all;
  for (Executor e : kExecutorPriority) {
    JobSpec one = j;
    one.executor = e;
    if (j.executor_targets.size() == 3 && !j.executor_targets[static_cast<size_t>(e)].empty())
      one.target = j.executor_targets[static_cast<size_t>(e)];
    all += single_profile_digest(one, memo) + ",";
  }
  return all;
}

std::string plan_text(const PlanOptions& p) {
  const JobSpec& t = p.job_template;
  std::string s = t.target + "|";
  for (Executor e : p.executors) s += std::string(executor_name(e)) + ",";
  s += (p.dedup == DedupMode::kOff ? "|nodedup" : "|dedup") + std::string(p.skip_mode ? "|skip" : "") + "|t" +
       std::to_string(t.timing_runs) + "|to" + std::to_string(t.timeout_ms) + "|tol" +
       fmt(t.tolerance.fp_avg_tol, 6) + "," + fmt(t.tolerance.fp_max_tol, 6) + "," + fmt(t.tolerance.allowed_wrong, 6) +
       (t.random_inputs ? "|random," + std::to_string(t.seed) : "|activations") + (t.bf16_rne ? "|rne" : "");
  return s;
}

// The content of the profile each executor of a unit runs under: a run
// whose profile file was edited is another run (its layers are recomputed;
// the cache still serves what the edit did not change).
std::string profiles_text(const PlanOptions& p, std::map<std::string, std::string>& memo) {
  std::string s;
  for (Executor e : p.executors) {
    JobSpec one = p.job_template;
    one.executor = e;
    if (auto t = p.executor_targets.find(e); t != p.executor_targets.end()) one.target = t->second;
    s += single_profile_digest(one, memo) + ",";
  }
  return s;
}

}  // namespace

std::string units_run_id(const std::string& kind, const std::vector<RunUnit>& units) {
  std::map<std::string, std::string> digests;
  std::vector<std::string> parts;
  for (const auto& u : units)
    parts.push_back(u.key() + "|" + u.model->hash() + "|" + plan_text(u.plan) + "|" + profiles_text(u.plan, digests));
  std::sort(parts.begin(), parts.end());
  std::string key = kind;
  for (const auto& p : parts) key += "\n" + p;
  return sha256_hex(key).substr(0, 16);
}

namespace {

// Plans the units and runs their jobs: through a FleetBroker bound per `bo`,
// or through `local` when it is given.
ServeTotals serve(std::vector<RunUnit>& units, Store& store, const std::string& run, BrokerOptions bo,
                  const Dispatch* local, const LogFn& log, const std::function<void()>& after_run) {
  ServeTotals t;
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < units.size(); ++i) {
    RunUnit& u = units[i];
    if (!by_key.emplace(u.key(), i).second)
      throw PipelineError(u.label + ": tests the same model the same way as " + units[by_key[u.key()]].label);
    if (u.full_model) by_key.emplace(u.full_key(), i);
    std::vector<std::string> signatures;
    if (u.plan.dedup != DedupMode::kOff)
      for (const auto& l : u.model->layers())
        signatures.push_back(layer_signature(u.model->proto(), u.model->layer_nodes(), l.index, u.plan.dedup));
    u.plan.job_template.model_hash = u.model->hash();
    u.planner = std::make_unique<Planner>(u.model->hash(), u.model->layers(), signatures, u.plan,
                                          u.layer_tolerances);
    const LayerRange lr = u.layers();
    for (const auto& l : u.model->layers())
      if (static_cast<uint32_t>(l.index) < lr.first || static_cast<uint32_t>(l.index) > lr.last)
        u.planner->skip_layer(l.index);
    for (int l : u.skip_layers) u.planner->skip_layer(l);
    t.total_layers += u.model->layers().size();
    t.estimate += u.planner->jobs_total_estimate();
    t.saved_by_dedup += u.planner->jobs_saved_by_dedup();
    if (u.full_model) ++t.estimate;
  }
  std::map<std::string, std::string> digests;
  const auto t_run = Clock::now();
  auto record = [&](RunUnit& u, const JobSpec& j, const ExecResult& r) {
    if (!record_assigned(u, j, r, log)) u.planner->finished(j, r);
    ++u.jobs_done;
    ++t.done_jobs;
    ++t.by_status[r.status];
    if (r.status == Status::kError) ++t.by_class[r.error_class.empty() ? "unknown" : r.error_class];
    if (t.done_jobs % 25 == 0) {
      const double secs = std::chrono::duration<double>(Clock::now() - t_run).count();
      log("jobs " + std::to_string(t.done_jobs) + "/" + std::to_string(std::max(t.estimate, t.done_jobs)) + " | " +
          fmt(secs > 0 ? static_cast<double>(t.fleet_jobs) / secs : 0) + " jobs/s");
    }
  };
  // Cache hits are committed in one batch per unit each time next() returns
  // (nothing is acknowledged for them: a crash before that just serves them
  // from the cache again).
  std::map<std::string, std::vector<Store::Commit>> cached_commits;
  auto commit_cached = [&] {
    for (const auto& [key, commits] : cached_commits) store.commit_results(run, key, commits);
    cached_commits.clear();
  };
  // A job whose result is already known: resumed from the store (this run)
  // or served by the content-addressed cache. Records it and returns true.
  CacheWriter cache_writer(store);  // this run's cache entries, written off the broker's thread
  std::unordered_map<std::string, std::string> key_of;  // job id -> cache key, computed in known()
  auto known = [&](RunUnit& u, const JobSpec& j) {
    if (!u.use_store) return false;
    const int layer = j.assignment.empty() ? static_cast<int>(j.first_node) : 0;
    for (const auto& r : store.layer_results(run, result_key_of(j), layer))
      if (r.executor == j.executor && r.tolerance_used == j.tolerance) {
        ++t.resumed;
        record(u, j, r);
        return true;
      }
    std::string key = cache_key(j, profile_digest(j, digests), kEngineIdentity);
    if (auto c = cache_writer.get(key)) {
      c->cached = true;
      c->job_id = j.id;
      cached_commits[result_key_of(j)].push_back(Store::Commit{layer, *c, j.id, encode_job(j)});
      ++t.cache_hits;
      record(u, j, *c);
      return true;
    }
    key_of.emplace(j.id, std::move(key));  // for its result, when it comes
    return false;
  };
  size_t rr = 0;
  auto next = [&]() -> std::optional<JobSpec> {
    for (size_t k = 0; k < units.size(); ++k) {
      RunUnit& u = units[(rr + k) % units.size()];
      std::optional<JobSpec> j;
      while ((j = u.planner->next()) && known(u, *j)) {
      }
      if (!j) {
        // The assigned run reads the recommendations from the store.
        if (u.full_model && !u.full_issued && u.planner->all_done()) commit_cached();
        while ((j = next_assigned_job(u, store, run, log)) && known(u, *j)) {
        }
      }
      if (!j) continue;
      // Stay on this unit until it runs dry: workers keep a few models'
      // activations in memory, so interleaving many models would make
      // them recompute a full-model run for nearly every job.
      rr = (rr + k) % units.size();
      if (!j->assignment.empty()) by_key.emplace(result_key_of(*j), rr);
      commit_cached();
      return j;
    }
    commit_cached();
    return std::nullopt;
  };
  CacheWriter::Entries to_cache;  // handed to the writer once per group commit
  auto done = [&](const JobSpec& j, const ExecResult& r) {
    auto k = key_of.find(j.id);
    if (r.status != Status::kError || r.error_class == "unsupported" || r.error_class == "compile")
      to_cache.emplace_back(k != key_of.end() ? std::move(k->second) : cache_key(j, profile_digest(j, digests), kEngineIdentity), r);
    if (k != key_of.end()) key_of.erase(k);
    ++t.fleet_jobs;
    record(units[by_key.at(result_key_of(j))], j, r);
  };
  if (!bo.log) bo.log = log;
  std::optional<FleetBroker> broker;
  const std::string header = "run " + run + ": " + std::to_string(units.size()) + " units, " +
                             std::to_string(t.total_layers) + " layers, ~" + std::to_string(t.estimate) + " jobs";
  if (local) {
    log(header + " on local job processes");
    t.complete = (*local)(next, done, [&] { cache_writer.put(to_cache); });
  } else {
    broker.emplace(store, run, bo);
    t.endpoint = broker->endpoint();
    log(header + "; listening on " + t.endpoint);
    t.complete = broker->run(next, done, [&] { cache_writer.put(to_cache); });
  }
  cache_writer.put(to_cache);  // any reported outside a group commit
  cache_writer.finish();
  if (broker) {
    t.fleet = broker->stats();
    t.pending = broker->pending();
  }
  if (after_run) after_run();
  t.run_s = std::chrono::duration<double>(Clock::now() - t_run).count();
  return t;
}

}  // namespace

ServeTotals serve_units(std::vector<RunUnit>& units, Store& store, const std::string& run, BrokerOptions bo,
                        const LogFn& log, const std::function<void()>& after_run) {
  return serve(units, store, run, std::move(bo), nullptr, log, after_run);
}

ServeTotals serve_units_on(std::vector<RunUnit>& units, Store& store, const std::string& run, const Dispatch& dispatch,
                           const LogFn& log) {
  return serve(units, store, run, BrokerOptions{}, &dispatch, log, {});
}

namespace {

// The unit's layers with their stored results and dedup copies.
std::vector<LayerReport> unit_layers(const RunUnit& u, const Store& store, const std::string& run) {
  std::vector<LayerReport> layers;
  auto all = store.model_results(run, u.key());
  for (const auto& info : u.model->layers()) {
    LayerReport lr;
    lr.info = info;
    auto it = all.find(info.index);
    if (it != all.end())
      for (const auto& r : it->second) lr.results[r.executor] = r;
    layers.push_back(lr);
  }
  for (const auto& [dup, src] : u.planner->dedup_of()) {
    auto& d = layers[static_cast<size_t>(dup)];
    d.dedup_of = layers[static_cast<size_t>(src)].info.id;
    for (auto [e, r] : layers[static_cast<size_t>(src)].results) {
      r.dedup_of = d.dedup_of;
      d.results[e] = r;
    }
  }
  for (auto& l : layers) l.recommended = recommend(l, u.recommend_by_timing);
  return layers;
}

}  // namespace

std::vector<std::pair<std::optional<Executor>, Status>> unit_recommendations(const RunUnit& u, const Store& store,
                                                                             const std::string& run) {
  std::vector<std::pair<std::optional<Executor>, Status>> out;
  for (const auto& l : unit_layers(u, store, run))
    out.emplace_back(l.recommended, l.recommended ? l.results.at(*l.recommended).status : Status::kError);
  return out;
}

ModelReport unit_report(const RunUnit& u, const Store& store, const std::string& run, const Tolerance& tol,
                        const std::string& mlir_dir, const LogFn& log) {
  ModelReport rep;
  rep.model_name = u.range ? subgraph_name(u.model->name(), *u.range) : u.model->name();
  rep.default_tolerance = tol;
  if (u.fixed_assignment) return rep;  // no layer jobs: nothing per layer to report
  rep.layers = unit_layers(u, store, run);
  onnx::ModelProto sub;
  if (u.range) {
    std::vector<LayerReport> layers;
    const auto infos = subgraph_layers(*u.model, *u.range);
    for (uint32_t i = u.range->first; i <= u.range->last; ++i) {
      layers.push_back(rep.layers[i]);
      layers.back().info = infos[i - u.range->first];
    }
    rep.layers = std::move(layers);
    sub = extract_subgraph(*u.model, *u.range);
  }
  const onnx::ModelProto& proto = u.range ? sub : u.model->proto();
  const std::string mlir = emit_torch_mlir(proto);
  if (!mlir_dir.empty()) {
    std::ofstream f(mlir_dir + "/" + rep.model_name + ".torch.mlir");
    f << mlir;
  }
  MlirMapping mm = map_layer_locations(mlir, proto);
  for (const auto& p : mm.problems) log(u.label + " MLIR: " + p);
  for (size_t i = 0; i < rep.layers.size() && i < mm.locations.size(); ++i)
    rep.layers[i].info.mlir_location = mm.locations[i];
  return rep;
}

}  // namespace torq::coordinator
