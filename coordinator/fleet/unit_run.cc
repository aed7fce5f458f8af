// Units → plan → fleet → store (see unit_run.h).
#include "coordinator/fleet/unit_run.h"

#include <deque>
#include <unordered_map>

#include "coordinator/fleet/cache_writer.h"
#include "coordinator/fleet/unit_feed.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "coordinator/fleet/assigned_run.h"
#include "coordinator/fleet/fmt.h"
#include "pipeline/wire/fleet_codec.h"
#include "pipeline/model/mlir.h"
#include "pipeline/plan/recommend.h"
#include "pipeline/report/report.h"
#include "pipeline/base/config_dir.h"

namespace torq::coordinator {

using namespace pipeline;
using Clock = std::chrono::steady_clock;

bool foreign_engine(const std::string& toolchain, const std::string& engine) {
  // The sim backend's identity starts with its engine's; a toolchain
  // backend's names the engine of its reference run in "[engine ...]".
  size_t at = 0;
  if (toolchain.rfind("torq-sim", 0) != 0) {
    const size_t tag = toolchain.find("[engine ");
    if (tag == std::string::npos) return false;  // none named
    at = tag + 8;
  }
  const size_t end = toolchain.find_first_of(" ]", at);
  return toolchain.compare(at, end == std::string::npos ? std::string::npos : end - at, engine) != 0;
}

bool cacheable(const ExecResult& r, const std::string& engine) {
  if (r.status == Status::kError && r.error_class != "unsupported" && r.error_class != "compile") return false;
  return !foreign_engine(r.toolchain, engine);
}

namespace {

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

std::string isa_cap() {
  const char* v = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!v || !*v) v = std::getenv("DNNL_MAX_CPU_ISA");
  std::string cap = v ? v : "";
  std::transform(cap.begin(), cap.end(), cap.begin(), [](unsigned char c) { return std::tolower(c); });
  return cap == "all" ? "" : cap;
}

std::string isa_cap_suffix(const std::string& sep) {
  const std::string cap = isa_cap();
  return cap.empty() ? "" : sep + cap;
}

std::string plan_identity(const PlanOptions& plan, std::map<std::string, std::string>& digests) {
  return plan_text(plan) + "|" + profiles_text(plan, digests);
}

std::string run_id_of(const std::string& kind, std::vector<std::string> parts) {
  std::sort(parts.begin(), parts.end());
  std::string key = kind;
  for (const auto& p : parts) key += "\n" + p;
  key += isa_cap_suffix("\nisa ");
  return sha256_hex(key).substr(0, 16);
}

std::string units_run_id(const std::string& kind, const std::vector<RunUnit>& units) {
  std::map<std::string, std::string> digests;
  std::vector<std::string> parts;
  for (const auto& u : units)
    parts.push_back(u.key() + "|" + u.model->hash() + "|" + plan_identity(u.plan, digests) +
                    (u.original_hash.empty() ? "" : "|original " + u.original_hash));
  return run_id_of(kind, std::move(parts));
}

namespace {

// Unit `u`'s planner (its layer range and skipped layers set), with the
// totals it estimates; records its result keys as unit `index`'s in
// `by_key`. Throws PipelineError for a unit that tests a model the same way
// as an earlier one.
void plan_unit(RunUnit& u, size_t index, const std::vector<RunUnit*>& units, std::map<std::string, size_t>& by_key,
               ServeTotals& t) {
  if (!by_key.emplace(u.key(), index).second)
    throw PipelineError(u.label + ": tests the same model the same way as " + units[by_key[u.key()]]->label);
  if (u.full_model) by_key.emplace(u.full_key(), index);
  std::vector<std::string> signatures;
  if (u.plan.dedup != DedupMode::kOff)
    signatures = layer_signatures(u.model->proto(), u.model->layer_nodes(), u.plan.dedup);
  u.plan.job_template.model_hash = u.model->hash();
  u.planner = std::make_unique<Planner>(u.model->hash(), u.model->layers(), signatures, u.plan, u.layer_tolerances);
  // Planned: the workers fetch the model from the store; its report needs no weights.
  if (u.drop_weights_after_planning) u.model->drop_tensor_data();
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

// Where a run's units are: all given at the start (a vector the caller
// keeps), or arriving from a feed while it serves (streamed).
struct UnitSource {
  std::vector<RunUnit>* given = nullptr;
  const StreamedUnits* streamed = nullptr;
};

// The units' jobs as a broker or a pool takes them (next) and their results
// as it reports them (done, after each is committed): records them with
// the planners and in the totals, resumes jobs from the store, serves the
// content-addressed cache and fills it (group_done, finish). With a feed,
// takes the units that arrived at each next() and tells when one is done.
class UnitServer {
 public:
  UnitServer(UnitSource src, Store& store, const std::string& run, const LogFn& log, ServeTotals& t,
             RunObserver* observer)
      : src_(src), store_(store), run_(run), log_(log), t_(t), obs_(observer), cache_writer_(store) {
    if (src_.given)
      for (auto& u : *src_.given) adopt(u);
    if (src_.streamed) take_arrived();
  }

  std::optional<JobSpec> next() {
    if (src_.streamed) take_arrived();
    std::vector<size_t> finished;
    std::optional<JobSpec> out;
    // Units whose last job in flight came back first: each is done now, or
    // has its next job (its assigned run, a bisection step). Left to the
    // round below, a done unit would wait until every unit after the one
    // being served ran dry, and so would the release of its model.
    while (!settled_.empty() && !out) {
      const size_t i = settled_.back();
      settled_.pop_back();
      RunUnit& u = *units_[i];
      if (u.finished || u.in_flight > 0) continue;
      if (std::optional<JobSpec> j = pull(u)) out = issue(i, std::move(*j));
      else finished.push_back(i);
    }
    for (size_t k = 0; k < units_.size() && !out; ++k) {
      const size_t i = (rr_ + k) % units_.size();
      RunUnit& u = *units_[i];
      if (u.finished) continue;
      std::optional<JobSpec> j = pull(u);
      if (!j) {
        // Nothing to issue and nothing in flight: no result can give it more.
        if (u.in_flight == 0) finished.push_back(i);
        continue;
      }
      out = issue(i, std::move(*j));
    }
    commit_cached();  // before a finished unit's report reads the store
    for (size_t i : finished)
      if (!units_[i]->finished) finish(i);
    return out;
  }

  void done(const JobSpec& j, const ExecResult& r) {
    auto k = key_of_.find(j.id);
    if (cacheable(r, engine_identity())) to_cache_.emplace_back(k != key_of_.end() ? std::move(k->second) : key(j), r);
    else if (foreign_engine(r.toolchain, engine_identity()) && warned_.insert(r.toolchain).second)
      log_("warning: worker " + r.worker_id + " runs " + r.toolchain + ", not this coordinator's " +
           engine_identity() + ": its results are recorded but not cached");
    if (k != key_of_.end()) key_of_.erase(k);
    ++t_.fleet_jobs;
    if (src_.streamed && src_.streamed->last_result)
      src_.streamed->last_result->store(Clock::now().time_since_epoch().count());
    const auto unit = by_key_.find(result_key_of(j));
    if (unit == by_key_.end()) return;  // in the store: its unit, when it arrives, resumes it
    RunUnit& u = *units_[unit->second];
    if (auto it = issued_.find(j.id); it != issued_.end()) {
      u.in_flight -= std::min<size_t>(it->second, u.in_flight);
      issued_.erase(it);
      if (u.in_flight == 0 && !u.finished) settled_.push_back(unit->second);
    }
    if (!u.finished) record(u, j, r);
  }
  // Tells of every unit not yet finished (a run that completed: nothing of theirs is left).
  void finish_all() {
    if (src_.streamed) take_arrived();
    for (size_t i = 0; i < units_.size(); ++i)
      if (!units_[i]->finished) finish(i);
  }
  // After each group commit of results: their cache entries.
  void group_done() { cache_writer_.put(to_cache_); }
  // Any reported outside a group commit, and the writer's end.
  void finish() {
    cache_writer_.put(to_cache_);
    cache_writer_.finish();
  }
  Clock::time_point started() const { return started_; }

 private:
  std::string key(const JobSpec& j) { return cache_key(j, profile_digest(j, digests_), cache_engine_); }

  void record(RunUnit& u, const JobSpec& j, const ExecResult& r) {
    if (!record_assigned(u, j, r, log_)) u.planner->finished(j, r);
    ++u.jobs_done;
    ++t_.done_jobs;
    ++t_.by_status[r.status];
    if (r.status == Status::kError) ++t_.by_class[r.error_class.empty() ? "unknown" : r.error_class];
    if (obs_) obs_->job_done(j, r, t_.done_jobs, std::max(t_.estimate, t_.done_jobs));
    // Every 25 jobs, or every thousandth of the run when that is more (a
    // million-job run logged 40,000 lines).
    const size_t every = std::max<size_t>(25, t_.estimate / 1000 / 25 * 25);
    if (t_.done_jobs % every == 0) {
      const double secs = std::chrono::duration<double>(Clock::now() - started_).count();
      log_("jobs " + std::to_string(t_.done_jobs) + "/" + std::to_string(std::max(t_.estimate, t_.done_jobs)) +
           " | " + fmt(secs > 0 ? static_cast<double>(t_.fleet_jobs) / secs : 0) + " jobs/s");
    }
  }

  // A job whose result is already known: resumed from the store (this run;
  // not a result of another engine, as after a rebuild into the same output
  // directory) or served by the content-addressed cache. Records it and
  // returns true.
  // A layer's stored results. Its jobs come one after the other (one per
  // executor): the record is read once for them (a resumed million-job run
  // read 522,000 records three times before its first job went out). A
  // result committed since is missed here and found by the broker, which
  // looks a job up in the store when it was done this run.
  // The records are read through a cursor: in layer order, as the planner
  // asks for them, each block of the store is read once (the same walk by
  // point lookups took 4.5 s of a resumed million-job run's 8.8 s).
  const std::vector<ExecResult>& stored_results(const std::string& key, int layer) {
    if (layer != stored_layer_ || key != stored_key_) {
      if (!cursor_ || key != cursor_key_) {
        cursor_ = store_.layer_cursor(run_, key);
        cursor_key_ = key;
      }
      stored_ = cursor_->at(layer);
      stored_key_ = key;
      stored_layer_ = layer;
    }
    return stored_;
  }

  bool known(RunUnit& u, const JobSpec& j) {
    if (!u.use_store) return false;
    const int layer = j.assignment.empty() ? static_cast<int>(j.first_node) : 0;
    for (const auto& r : stored_results(result_key_of(j), layer))
      if (r.executor == j.executor && r.tolerance_used == j.tolerance &&
          !foreign_engine(r.toolchain, engine_identity()) && !infrastructure_error(r)) {  // (issue 30: run again)
        ++t_.resumed;
        record(u, j, r);
        return true;
      }
    std::string k = key(j);
    if (auto c = cache_writer_.get(k)) {
      c->cached = true;
      c->job_id = j.id;
      cached_commits_.push_back({result_key_of(j), {layer, *c, j.id, encode_job(j)}});
      ++t_.cache_hits;
      record(u, j, *c);
      return true;
    }
    key_of_.emplace(j.id, std::move(k));  // for its result, when it comes
    return false;
  }

  // Cache hits are committed in one batch each time next() returns
  // (nothing is acknowledged for them: a crash before that just serves them
  // from the cache again).
  void commit_cached() {
    store_.commit_results(run_, cached_commits_);
    cached_commits_.clear();
  }

  // Job `j` of unit `i`, handed out: counted in flight.
  JobSpec issue(size_t i, JobSpec j) {
    // Stay on this unit until it runs dry: workers keep a few models'
    // activations in memory, so interleaving many models would make
    // them recompute a full-model run for nearly every job.
    rr_ = i;
    if (!j.assignment.empty()) by_key_.emplace(result_key_of(j), rr_);
    ++units_[i]->in_flight;
    ++issued_[j.id];  // a bisection may ask for a job again while it runs: one result answers both
    return j;
  }

  // The next job of unit `u` not already known (resumed or cached): a layer's, then an assigned run's.
  std::optional<JobSpec> pull(RunUnit& u) {
    std::optional<JobSpec> j;
    while ((j = u.planner->next()) && known(u, *j)) {
    }
    if (j) return j;
    // The assigned run reads the recommendations from the store.
    if (u.full_model && !u.full_issued && u.planner->all_done()) commit_cached();
    while ((j = next_assigned_job(u, store_, run_, log_)) && known(u, *j)) {
    }
    return j;
  }

  void adopt(RunUnit& u) {
    const size_t index = units_.size();
    units_.push_back(&u);
    plan_unit(u, index, units_, by_key_, t_);
    if (obs_) obs_->unit_started(u.key(), u.label, t_.estimate);
  }
  void take_arrived() {
    std::deque<RunUnit>& all = *src_.streamed->units;
    const size_t before = all.size();
    if (!src_.streamed->feed->take(&all)) return;
    for (size_t i = before; i < all.size(); ++i) adopt(all[i]);
  }
  // Unit `i` has nothing left to issue or in flight: the run leaves it to the caller.
  void finish(size_t i) {
    units_[i]->finished = true;
    if (!units_[i]->planner->all_done())
      log_("warning: " + units_[i]->label + " ends with layer jobs its planner never issued");
    if (src_.streamed && src_.streamed->unit_done) src_.streamed->unit_done(i, *units_[i]);
  }

  UnitSource src_;
  std::vector<RunUnit*> units_;           // in the order they were given or arrived
  std::unordered_map<std::string, uint32_t> issued_;  // jobs next() gave (times) whose result is not in yet
  std::vector<size_t> settled_;  // units whose jobs in flight fell to none: next() looks at them first
  Store& store_;
  const std::string& run_;
  const LogFn& log_;
  ServeTotals& t_;
  RunObserver* const obs_;                // may be null
  std::map<std::string, size_t> by_key_;  // the unit of each result key
  std::string stored_key_;        // stored_results(): the layer read last
  int stored_layer_ = -1;
  std::vector<ExecResult> stored_;
  std::unique_ptr<Store::LayerCursor> cursor_;  // stored_results(): over the records of cursor_key_
  std::string cursor_key_;
  CacheWriter cache_writer_;              // this run's cache entries, written off the dispatching thread
  const Clock::time_point started_ = Clock::now();
  std::map<std::string, std::string> digests_;             // of the executors' profiles
  std::unordered_map<std::string, std::string> key_of_;  // job id -> cache key, computed in known()
  std::vector<Store::KeyedCommit> cached_commits_;
  CacheWriter::Entries to_cache_;  // handed to the writer once per group commit
  std::set<std::string> warned_;   // foreign engines already named in the log
  // The engine part of the cache key: the digest, and the ISA cap if any.
  const std::string cache_engine_ = engine_identity() + isa_cap_suffix("@");
  size_t rr_ = 0;                  // the unit next() looks at first
};

// The run's first log line: its units, layers, estimated jobs and longest job timeout.
std::string run_header(const std::string& run, const UnitSource& src, const ServeTotals& t) {
  uint32_t timeout_ms = 0;
  size_t n = 0;
  const auto add = [&](const RunUnit& u) {
    timeout_ms = std::max(timeout_ms, u.plan.job_template.timeout_ms);
    ++n;
  };
  if (src.given)
    for (const auto& u : *src.given) add(u);
  if (src.streamed)
    for (const auto& u : *src.streamed->units) add(u);
  return "run " + run + ": " + std::to_string(n) + " units" + (src.streamed ? " prepared so far" : "") + ", " +
         std::to_string(t.total_layers) + " layers, ~" + std::to_string(t.estimate) + " jobs" +
         (n ? ", job timeout " + std::to_string(timeout_ms / 1000) + " s" : "");
}

// Plans the units and runs their jobs: through a FleetBroker bound per `bo`,
// or through `local` when it is given.
ServeTotals serve(UnitSource src, Store& store, const std::string& run, BrokerOptions bo, const Dispatch* local,
                  const LogFn& log, const std::function<void()>& after_run) {
  ServeTotals t;
  UnitServer us(src, store, run, log, t, bo.observer);
  const FleetBroker::Source next = [&] { return us.next(); };
  const FleetBroker::Done done = [&](const JobSpec& j, const ExecResult& r) { us.done(j, r); };
  const std::function<void()> group_done = [&] { us.group_done(); };
  if (!bo.log) bo.log = log;
  if (src.streamed) {
    UnitFeed* feed = src.streamed->feed;
    bo.source_open = [feed] { return feed->open(); };
    bo.source_fd = feed->fd();
  }
  std::optional<FleetBroker> broker;
  const std::string header = run_header(run, src, t);
  if (local) {
    log(header + " on local job processes");
    t.complete = (*local)(next, done, group_done);
  } else {
    broker.emplace(store, run, bo);
    t.endpoint = broker->endpoint();
    log(header + "; listening on " + t.endpoint);
    t.complete = broker->run(next, done, group_done);
  }
  us.finish();
  if (t.complete) us.finish_all();
  if (broker) {
    t.fleet = broker->stats();
    t.pending = broker->pending();
  }
  if (after_run) after_run();
  t.run_s = std::chrono::duration<double>(Clock::now() - us.started()).count();
  return t;
}

}  // namespace

ServeTotals serve_units(std::vector<RunUnit>& units, Store& store, const std::string& run, BrokerOptions bo,
                        const LogFn& log, const std::function<void()>& after_run) {
  return serve(UnitSource{&units, nullptr}, store, run, std::move(bo), nullptr, log, after_run);
}

ServeTotals serve_streamed_units(const StreamedUnits& units, Store& store, const std::string& run, BrokerOptions bo,
                                 const LogFn& log, const std::function<void()>& after_run) {
  return serve(UnitSource{nullptr, &units}, store, run, std::move(bo), nullptr, log, after_run);
}

ServeTotals serve_units_on(std::vector<RunUnit>& units, Store& store, const std::string& run, const Dispatch& dispatch,
                           const LogFn& log) {
  return serve(UnitSource{&units, nullptr}, store, run, BrokerOptions{}, &dispatch, log, {});
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

ModelReport unit_layers_report(const RunUnit& u, const Store& store, const std::string& run, const Tolerance& tol) {
  ModelReport rep;
  rep.model_name = u.range ? subgraph_name(u.model->name(), *u.range) : u.model->name();
  rep.default_tolerance = tol;
  if (u.fixed_assignment) return rep;  // no layer jobs: nothing per layer to report
  rep.layers = unit_layers(u, store, run);
  if (u.range) {
    std::vector<LayerReport> layers;
    const auto infos = subgraph_layers(*u.model, *u.range);
    for (uint32_t i = u.range->first; i <= u.range->last; ++i) {
      layers.push_back(rep.layers[i]);
      layers.back().info = infos[i - u.range->first];
    }
    rep.layers = std::move(layers);
  }
  return rep;
}

ModelReport unit_report(const RunUnit& u, const Store& store, const std::string& run, const Tolerance& tol,
                        const std::string& mlir_dir, const LogFn& log) {
  ModelReport rep = unit_layers_report(u, store, run, tol);
  if (u.fixed_assignment) return rep;
  const onnx::ModelProto sub = u.range ? extract_subgraph(*u.model, *u.range) : onnx::ModelProto();
  const onnx::ModelProto& proto = u.range ? sub : u.model->proto();
  const std::string mlir = emit_torch_mlir(proto);
  if (!mlir_dir.empty()) {
    std::ofstream f(mlir_dir + "/" + rep.model_name + ".torch.mlir");
    f << mlir;
  }
  for (const auto& p : set_layer_locations(mlir, proto, rep.layers)) log(u.label + " MLIR: " + p);
  return rep;
}

}  // namespace torq::coordinator
