#include "coordinator/matrix/probe_run.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include "coordinator/fleet/fmt.h"
#include "coordinator/fleet/local_fleet.h"
#include "coordinator/fleet/probe_output.h"
#include "coordinator/fleet/probe_rounds.h"
#include "pipeline/base/html_escape.h"
#include "pipeline/base/toolchain_budget.h"
#include "pipeline/probe/probe_catalog.h"
#include "pipeline/probe/probe_spec.h"
#include "pipeline/report/atomic_file.h"
#include "pipeline/store/store.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;  // NOLINT(google-build-using-namespace)
using matrix::Spec;
using matrix::Target;
using Clock = std::chrono::steady_clock;

namespace {

PlanOptions target_plan(const Spec& spec, const Target& t) {
  PlanOptions plan;
  plan.executors = spec.executors;
  JobSpec& jt = plan.job_template;
  jt.target = !t.toolchain.empty() ? toolchain_target(t.toolchain) : t.board.empty() ? "sim" : t.board;
  for (const auto& [e, path] : t.profiles) plan.executor_targets[e] = path;
  jt.tags = t.requires_tags;
  jt.timeout_ms = spec.options.job_timeout_ms ? *spec.options.job_timeout_ms
                  : !t.toolchain.empty()      ? base::toolchain_job_budget_ms(t.toolchain, 1)
                                              : 120000;
  return plan;
}

// The local workers of a probe run: sim ones, and a set per toolchain target.
struct ProbeFleet {
  std::unique_ptr<LocalWorkers> sim;
  std::vector<std::unique_ptr<LocalWorkers>> toolchains;
  std::optional<PrivateEndpoint> endpoint;
  void stop() {
    if (sim) sim->stop();
    for (auto& w : toolchains) w->stop();
  }
};

void start_probe_workers(const MatrixRunOptions& o, const Spec& spec, const std::string& db, const std::string& export_dir,
                         BrokerOptions* bo, ProbeFleet* fleet, std::atomic<bool>* gone) {
  if (bo->bind.empty()) bo->bind = fleet->endpoint.emplace().str();
  LocalWorkersOptions lo;
  lo.workers = o.local_workers;
  lo.endpoint = bo->bind;
  lo.cache_dir = db + "/worker-cache";
  lo.log_file = export_dir + "/workers.log";
  lo.heartbeat_ms = bo->heartbeat_ms;
  fs::create_directories(lo.cache_dir);
  fleet->sim = std::make_unique<LocalWorkers>(lo);
  fleet->sim->watch(gone);
  for (const Target& t : spec.targets) {
    if (t.toolchain.empty()) continue;
    LocalWorkersOptions tl = lo;
    tl.target = toolchain_target(t.toolchain);
    tl.backend = "toolchain";
    tl.toolchain_file = t.toolchain;
    tl.id_prefix = "local-" + tl.target;
    fleet->toolchains.push_back(std::make_unique<LocalWorkers>(tl));
    fleet->toolchains.back()->watch(gone);
  }
}

std::string xml(const std::string& s) { return base::html_escape(s); }

// One JUnit case per (target, executor, op group): failed when its rules
// explain less than `min` of its points.
std::string junit(const std::vector<std::pair<std::string, ProbeSummary>>& by_target, double min, int* failed) {
  std::string cases;
  int n = 0;
  *failed = 0;
  for (const auto& [target, sum] : by_target)
    for (const auto& d : sum.profiles)
      for (const auto& env : d.envelopes) {
        ++n;
        cases += "    <testcase classname=\"probe." + xml(target) + "." + xml(d.executor) + "\" name=\"" +
                 xml(env.op + " " + env.group) + "\">\n";
        if (env.explained_fraction() + 1e-12 < min) {
          ++*failed;
          std::string res;
          for (const auto& r : env.residuals) res += (res.empty() ? "" : ", ") + r;
          cases += "      <failure message=\"explains " + std::to_string(env.explained) + "/" +
                   std::to_string(env.points) + " points, below " + fmt(min, 3) + "\">" + xml(env.sentence) +
                   "\nresiduals: " + xml(res) + "</failure>\n";
        }
        cases += "      <system-out>" + xml(env.sentence) + "</system-out>\n    </testcase>\n";
      }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"probe\" tests=\"" +
         std::to_string(n) + "\" failures=\"" + std::to_string(*failed) + "\">\n" + cases + "  </testsuite>\n</testsuites>\n";
}

}  // namespace

int run_probe_matrix(const MatrixRunOptions& o, const Spec& spec, std::ostream& out, std::ostream& err) {
  const auto started = Clock::now();
  const std::string export_dir = o.export_dir;
  const std::string db = o.db.empty() ? export_dir + "/.torq-store" : o.db;
  const auto log = [&](const std::string& s) { out << "[coordinator] " << s << "\n" << std::flush; };
  std::atomic<bool> workers_gone{false};
  ProbeFleet fleet;
  try {
    prepare_output_dir(export_dir);
    fs::remove(export_dir + "/junit.xml");
    auto store = Store::open(db);
    const probe::ProbeSpec ps = probe::load_probe_spec(spec.probe->spec);
    const auto points = probe::expand_points(ps);
    const probe::AnyOpCatalog catalog;
    BrokerOptions bo = o.broker;
    bo.stop_flag = o.stop;
    bo.workers_gone = &workers_gone;
    if (o.local_workers > 0) start_probe_workers(o, spec, db, export_dir, &bo, &fleet, &workers_gone);
    log("probe " + spec.probe->spec + ": " + std::to_string(points.size()) + " points on " +
        std::to_string(spec.executors.size()) + " executor(s) x " + std::to_string(spec.targets.size()) + " target(s)");
    std::vector<std::pair<std::string, ProbeSummary>> by_target;
    bool complete = true;
    size_t jobs = 0, resumed = 0, cached = 0;
    for (const Target& t : spec.targets) {
      ProbeRoundsOptions ro;
      ro.refine = static_cast<int>(ps.refine);
      ro.plan = target_plan(spec, t);
      ro.cache_dir = db + "/worker-cache";
      fs::create_directories(ro.cache_dir);
      const auto base_files = base_profile_files(t.profiles, spec.executors);
      const auto base = base_profiles(base_files, spec.executors, catalog);
      ro.base = &base;
      ro.catalog = &catalog;
      // Fleet workers fetch each point's model from the store.
      ro.prepare_unit = [&](RunUnit& u) {
        store->put_model(u.model->hash(), [&](const base::ByteSink& sink) { u.model->serialize_to(sink); });
      };
      const ServeRound round = [&](std::vector<RunUnit>& units, const std::string& run) {
        ServeTotals tot = serve_units(units, *store, run, bo, log);
        if (!tot.complete && workers_gone.load())
          throw PipelineError("every local worker exited before the probe completed; worker log " + export_dir +
                              "/workers.log");
        return tot;
      };
      const ProbeRounds pr = run_probe_rounds(points, ro, *store, round, log);
      complete = complete && pr.totals.complete;
      jobs += pr.totals.fleet_jobs, resumed += pr.totals.resumed, cached += pr.totals.cache_hits;
      if (!pr.totals.complete) break;
      const std::string dir = export_dir + "/probe/" + t.name;
      by_target.emplace_back(t.name, write_probe_outputs(dir, pr.rows, spec.executors, base, base_files, catalog, log));
    }
    fleet.stop();
    const double wall = std::chrono::duration<double>(Clock::now() - started).count();
    log("jobs: " + std::to_string(jobs) + " run, " + std::to_string(resumed) + " resumed from the store, " +
        std::to_string(cached) + " from the cache; wall " + fmt(wall, 2) + " s");
    if (!complete) {
      log("stopped early: the store keeps what finished (run again to resume)");
      return 3;
    }
    int failed = 0;
    const std::string x = junit(by_target, spec.probe->min_explained, &failed);
    write_file_atomic(export_dir + "/junit.xml", x);
    log("junit: " + export_dir + "/junit.xml (" + std::to_string(failed) + " case(s) below min_explained " +
        fmt(spec.probe->min_explained, 3) + ")");
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    fleet.stop();
    err << "torq-coordinator: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace torq::coordinator
