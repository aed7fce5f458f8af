// torq-coordinator's --model run: import → units → fleet → reports (see fleet_run.h).
#include "coordinator/fleet/fleet_run.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "coordinator/fleet/fmt.h"
#include "coordinator/fleet/unit_run.h"
#include "pipeline/base/progress.h"
#include "pipeline/base/peak_rss.h"
#include "pipeline/model/model_import.h"
#include "pipeline/report/atomic_file.h"
#include "pipeline/report/report.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;
using Clock = std::chrono::steady_clock;


void print_serve_totals(const ServeTotals& t, double wall_s, std::ostream& out) {
  std::string classes;
  for (const auto& [c, n] : t.by_class) classes += (classes.empty() ? "" : ", ") + c + " " + std::to_string(n);
  out << "jobs      " << t.done_jobs << " finished: " << t.fleet_jobs << " run on the fleet, " << t.resumed
      << " resumed from the store, " << t.cache_hits << " cache hits; " << t.saved_by_dedup << " saved by dedup\n";
  auto count = [&](Status s) {
    auto it = t.by_status.find(s);
    return it == t.by_status.end() ? size_t{0} : it->second;
  };
  out << "results   success " << count(Status::kSuccess) << ", difference " << count(Status::kDifference) << ", error "
      << count(Status::kError) << (classes.empty() ? "" : " (" + classes + ")") << "\n";
  const BrokerStats& f = t.fleet;
  out << "fleet     " << f.workers_seen << " worker registrations, " << f.workers_expired << " expired, " << f.requeued
      << " jobs requeued, " << f.crashed << " crashed, " << f.duplicates << " duplicate results dropped, "
      << f.bad_frames << " bad frames, " << f.blobs_served << " model blobs served, " << f.started
      << " leases started\n";
  if (!f.quarantined.empty()) {
    out << "quarantine";
    for (const auto& w : f.quarantined) out << " " << w;
    out << " (their leases kept overrunning their timeout: no more jobs for them this run)\n";
  }
  if (f.foreign_results)
    out << "foreign   " << f.foreign_results
        << " results from workers not holding the job's lease dropped (see the log for who sent them)\n";
  if (f.infra_requeued) out << "infra     " << f.infra_requeued << " jobs lost to infrastructure errors, requeued (not attempts)\n";
  if (f.declined)
    out << "declined  " << f.declined << " leases given back unrun (a board not Good, or its lanes kept busy), requeued (not attempts)\n";
  for (const auto& [id, b] : f.boards) {
    std::string tags;
    for (const auto& t : b.tags) tags += (tags.empty() ? "" : ",") + t;
    out << "board     " << id << " " << b.health << " (target " << b.target << (tags.empty() ? "" : ", tags " + tags)
        << ")" << (b.reason.empty() ? "" : ": " + b.reason) << "\n";
  }
  if (!f.missing_tags.empty()) out << "tags      " << f.missing_tags << "\n";
  out << "time      wall " << fmt(wall_s, 2) << " s, fleet " << fmt(t.run_s, 2) << " s, "
      << fmt(t.run_s > 0 ? static_cast<double>(t.fleet_jobs) / t.run_s : 0) << " jobs/s\n";
  if (!f.dispatch_latency_us.empty())
    out << "dispatch  " << f.dispatch_latency_us.size() << " results, latency JOB sent -> RESULT received p50 "
        << fmt(f.dispatch_latency_ms(0.5), 3) << " ms, p99 " << fmt(f.dispatch_latency_ms(0.99), 3)
        << " ms; first JOB to last commit " << fmt(f.dispatch_window_s, 3) << " s, "
        << fmt(f.dispatch_window_s > 0 ? static_cast<double>(f.completed) / f.dispatch_window_s : 0)
        << " jobs/s; store writes: " << f.result_commits << " synced result batches, " << f.lease_commits
        << " lease batches (logged, not synced)\n";
}

namespace {

// Checks the spec and creates the export directory and the store's parent; throws.
void check_and_create_dirs(const FleetRunOptions& o) {
  const FleetSpec& spec = o.spec;
  if (spec.models.empty()) throw PipelineError("no models given (--model)");
  if (spec.executors.empty()) throw PipelineError("no executors to test");
  if (!o.export_dir.empty()) prepare_output_dir(o.export_dir);
  {
    std::error_code ec;  // RocksDB creates the last level only
    const fs::path parent = fs::path(o.db).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
  }
}

// Imports each model into `store` and appends its unit to `units` (a duplicate counted once); throws.
void import_models(const FleetRunOptions& o, Store& store, std::vector<RunUnit>& units, const LogFn& log) {
  const FleetSpec& spec = o.spec;
  ImportOptions io;
  io.convert_bf16 = spec.auto_convert_bf16;
  std::set<std::string> names, hashes;
  for (const auto& path : spec.models) {
    RunUnit u;
    u.model = ImportedModel::from_file(path, io);
    u.label = u.model->name();
    if (!hashes.insert(u.model->hash()).second) {
      log(path + ": the same model as another one in this run; counted once");
      continue;
    }
    if (!names.insert(u.model->name()).second)
      throw PipelineError(path + ": another model of this run is also named '" + u.model->name() +
                          "' (its report files would collide)");
    for (const auto& w : u.model->warnings()) log(u.model->name() + ": warning: " + w);
    store.put_model(u.model->hash(), [&](const base::ByteSink& sink) { u.model->serialize_to(sink); });
    u.drop_weights_after_planning = true;
    u.plan.executors = spec.executors;
    u.plan.skip_mode = spec.skip_mode;
    u.plan.dedup = spec.dedup ? DedupMode::kSignature : DedupMode::kOff;
    u.plan.job_template.target = spec.target;
    u.plan.job_template.tolerance = o.tolerance;
    u.plan.job_template.timing_runs = spec.timing_runs;
    u.plan.job_template.timeout_ms = o.job_timeout_ms;
    units.push_back(std::move(u));
  }
}

// Records the run's models in the store and serves their jobs to the fleet; throws.
ServeTotals serve_fleet(const FleetRunOptions& o, Store& store, const std::string& run, std::vector<RunUnit>& units,
                        const LogFn& log) {
  nlohmann::json meta = {{"kind", "fleet"}, {"target", o.spec.target}, {"models", nlohmann::json::array()}};
  for (const auto& u : units) meta["models"].push_back({{"name", u.model->name()}, {"hash", u.model->hash()}});
  store.put_run_meta(run, meta.dump());
  ServeTotals t = serve_units(units, store, run, o.broker, log);
  if (!t.complete)
    log("stopped early with " + std::to_string(t.pending) + " jobs unfinished; run again with the same --db to resume");
  return t;
}

// Builds (and exports) each model's report, listing the files in `exported`; returns the critical failures.
int write_reports(const FleetRunOptions& o, const Store& store, const std::string& run,
                  const std::vector<RunUnit>& units, std::vector<std::string>& exported, const LogFn& log) {
  int critical = 0;
  for (const auto& u : units) {
    // Written as the store is read: a model of a third of a million layers
    // never has its whole report in memory (issue 32).
    critical += static_cast<int>(stream_unit_report(u, store, run, o.tolerance, o.export_dir, log).critical_failures.size());
    if (!o.export_dir.empty()) {
      exported.push_back(report_path(o.export_dir, u.model->name()));
      exported.push_back(compiler_path(o.export_dir, u.model->name()));
    }
  }
  return critical;
}

// Prints the one-screen summary of the run.
// When the first job went out (after a restart: how soon the run resumed),
// the job phase, the report export and the coordinator's own peak RSS.
void print_fleet_phases(const ServeTotals& t, Clock::time_point t_start, double export_s, double wall_s,
                        std::ostream& out) {
  const auto& first = t.fleet.first_dispatch;
  out << "phases    first job sent at "
      << (first ? fmt(std::chrono::duration<double>(*first - t_start).count(), 2) + " s" : std::string("-"))
      << ", job phase " << fmt(t.fleet.dispatch_window_s, 2) << " s, export " << fmt(export_s, 2) << " s, wall "
      << fmt(wall_s, 2) << " s; coordinator peak RSS " << fmt(base::peak_rss_mb(), 0) << " MB\n";
}

void print_fleet_summary(const std::string& run, const std::vector<RunUnit>& units, const ServeTotals& t,
                         int critical, const std::vector<std::string>& exported, double wall_s, std::ostream& out) {
  const base::Progress::LogLine over_the_live_line;  // a terminal's progress line is not drawn midway
  out << "== torq-coordinator run " << run << ": " << (t.complete ? "complete" : "STOPPED EARLY (resumable)")
      << " ==\n";
  out << "models    " << units.size() << " (";
  for (size_t i = 0; i < units.size(); ++i)
    out << (i ? ", " : "") << units[i].model->name() << " " << units[i].model->layers().size() << " layers";
  out << ")\n";
  out << "layers    " << t.total_layers << ", critical failures " << critical << "\n";
  print_serve_totals(t, wall_s, out);
  for (const auto& p : exported) out << "export    " << p << "\n";
  out << std::flush;
}

}  // namespace

int run_fleet(const FleetRunOptions& o, std::ostream& out, std::ostream& err) {
  auto log = [&err](const std::string& s) {
    const base::Progress::LogLine over_the_live_line;  // a terminal's progress line is cleared first
    err << "[coordinator] " << s << "\n" << std::flush;
  };
  const auto t_start = Clock::now();
  const FleetSpec& spec = o.spec;

  // Import the models into the store (workers fetch them by hash).
  std::unique_ptr<Store> store;
  std::vector<RunUnit> units;
  try {
    check_and_create_dirs(o);
    store = Store::open(o.db);
    const auto t_open = Clock::now();
    import_models(o, *store, units, log);
    const auto seconds = [](Clock::duration d) { return fmt(std::chrono::duration<double>(d).count(), 2); };
    log("store " + o.db + " opened in " + seconds(t_open - t_start) + " s; " + std::to_string(units.size()) +
        (units.size() == 1 ? " model" : " models") + " imported in " + seconds(Clock::now() - t_open) + " s");
  } catch (const std::exception& e) {
    err << "torq-coordinator: error: " << e.what() << "\n";
    return 2;
  }

  const std::string run = units_run_id("fleet|" + std::string(spec.auto_convert_bf16 ? "bf16" : "fp32"), units);
  ServeTotals t;
  try {
    t = serve_fleet(o, *store, run, units, log);
  } catch (const std::exception& e) {
    err << "torq-coordinator: error: " << e.what() << "\n";
    return 2;
  }

  // Reports per model.
  std::vector<std::string> exported;
  int critical = 0;
  const auto t_export = Clock::now();
  // The broker's tables and queues are gone: give their pages back before
  // the export allocates its own (the allocator keeps freed memory
  // otherwise, and the peak RSS would be the sum of both phases).
  base::release_free_memory();
  if (t.complete) {
    try {
      critical = write_reports(o, *store, run, units, exported, log);
    } catch (const std::exception& e) {
      err << "torq-coordinator: error: " << e.what() << "\n";
      return 2;
    }
  }

  // The one-screen summary.
  const double export_s = std::chrono::duration<double>(Clock::now() - t_export).count();
  const double wall_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  print_fleet_summary(run, units, t, critical, exported, wall_s, out);
  print_fleet_phases(t, t_start, export_s, wall_s, out);
  if (!t.complete) return kExitStoppedEarly;  // not a result: resumable, never a green run
  return critical > 0 ? 1 : 0;
}

}  // namespace torq::coordinator
