#include "coordinator/gen_config/probe_command.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "coordinator/fleet/fmt.h"
#include "coordinator/fleet/local_fleet.h"
#include "coordinator/fleet/probe_rounds.h"
#include "coordinator/gen_config/discover_parts.h"
#include "coordinator/gen_config/local_serve.h"
#include "coordinator/fleet/probe_output.h"
#include "pipeline/probe/envelope_learn.h"
#include "pipeline/probe/probe_diff.h"
#include "pipeline/probe/probe_spec.h"
#include "pipeline/store/store.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;  // NOLINT(google-build-using-namespace)
using Clock = std::chrono::steady_clock;

namespace {

std::map<Executor, std::string> targets_map(const std::string& file, const targets::OpCatalog& catalog) {
  return file.empty() ? std::map<Executor, std::string>{} : read_targets(file, catalog);
}

// The base profiles of probe learn and diff: --base, else those the probe
// of `dir` recorded (DIR/base/), else the built-in ones.
std::map<Executor, std::string> learn_base(const std::string& dir, const std::string& base_file,
                                           const targets::OpCatalog& catalog) {
  return base_file.empty() ? recorded_base(dir) : targets_map(base_file, catalog);
}

PlanOptions probe_plan(const ProbeOptions& o, const std::map<Executor, std::string>& targets) {
  PlanOptions po;
  po.executors = o.executors;
  po.job_template.timeout_ms = o.timeout_ms;
  po.job_template.target = o.backend == "toolchain" ? toolchain_target(o.toolchain_file) : "sim";
  po.executor_targets = targets;
  return po;
}

LocalWorkersOptions probe_workers(const ProbeOptions& o, const std::string& store_dir, const std::string& cache_dir,
                                  const std::string& endpoint) {
  LocalWorkersOptions lo;
  lo.workers = std::max(1, o.workers);
  lo.endpoint = endpoint;
  lo.cache_dir = cache_dir;
  lo.threads_per_job = std::max(1, o.threads_per_worker);
  lo.log_file = store_dir + "/workers.log";
  lo.target = "local";
  lo.backend = o.backend;
  lo.toolchain_file = o.toolchain_file;
  lo.trusted_cache = true;  // every point's model is written to the cache before its jobs
  return lo;
}

// One probe run, phase by phase.
class Probe {
 public:
  Probe(const ProbeOptions& o, std::ostream& out) : o_(o), log_(out, "", o.quiet) {}
  void start();
  void serve();
  int finish();
  DiscoverLog& log() { return log_; }

 private:
  const ProbeOptions& o_;
  DiscoverLog log_;
  const Clock::time_point started_ = Clock::now();
  probe::ProbeSpec spec_;
  std::vector<probe::ProbePoint> points_;
  std::map<Executor, std::string> targets_;
  std::map<Executor, targets::TargetProfile> base_;
  std::map<Executor, std::string> base_files_;
  std::string store_dir_, cache_dir_;
  const PrivateEndpoint endpoint_;
  std::unique_ptr<LocalWorkers> workers_;
  std::unique_ptr<runner::LocalPool> pool_;
  std::unique_ptr<Store> store_;
  ProbeRounds result_;
};

void Probe::start() {
  if (o_.executors.empty()) throw PipelineError("no executor left to probe (all skipped)");
  if (!o_.op_catalog) throw PipelineError("probe: no op catalog to check profiles against");
  if (o_.backend != "sim" && !o_.targets_file.empty())
    throw PipelineError("--targets (sim profiles) does not apply to --backend " + o_.backend);
  spec_ = probe::load_probe_spec(o_.spec);
  points_ = probe::expand_points(spec_);
  if (!o_.targets_file.empty()) targets_ = read_targets(o_.targets_file, *o_.op_catalog);
  base_files_ = base_profile_files(o_.base_file.empty() ? targets_ : targets_map(o_.base_file, *o_.op_catalog),
                                   o_.executors);
  base_ = base_profiles(base_files_, o_.executors, *o_.op_catalog);
  check_writable_dir(o_.output_dir);
  store_dir_ = o_.output_dir + "/.torq-store";
  cache_dir_ = store_dir_ + "/models";
  fs::create_directories(cache_dir_);
  base::sweep_dead_temp_files(cache_dir_);
  const LocalWorkersOptions lo = probe_workers(o_, store_dir_, cache_dir_, endpoint_.str());
  if (o_.backend == "sim") pool_ = start_local_pool(lo);
  else workers_ = std::make_unique<LocalWorkers>(lo);  // the first round's: a round's end stops them
  store_ = Store::open(store_dir_ + "/db");
  log_.line("probe " + o_.spec + ": " + std::to_string(points_.size()) + " points on " +
            std::to_string(o_.executors.size()) + " executor(s), up to " + std::to_string(spec_.refine) +
            " refinement round(s), job budget " + fmt(o_.timeout_ms / 1000.0, 0) + " s");
}

void Probe::serve() {
  auto serve_log = [this](const std::string& s) {
    if (s.rfind("jobs ", 0) != 0) return;
    if (log_.tty()) log_.progress("[probe] " + s);
    else log_.line("[probe] " + s);
  };
  ProbeRoundsOptions ro;
  ro.refine = static_cast<int>(spec_.refine);
  ro.plan = probe_plan(o_, targets_);
  ro.cache_dir = cache_dir_;
  ro.use_store = !o_.recompute;
  ro.base = &base_;
  ro.catalog = o_.op_catalog;
  const ServeRound round = [&](std::vector<RunUnit>& units, const std::string& run) {
    if (!pool_ && !workers_)
      workers_ = std::make_unique<LocalWorkers>(probe_workers(o_, store_dir_, cache_dir_, endpoint_.str()));
    ServeTotals t = pool_ ? serve_on_pool(units, *store_, run, *pool_, serve_log)
                          : serve_on_local_workers(units, *store_, run, *workers_, endpoint_.str(),
                                                   store_dir_ + "/workers.log", serve_log, [](const std::string&) {});
    workers_.reset();  // serve_on_local_workers stopped them
    log_.progress_clear();
    return t;
  };
  result_ = run_probe_rounds(points_, ro, *store_, round, [this](const std::string& s) { log_.line(s); });
}

int Probe::finish() {
  const ProbeSummary sum = write_probe_outputs(o_.output_dir, result_.rows, o_.executors, base_, base_files_, *o_.op_catalog,
                                               [this](const std::string& s) { log_.line(s); });
  const ServeTotals& t = result_.totals;
  const double wall = std::chrono::duration<double>(Clock::now() - started_).count();
  log_.line("jobs: " + std::to_string(t.fleet_jobs) + " run, " + std::to_string(t.resumed) +
            " resumed from the store, " + std::to_string(t.cache_hits) + " from the cache, in " +
            std::to_string(result_.rounds) + " round(s)");
  log_.line("wall " + fmt(wall, 2) + " s (jobs " + fmt(t.run_s, 2) + " s), " +
            fmt(t.run_s > 0 ? static_cast<double>(t.fleet_jobs) / t.run_s : 0) + " jobs/s on " +
            std::to_string(o_.workers) + " workers");
  return sum.complete && t.complete ? 0 : 2;
}

}  // namespace

int run_probe(const ProbeOptions& o, std::ostream& out, std::ostream& err) {
  Probe p(o, out);
  try {
    p.start();
    p.serve();
    return p.finish();
  } catch (const std::exception& e) {
    p.log().progress_clear();
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
}

int run_probe_learn(const std::string& dir, const std::string& base_file, const targets::OpCatalog& catalog,
                    std::ostream& out, std::ostream& err) {
  try {
    const auto rows = read_probe_dir(dir);
    const auto executors = executors_of(rows);
    if (executors.empty()) throw PipelineError(dir + "/probe.csv: no outcome to learn from");
    const std::string out_dir = fs::is_directory(dir) ? dir : fs::path(dir).parent_path().string();
    const auto files = base_profile_files(learn_base(out_dir, base_file, catalog), executors);
    write_probe_outputs(out_dir, rows, executors, base_profiles(files, executors, catalog), files, catalog,
                        [&](const std::string& s) { out << s << "\n"; });
    return 0;
  } catch (const std::exception& e) {
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
}


int run_probe_diff(const std::string& a, const std::string& b, bool json, const std::string& base_file,
                   const targets::OpCatalog& catalog, std::ostream& out, std::ostream& err) {
  try {
    const auto rows_a = read_probe_dir(a);
    const auto rows_b = read_probe_dir(b);
    // A's rules: the profiles its probe derived (profiles/<executor>.yaml
    // beside its probe.csv), else learned again from its rows.
    const std::string dir_a = fs::is_directory(a) ? a : fs::path(a).parent_path().string();
    std::vector<targets::TargetProfile> profiles;
    const auto executors = executors_of(rows_a);
    const auto base = base_profiles(learn_base(dir_a, base_file, catalog), executors, catalog);
    for (Executor e : executors) {
      const std::string path = dir_a + "/profiles/" + executor_name(e) + ".yaml";
      if (fs::exists(path)) {
        profiles.push_back(targets::TargetProfile::load(path, catalog));
      } else {
        const probe::DerivedProfile d = probe::learn_profile(executor_name(e), rows_a, &base.at(e), catalog);
        profiles.push_back(targets::TargetProfile::parse(d.yaml, path, catalog));
      }
    }
    const probe::ProbeDiff d = probe::probe_diff(rows_a, rows_b, profiles);
    out << (json ? probe::probe_diff_json(d) : probe::probe_diff_text(d));
    return 0;
  } catch (const std::exception& e) {
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace torq::coordinator
