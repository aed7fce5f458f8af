// A model-matrix run (see matrix_run.h): spec → tests → units → fleet →
// outcomes → JUnit, JSON, HTML and per-test report files.
#include "coordinator/matrix/matrix_run.h"
#include "coordinator/matrix/probe_run.h"
#include "pipeline/base/file_bytes.h"
#include "pipeline/probe/probe_spec.h"
#include "pipeline/base/thread_name.h"

#include "pipeline/base/peak_rss.h"
#include "pipeline/base/progress.h"
#include "pipeline/base/toolchain_budget.h"

#include <yaml-cpp/yaml.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <thread>
#include <mutex>
#include <deque>
#include <condition_variable>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "coordinator/fleet/assigned_run.h"
#include "pipeline/base/temp_files.h"
#include "pipeline/base/utc.h"
#include "coordinator/fleet/assignment_file.h"
#include "coordinator/fleet/fleet_run.h"
#include "coordinator/fleet/fmt.h"
#include "coordinator/fleet/fp32_original.h"
#include "coordinator/fleet/local_fleet.h"
#include "coordinator/matrix/matrix_history.h"
#include "pipeline/matrix/matrix_history.h"
#include "coordinator/matrix/quantized_variant.h"
#include "coordinator/matrix/run_progress.h"
#include "coordinator/fleet/unit_feed.h"
#include "coordinator/fleet/unit_run.h"
#include "pipeline/matrix/matrix.h"
#include "pipeline/core/json_limits.h"
#include "pipeline/matrix/matrix_internal.h"
#include "pipeline/model/subgraph.h"
#include "pipeline/report/atomic_file.h"
#include "pipeline/report/full_model.h"
#include "pipeline/report/profile_merge.h"
#include "pipeline/matrix/matrix_report.h"
#include "pipeline/model/model_import.h"
#include "pipeline/report/op_matrix.h"
#include "pipeline/report/report.h"
#include "pipeline/store/run_history.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;
using namespace pipeline::matrix;
using Clock = std::chrono::steady_clock;

namespace {

// Through <path>.tmp.<pid>: a killed run's is swept by the next; an error
// says why ("ops.csv: cannot write: No space left on device").
void write_text(const std::string& path, const std::string& text) { write_file_atomic(path, text); }

// Why a collected test is not run at all (empty: it runs).
std::string not_run_reason(const TestCase& t) {
  if (t.placeholder || t.config.status == TestStatus::kNotSupportedSkip ||
      t.config.status == TestStatus::kExcludeModel)
    return "-";  // judge() says why
  if (!t.config.supported_targets.empty()) {
    bool in = false;
    for (const auto& s : t.config.supported_targets) in = in || s == t.target.name;
    if (!in) return "-";
  }
  return "";
}

// The selection of -k, -m and a preset, all combined with "and".
struct Selection {
  Expr k, m, pk, pm;
  bool selected(const TestCase& t) const {
    return k.match_id(t.id) && pk.match_id(t.id) && m.match_markers(t.config.markers) &&
           pm.match_markers(t.config.markers);
  }
};

Selection make_selection(const Spec& spec, const MatrixRunOptions& o) {
  Selection s{Expr::parse(o.k, "-k"), Expr::parse(o.m, "-m"), Expr::parse("", "-k"), Expr::parse("", "-m")};
  if (!o.preset.empty()) {
    auto it = spec.presets.find(o.preset);
    if (it == spec.presets.end()) {
      std::string names;
      for (const auto& [n, p] : spec.presets) names += (names.empty() ? "" : ", ") + n;
      throw PipelineError("--preset '" + o.preset + "': no such preset in " + spec.path +
                          (names.empty() ? " (it defines none)" : " (it defines: " + names + ")"));
    }
    s.pk = Expr::parse(it->second.k, "preset " + o.preset + " k");
    s.pm = Expr::parse(it->second.m, "preset " + o.preset + " m");
  }
  return s;
}

// Sets the run's executor distribution and its worst PCC, max_abs and max_rel over the recommended layers.
void set_layer_figures(const ModelReport& rep, TestRun* run) {
  double pcc = 2, max_abs = -1, max_rel = -1;
  bool any = false;
  for (const auto& l : rep.layers) {
    if (!l.recommended) {
      ++run->executor_distribution["none"];
      continue;
    }
    ++run->executor_distribution[executor_name(*l.recommended)];
    const ExecResult& r = l.results.at(*l.recommended);
    if (std::isfinite(r.pcc)) pcc = std::min(pcc, r.pcc), any = true;
    if (std::isfinite(r.max_abs)) max_abs = std::max(max_abs, r.max_abs);
    if (std::isfinite(r.max_rel)) max_rel = std::max(max_rel, r.max_rel);
  }
  run->pcc = any ? pcc : -1;
  run->max_abs = max_abs;
  run->max_rel = max_rel;
}

// Sets the run's figures (or its failed step) from the assigned full-model run.
void set_full_model_figures(const ExecResult& full, TestRun* run) {
  run->full_model = true;
  if (full.status == Status::kError) {
    const std::string& c = full.error_class;
    run->failed_step = c == "import" ? "import"
                       : (c == "unsupported" || c == "compile" || c == "target") ? "compile" : "runtime";
    run->message = "assigned full-model run: " + c + ": " + full.error_message;
    run->pcc = run->max_abs = run->max_rel = -1;
  } else {
    run->pcc = std::isfinite(full.pcc) ? full.pcc : -1;
    run->device_ms = std::isfinite(full.runtime_ms) && full.runtime_ms >= 0 ? full.runtime_ms : -1;
    run->max_abs = std::isfinite(full.max_abs) ? full.max_abs : -1;
    run->max_rel = std::isfinite(full.max_rel) ? full.max_rel : -1;
    if (full.e2e) {  // a converted variant: against its fp32 original too
      run->e2e = true;
      run->converted_pcc = run->pcc;
      run->converted_max_abs = run->max_abs;
      run->converted_max_rel = run->max_rel;
      run->e2e_error = full.e2e->error;
      const auto known = [](double v) { return std::isfinite(v) ? v : -1; };
      if (run->e2e_error.empty()) {
        run->e2e_pcc = known(full.e2e->pcc());
        run->e2e_max_abs = known(full.e2e->max_abs());
        run->e2e_max_rel = known(full.e2e->max_rel());
        if (!std::isfinite(full.e2e->pcc()))
          run->e2e_error = "no PCC: an output differs from the original's in shape or NaNs";
      }
    }
  }
}

// Sets the run's failed step and message from its first critical failure.
void set_critical_failure(const ModelReport& rep, const ReportSummary& sum, TestRun* run) {
  for (const auto& l : rep.layers) {
    if (l.info.id != sum.critical_failures.front() || l.results.empty()) continue;
    const ExecResult* first = &l.results.begin()->second;
    run->failed_step = "runtime";
    for (const auto& [e, r] : l.results) {
      const std::string& c = r.error_class;
      if (c == "import") {  // the toolchain's importer: FAILED_FE_COMPILATION
        run->failed_step = "import";
        first = &r;
        break;
      }
      if (c == "unsupported" || c == "compile" || c == "target" ||
          (c == "reference" && r.error_message.find("not supported") != std::string::npos)) {
        run->failed_step = "compile";
        first = &r;
        break;
      }
    }
    run->message = "layer " + l.info.id + " fails on every executor (" + executor_name(first->executor) + ": " +
                   first->error_class + ": " + first->error_message + ")";
    break;
  }
}

// A matrix test's run from its model report. The failed step of a critical
// failure (a layer every executor errored on) is "compile" when an
// executor could not take the layer at all (error class unsupported,
// compile or target, or a reference that does not support the op), else
// "runtime" (crash, timeout, runtime error).
TestRun run_from_report(const ModelReport& rep, const std::optional<ExecResult>& full) {
  TestRun run;
  run.ran = true;
  run.layers = static_cast<int>(rep.layers.size());
  const ReportSummary sum = summarize(rep);
  run.critical_failures = static_cast<int>(sum.critical_failures.size());
  set_layer_figures(rep, &run);
  // The assigned full-model run, when there was one, is what the
  // comparators judge: the model as the compiler would place it.
  if (full) set_full_model_figures(*full, &run);
  if (!sum.critical_failures.empty()) set_critical_failure(rep, sum, &run);
  return run;
}

void print_results(const std::vector<TestResult>& results, std::ostream& out) {
  std::map<Outcome, int> counts;
  for (const TestResult& r : results) {
    ++counts[r.outcome];
    out << result_line(r);
    if (!r.since_previous.empty() && r.since_previous != "unchanged")
      out << "  (since previous run: " << r.since_previous << ")";
    out << "\n";
  }
  out << "matrix: " << counts[Outcome::kPassed] << " passed, " << counts[Outcome::kFailed] << " failed, "
      << counts[Outcome::kSkipped] << " skipped, " << counts[Outcome::kXfailed] << " xfailed, "
      << counts[Outcome::kXpassed] << " xpassed\n";
}

// The test's comparators as a pass/fail of an assigned run (for the bisect),
// on its figures against the converted model's own reference: the
// executors' error, which a bisect can localise (what a conversion to bf16
// or int8 costs against the fp32 original is in no range of layers).
std::function<bool(const ExecResult&)> comparators(const TestConfig& c) {
  return [c](const ExecResult& r) {
    TestRun run;
    run.ran = true;
    if (r.status == Status::kError) run.failed_step = "runtime";
    run.pcc = std::isfinite(r.pcc) ? r.pcc : -1;
    run.max_abs = std::isfinite(r.max_abs) ? r.max_abs : -1;
    run.max_rel = std::isfinite(r.max_rel) ? r.max_rel : -1;
    std::string why;
    Bringup b;
    return detail::raw_pass(c, run, &why, &b);
  };
}

// What the unit of test `t` runs, as the spec says (no model: the job
// template's result key is the unit's to set).
PlanOptions unit_plan(const TestCase& t, const Spec& spec, const MatrixRunOptions& o) {
  PlanOptions plan;
  plan.executors = spec.executors;
  plan.skip_mode = spec.options.skip_mode;
  plan.dedup = spec.options.dedup ? DedupMode::kSignature : DedupMode::kOff;
  JobSpec& jt = plan.job_template;
  jt.target = !t.target.toolchain.empty() ? toolchain_target(t.target.toolchain)
              : t.target.board.empty()      ? "sim"
                                            : t.target.board;
  for (const auto& [e, path] : t.target.profiles) plan.executor_targets[e] = path;
  jt.tags = t.target.requires_tags;
  jt.collect_profile = spec.options.collect_profile;
  jt.tolerance = o.tolerance;
  jt.timing_runs = spec.options.timing_runs;
  jt.timeout_ms = spec.options.job_timeout_ms ? *spec.options.job_timeout_ms
                 : !t.target.toolchain.empty()
                     ? base::toolchain_job_budget_ms(t.target.toolchain, spec.options.timing_runs)
                 : !t.target.board.empty()  // board workers run the Torq tools: their default step budgets
                     ? base::job_budget_ms(base::kImportTimeoutS, base::kCompileTimeoutS, base::kRunTimeoutS,
                                           spec.options.timing_runs)
                     : 120000;
  jt.random_inputs = t.variant.random_inputs;
  jt.seed = t.variant.seed;
  jt.bf16_rne = t.variant.bf16_rne;
  return plan;
}

// The unit that runs test `t`: its model imported as the variant says, its
// plan from the spec, an assigned run judged by the test's comparators (and
// bisected when it fails); a subgraph test covers its range, a run test of
// a config file runs that file's assignment only.
// Test `t`'s unit, its model read from `model_path` (the model's own file,
// or its int8 variant's).
RunUnit make_unit(const TestCase& t, const Spec& spec, const MatrixRunOptions& o, const std::string& model_path) {
  ImportOptions io;
  io.convert_bf16 = t.variant.bf16;
  io.rounding = t.variant.bf16_rne ? engine::Rounding::kNearestEven : engine::Rounding::kTruncate;
  io.batch = t.variant.batch == 1 ? 0 : t.variant.batch;
  RunUnit u;
  u.label = t.id;
  u.model = ImportedModel::from_file(model_path, io);
  u.plan = unit_plan(t, spec, o);
  JobSpec& jt = u.plan.job_template;
  // One store key per (model, variant, target): a model tested two ways
  // keeps two sets of results.
  jt.result_key = u.model->hash() + "-" + sha256_hex(t.target.name + "|" + t.variant.name).substr(0, 8);
  u.full_model = true;
  u.bisect = true;
  u.drop_weights_after_planning = true;
  u.passes = comparators(t.config);
  if (t.subgraph) {
    u.range = resolve_range(*u.model, t.subgraph->from, t.subgraph->to);
    jt.result_key += "-s" + std::to_string(u.range->first) + "_" + std::to_string(u.range->last);
  } else if (t.mode == Mode::kRun && !t.model->config.empty()) {
    const AssignmentFile af = assignment_from_file(t.model->config, u.model->proto(), u.model->name(), u.model->layers());
    u.fixed_assignment = true;
    u.assignment = af.assignment;
    u.passed_alone = af.passed_alone;
    for (const auto& l : u.model->layers()) u.skip_layers.push_back(l.index);
    jt.result_key += "-c" + sha256_hex(t.model->config).substr(0, 8);
  }
  return u;
}

// Opens (creating it) the run's store.
std::unique_ptr<Store> open_store(const std::string& db) {
  std::error_code ec;
  const fs::path parent = fs::path(db).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  return Store::open(db);
}

// --last-failed: narrows `selected` to the tests that failed at their
// latest run (opening the store, when there is one). Returns false when it
// leaves nothing to run.
bool narrow_to_last_failed(const std::string& db, const Spec& spec, std::vector<const TestCase*>* selected,
                           size_t* deselected, std::unique_ptr<Store>* store, std::ostream& out) {
  if (fs::exists(fs::path(db) / "CURRENT")) *store = open_store(db);
  const std::optional<history::History> h =
      *store ? std::optional<history::History>(std::in_place, **store, spec.path) : std::nullopt;
  bool nothing_failed = false;
  const size_t before = selected->size();
  *selected = last_failed_tests(spec.path, h ? &*h : nullptr, *selected, out, &nothing_failed);
  *deselected += before - selected->size();
  return !nothing_failed;
}

// The history record of this run (its tests are added by record_run).
history::RunRecord run_record(const RunInfo& info, bool last_failed) {
  history::RunRecord r;
  r.run_id = info.run_id;
  r.started_utc = info.started_utc;
  r.finished_utc = base::utc_now();
  r.k = info.k;
  r.m = info.m;
  r.preset = info.preset;
  r.last_failed = last_failed;
  return r;
}

// An exit code that ends run_matrix (nullopt: the run goes on).
using Exit = std::optional<int>;

// The local workers of a run and the private endpoint they reach its broker
// on (in this order, so destroyed in the reverse one: the endpoint first).
struct LocalFleet {
  std::unique_ptr<LocalWorkers> workers;
  std::vector<std::unique_ptr<LocalWorkers>> toolchain_workers;  // one set per toolchain target
  std::optional<PrivateEndpoint> private_endpoint;
};

// How many prepared units may hold their model at once (served, queued or
// being exported): enough that the workers have the next model's jobs while
// one finishes its assigned run and bisection, few enough that the
// coordinator's memory stays that of a few models however long the spec
// (issue 32).
constexpr size_t kPrepareAhead = 3;

// The runs report.html's trend shows at most (the latest ones).
constexpr size_t kTrendRuns = 60;
// ... unless no result has come in for this long (after one had): the held
// units then wait for something else than the workers that are there.
constexpr std::chrono::milliseconds kIdleFleet{2000};

// One matrix run: what were run_matrix's locals (in their order, so built and destroyed in it) and its steps.
struct MatrixRun {
  MatrixRun(const MatrixRunOptions& opts, std::ostream& out_stream, std::ostream& err_stream)
      : o(opts),
        out(out_stream),
        err(err_stream),
        log([this](const std::string& s) {
          std::lock_guard<std::mutex> lock(log_mu);
          const base::Progress::LogLine over_the_live_line;
          err << "[coordinator] " << s << "\n" << std::flush;
        }) {}
  ~MatrixRun() {
    stop_threads();
    if (o.status) o.status->set_store(nullptr);  // the board outlives the run's store
  }
  MatrixRun(const MatrixRun&) = delete;
  MatrixRun& operator=(const MatrixRun&) = delete;

  const MatrixRunOptions& o;
  std::ostream& out;
  std::ostream& err;
  std::mutex log_mu;  // log lines come from the preparing, serving and exporting threads
  const LogFn log;
  RunProgress progress{o.status, log, o.strict_xfail};  // phase and test lines, the status board
  const Clock::time_point t_start = Clock::now();
  const std::string started = base::utc_now();
  Spec spec;
  std::vector<TestCase> tests;
  std::vector<const TestCase*> selected;
  size_t deselected = 0;
  const std::string export_dir = o.export_dir.empty() ? std::string("torq-results") : o.export_dir;
  const std::string db = o.db.empty() ? export_dir + "/.torq-store" : o.db;
  std::unique_ptr<Store> store;
  // The tests that run, by the unit they share (in spec order): discover
  // and run tests of one model, variant and target share one; a run test of
  // a config file and each subgraph test have their own.
  std::vector<std::vector<const TestCase*>> groups;
  std::string run_id;
  // Preparation (its own thread, ahead of dispatch): each group's unit,
  // pushed to the feed as soon as it is ready.
  std::optional<UnitFeed> feed;
  std::deque<RunUnit> units;                     // the serving thread's: units as they arrived
  std::thread preparer;
  // The int8 variants, made ahead of the preparer (quantized_variant.h);
  // int8_request[g]: group g's request (groups without one: SIZE_MAX).
  std::optional<QuantizeAhead> quantize_ahead;
  std::vector<size_t> int8_request;
  std::atomic<bool> stop_preparing{false};
  size_t prepared = 0;                           // units pushed (the next one's index)
  size_t released = 0;                           // units whose model the exporter released (under mu)
  std::condition_variable released_cv;           // the preparer waits on it for a unit to be released
  std::atomic<Clock::rep> last_result{0};        // when the latest result came in (serving thread)
  std::optional<Clock::time_point> prepared_at;  // when the last was
  std::map<std::string, size_t> unit_of_key;     // result key -> unit (identical subgraph tests share one)
  std::map<std::string, std::string> original_of;  // model path|batch -> its fp32 original's hash
  std::string prepare_error;                     // a store error: the run stops
  std::atomic<bool> halt{false};                 // set on such an error: the broker winds down
  // Export (its own thread): each unit's report files once its last job is
  // in, then its model released.
  std::thread exporter;
  std::deque<std::pair<size_t, RunUnit*>> to_export;
  bool export_closed = false;
  std::condition_variable export_cv;
  std::string export_error;
  // What the end of the run needs of each test's report (the exporter's),
  // in files under grid_dir, not in memory (every layer's results of a
  // 160-model spec stayed in memory to the end, issue 32): its history
  // record's layers (JSON), and its layer grid (HTML, for its grid page).
  std::map<std::string, std::string> layer_files;  // test ID -> its layers' records
  std::map<std::string, std::string> grid_files;   // test ID -> its grid
  const std::string grid_dir = export_dir + "/.report-grids";
  // Shared by the three threads.
  std::mutex mu;
  std::map<std::string, TestRun> runs;           // test ID -> run (ran or not)
  std::map<size_t, std::vector<std::string>> tests_of_unit;
  std::map<std::string, std::string> alias_of;   // test ID -> the test whose unit (and report) it shares
  ServeTotals totals;
  std::atomic<bool> workers_gone{false};
  std::vector<TestResult> results;
  double wall_s = 0;
  RunInfo info;
  int code = 0;
  std::string suggestions;
  int seq = 0;
  OpMatrix ops;

  // Loads the spec and its test_config files, selects the tests (-k, -m, --preset) and narrows them (--last-failed).
  Exit load_and_select() {
    try {
      spec = load_spec(o.spec_file);
      const ConfigSet configs = load_configs(spec.config_files);
      tests = collect(spec, configs);
      const Selection sel = make_selection(spec, o);
      for (const TestCase& t : tests) {
        if (sel.selected(t)) selected.push_back(&t);
        else ++deselected;
      }
    } catch (const std::exception& e) {
      err << "torq-coordinator: error: " << e.what() << "\n";
      return 2;
    }
    if (o.last_failed) {
      try {
        if (!narrow_to_last_failed(db, spec, &selected, &deselected, &store, out)) return 0;
      } catch (const std::exception& e) {
        err << "torq-coordinator: error: " << e.what() << "\n";
        return 2;
      }
    }
    return std::nullopt;
  }

  // --collect-only: lists the selected tests and the count.
  void print_collected() const {
    for (const TestCase* t : selected) {
      std::string markers;
      for (const auto& m : t->config.markers) markers += (markers.empty() ? "" : ",") + m;
      out << t->id << "  " << test_status_name(t->config.status)
          << (t->placeholder ? " placeholder" : "") << (markers.empty() ? "" : "  [" + markers + "]") << "\n";
    }
    out << selected.size() << " tests collected, " << deselected << " deselected\n";
  }

  // Creates the export directory, clears an earlier run's outputs from it and opens the store.
  Exit prepare_export() {
    try {
      prepare_output_dir(export_dir);  // the real reason when it cannot be; a killed run's temp files swept
      std::error_code ls;  // and those in any test's reports, run again now or not
      for (const auto& e : fs::directory_iterator(export_dir + "/reports", ls))
        if (e.is_directory(ls)) base::sweep_dead_temp_files(e.path().string());
      // Outputs of an earlier run must not pass for this one's if it stops early.
      for (const char* f : {"junit.xml", "summary.json", "report.html", "suggested.yaml", "ops.csv", "ops.html"}) {
        std::error_code rm;
        fs::remove(export_dir + "/" + f, rm);
      }
      if (!store) store = open_store(db);
      if (o.status) o.status->set_store(store.get());
    } catch (const std::exception& e) {
      err << "torq-coordinator: error: " << e.what() << "\n";
      return 2;
    }
    return std::nullopt;
  }

  // Records the run of each selected test that does not run, groups the
  // others by the unit they share, and names the run (run_id) from what
  // they run: tests, models (path, size, time), variants, targets, plans,
  // profiles. No model is read: preparation overlaps dispatch (issue 32).
  Exit group_tests() {
    std::map<std::string, size_t> group_of;  // model|variant|target -> its group
    for (const TestCase* t : selected) {
      const std::string why = not_run_reason(*t);
      if (!why.empty()) {
        TestRun r;
        r.skip_reason = why == "-" ? "" : why;
        runs[t->id] = r;
        continue;
      }
      const bool own = t->mode == Mode::kSubgraph || (t->mode == Mode::kRun && !t->model->config.empty());
      const std::string group = t->model->name + "|" + t->variant.name + "|" + t->target.name;
      if (!own) {
        if (auto g = group_of.find(group); g != group_of.end()) {
          groups[g->second].push_back(t);
          continue;
        }
        group_of[group] = groups.size();
      }
      groups.push_back({t});
    }
    std::map<std::string, std::string> digests;
    std::vector<std::string> parts;
    for (const auto& g : groups) {
      const TestCase& t = *g.front();
      std::string part = t.model->path + "@" + file_stamp(t.model->path) + "|" + t.variant.name + "|" +
                         t.target.name + "|" + plan_identity(unit_plan(t, spec, o), digests);
      if (t.subgraph) part += "|subgraph " + t.subgraph->from + ".." + t.subgraph->to;
      if (t.mode == Mode::kRun && !t.model->config.empty())
        part += "|config " + t.model->config + "@" + file_stamp(t.model->config);
      for (const TestCase* m : g) part += "|" + m->id;
      parts.push_back(part);
    }
    try {
      run_id = run_id_of("matrix", std::move(parts));
    } catch (const std::exception& e) {
      err << "torq-coordinator: error: " << e.what() << "\n";
      return 2;
    }
    progress.start(spec.path, run_id, started, selected, groups.size());
    for (const auto& [id, r] : runs) progress.finished(id, r);  // not run: skipped
    return std::nullopt;
  }

  // Size and modification time of `path` ("-" when it cannot be read: its import fails and says why).
  static std::string file_stamp(const std::string& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) return "-";
    const auto time = fs::last_write_time(path, ec);
    return std::to_string(size) + "," + std::to_string(ec ? 0 : time.time_since_epoch().count());
  }

  // The preparing thread: each group's unit in spec order, pushed to the
  // feed as soon as it is ready; closes the feed at the end (or at a stop).
  void prepare_all() {
    progress.phase("preparing", std::to_string(groups.size()) + " models to prepare, " +
                                    std::to_string(kPrepareAhead) + " at a time ahead of the workers");
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      if (!wait_for_room()) break;
      if (!prepare_group(groups[gi], gi)) break;
    }
    quantize_ahead->stop();  // the preparer was its only reader
    prepared_at = Clock::now();
    log("prepared " + std::to_string(prepared) + " units in " +
        fmt(std::chrono::duration<double>(*prepared_at - t_start).count(), 2) + " s");
    feed->close();
  }

  bool stopping() const { return stop_preparing.load() || (o.stop && o.stop->load()) || halt.load(); }

  // Waits until fewer than kPrepareAhead prepared units hold their model
  // (being served or exported); false when the run stops meanwhile.
  bool wait_for_room() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      if (stopping()) return false;
      if (prepared - released < kPrepareAhead) return true;
      // A fleet that had results and has had none for a while has nothing
      // it can run among the units held (waiting, say, for a board class no
      // worker serves): one more unit, so the workers there are not idle.
      const Clock::rep last = last_result.load();
      if (last != 0 && Clock::now() - Clock::time_point(Clock::duration(last)) >= kIdleFleet) {
        last_result = Clock::now().time_since_epoch().count();  // once per idle spell
        log("no result for " + std::to_string(kIdleFleet.count()) + " ms with " + std::to_string(prepared - released) +
            " units held: preparing one more");
        return true;
      }
      released_cv.wait_for(lock, std::chrono::milliseconds(200));  // also looks at the stop flags
    }
  }

  // Group `g`'s unit (or its runs: an import failure is each test's result);
  // false on a store error, which stops the run.
  bool prepare_group(const std::vector<const TestCase*>& g, size_t gi) {
    const TestCase* t = g.front();
    const auto t0 = Clock::now();
    try {
      RunUnit u = make_unit(*t, spec, o, t->variant.int8 ? quantize_ahead->get(int8_request[gi]) : t->model->path);
      // Two subgraph tests naming one range two ways are one unit (and one report), as are two
      // model entries of the same bytes: every test of the later group takes the earlier's.
      if (auto same = unit_of_key.find(u.key()); same != unit_of_key.end()) {
        std::lock_guard<std::mutex> lock(mu);
        for (const TestCase* m : g) alias_of[m->id] = tests_of_unit[same->second].front();
        return true;
      }
      for (const auto& w : u.model->warnings()) log(t->id + ": warning: " + w);
      // Streamed, not kept: the workers fetch it from the store.
      store->put_model(u.model->hash(), [&](const base::ByteSink& sink) { u.model->serialize_to(sink); });
      if ((t->variant.bf16 || t->variant.int8) && !u.range) u.original_hash = fp32_original_hash(t);
      // An fp32 unit's model is its converted variants' original: stored
      // now, not imported and stored again for them.
      if (!t->variant.bf16 && !t->variant.int8) original_of.emplace(original_key(t), u.model->hash());
      size_t index = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        index = prepared++;
        for (const TestCase* m : g) tests_of_unit[index].push_back(m->id);
      }
      unit_of_key[u.key()] = index;
      progress.unit_tests(u.label, tests_of_unit_copy(index));
      feed->push(std::move(u));
      if (index == 0) progress.phase("running", "the first model's jobs go out while the next are prepared");
      log("prepared unit " + std::to_string(index) + " (" + t->id + ") in " +
          fmt(std::chrono::duration<double>(Clock::now() - t0).count(), 2) + " s");
    } catch (const StoreWriteError& e) {  // the store's, not the test's: the run stops (issue 30)
      prepare_error = std::string(e.what()) + " (the store keeps what was committed; rerun to resume)";
      log("preparation stopped: " + prepare_error);
      halt = true;  // the broker winds down: the run stops
      return false;
    } catch (const StoreReadError& e) {  // a damaged store is not the test's failure either (issue 60)
      prepare_error = e.what();
      log("preparation stopped: " + prepare_error);
      halt = true;
      return false;
    } catch (const QuantizeAhead::Stopped&) {  // the run stops: not the test's failure
      return false;
    } catch (const std::exception& e) {
      TestRun r;
      r.ran = true;
      r.failed_step = "import";
      r.message = e.what();
      r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
      {
        std::lock_guard<std::mutex> lock(mu);
        for (const TestCase* m : g) runs[m->id] = r;
      }
      log(t->id + ": import failed: " + e.what());
      for (const TestCase* m : g) progress.finished(m->id, r);
    }
    return true;
  }

  std::vector<std::string> tests_of_unit_copy(size_t index) {
    std::lock_guard<std::mutex> lock(mu);
    return tests_of_unit[index];
  }

  // The hash of the fp32 original of converted test `t`'s model, stored on first use.
  // The model path and batch that name test `t`'s fp32 original.
  static std::string original_key(const TestCase* t) {
    return t->model->path + "|" + std::to_string(t->variant.batch == 1 ? 0 : t->variant.batch);
  }

  std::string fp32_original_hash(const TestCase* t) {
    // The fp32 original, for the whole model's end-to-end comparison
    // (imported once per model and batch).
    ImportOptions oi;
    oi.batch = t->variant.batch == 1 ? 0 : t->variant.batch;
    const std::string okey = original_key(t);
    auto it = original_of.find(okey);
    if (it == original_of.end()) it = original_of.emplace(okey, store_fp32_original(t->model->path, oi, *store)).first;
    return it->second;
  }

  // Prepares the groups' units on one thread while serving them (and writing
  // each one's reports on another as it finishes); an exit on an error, on
  // missing tags that fail the run, or when it stopped early.
  Exit serve() {
    if (groups.empty()) return std::nullopt;
    std::error_code ec;
    fs::remove_all(grid_dir, ec);  // a stopped run's grids are made again
    try {
      fs::create_directories(grid_dir);
      serve_jobs();
    } catch (const std::exception& e) {
      stop_threads();
      err << "torq-coordinator: error: " << e.what() << "\n";
      return 2;
    }
    stop_threads();
    for (const std::string* why : {&prepare_error, &export_error})
      if (!why->empty()) {
        err << "torq-coordinator: error: " << *why << "\n";
        return 2;
      }
    if (!totals.complete && !totals.fleet.missing_tags.empty() && spec.options.missing_tags_fail) {
      err << "torq-coordinator: error: " << totals.fleet.missing_tags
          << " (options.missing_tags: fail); the store keeps what finished\n";
      return 2;
    }
    if (!totals.complete) {
      progress.phase("stopped", std::to_string(totals.pending) + " jobs unfinished");
      log("stopped early with " + std::to_string(totals.pending) +
          " jobs unfinished; run the same spec with the same --db to resume");
      const base::Progress::LogLine over_the_live_line;
      out << "== torq-coordinator matrix " << spec.path << ": STOPPED EARLY (resumable), no outcomes ==\n";
      print_serve_totals(totals, std::chrono::duration<double>(Clock::now() - t_start).count(), out);
      return kExitStoppedEarly;  // a run that did not finish is never a green one
    }
    resolve_aliases();
    return std::nullopt;
  }

  // Starts the preparing and exporting threads, then serves the units they
  // prepare through the broker (and local workers); throws.
  void serve_jobs() {
    nlohmann::json meta = {{"kind", "matrix"}, {"spec", spec.path}, {"tests", nlohmann::json::array()}};
    for (const auto& g : groups)
      for (const TestCase* t : g) meta["tests"].push_back({{"id", t->id}});
    store->put_run_meta(run_id, meta.dump());
    feed.emplace();
    start_quantizing();
    preparer = std::thread([this] {
      base::name_this_thread("torq-prepare");
      prepare_all();
    });
    exporter = std::thread([this] {
      base::name_this_thread("torq-export");
      export_all();
    });
    BrokerOptions bo = o.broker;
    bo.stop_flag = o.stop;
    bo.halt_flag = &halt;
    bo.fail_on_missing_tags = spec.options.missing_tags_fail;
    bo.missing_tags_wait_ms = static_cast<int>(spec.options.missing_tags_wait_s * 1000);
    bo.workers_gone = &workers_gone;
    LocalFleet fleet;
    if (o.local_workers > 0) start_local_workers(&bo, &fleet);
    StreamedUnits su;
    su.feed = &*feed;
    su.units = &units;
    su.last_result = &last_result;
    su.unit_done = [this](size_t index, RunUnit& u) {
      {
        std::lock_guard<std::mutex> lock(mu);
        to_export.emplace_back(index, &u);
      }
      export_cv.notify_one();
    };
    totals = serve_streamed_units(su, *store, run_id, bo, log, [&] {
      if (fleet.workers && !workers_gone.load()) fleet.workers->stop();
      for (auto& w : fleet.toolchain_workers) w->stop();
    });
    if (!totals.complete && workers_gone.load())
      throw PipelineError("every local worker exited before the run completed (" + std::to_string(totals.pending) +
                          " jobs unfinished; the store keeps the rest); worker log " + export_dir +
                          "/workers.log:\n" + fleet.workers->log_tail());
    fleet.workers.reset();
  }

  // The groups' int8 variants, in the order they are prepared, to be made
  // from now on (cached by content under EXPORT/.quantized).
  void start_quantizing() {
    std::vector<QuantizeAhead::Request> requests;
    int8_request.assign(groups.size(), SIZE_MAX);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const TestCase& t = *groups[gi].front();
      if (!t.variant.int8) continue;
      int8_request[gi] = requests.size();
      requests.push_back({t.model->path, t.variant.per_channel, t.variant.seed});
    }
    quantize_ahead.emplace(std::move(requests), export_dir + "/.quantized", log);
  }

  // Stops preparing (after the model in hand), lets the exporter write what
  // it was given, and joins both threads.
  void stop_threads() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop_preparing = true;
    }
    if (quantize_ahead) quantize_ahead->stop();  // wakes a preparer waiting for a variant
    released_cv.notify_one();
    if (preparer.joinable()) preparer.join();
    quantize_ahead.reset();  // its thread joined (its tool killed by stop)
    {
      std::lock_guard<std::mutex> lock(mu);
      export_closed = true;
    }
    export_cv.notify_one();
    if (exporter.joinable()) exporter.join();
  }

  // The exporting thread: each finished unit's tests' report files, then the unit's model released.
  void export_all() {
    for (;;) {
      std::pair<size_t, RunUnit*> next;
      std::vector<std::string> ids;
      {
        std::unique_lock<std::mutex> lock(mu);
        export_cv.wait(lock, [this] { return export_closed || !to_export.empty(); });
        if (to_export.empty()) return;
        next = to_export.front();
        to_export.pop_front();
        ids = tests_of_unit[next.first];
      }
      RunUnit& u = *next.second;
      if (export_error.empty()) {
        try {
          const std::vector<std::string> keys = unit_op_keys(u);
          for (const auto& id : ids) collect_report(id, u, keys);
        } catch (const std::exception& e) {
          export_error = e.what();
          halt = true;
        }
      }
      // Its jobs are done and its reports written: what remains of it is
      // its results (in the store) and its run's figures.
      u.model.reset();
      u.planner.reset();
      u.bisector.reset();
      // The allocator keeps what the model and its planner freed unless told.
      base::release_free_memory();
      const double cache_limit = base::thread_cache_limit_mb();  // 0: not tcmalloc (a sanitizer build)
      log("unit " + std::to_string(next.first) + " (" + u.label + ") done: reports written, model released; RSS " +
          fmt(base::current_rss_mb(), 0) + " MB (heap " + fmt(base::heap_in_use_mb(), 0) + " MB in use" +
          (cache_limit > 0 ? ", " + fmt(base::thread_cache_mb(), 0) + " MB in thread caches of at most " +
                                 fmt(cache_limit, 0)
                           : std::string()) +
          "), store " + fmt(static_cast<double>(store->memory_bytes()) / 1048576.0, 0) + " MB in memory");
      {
        std::lock_guard<std::mutex> lock(mu);
        ++released;
      }
      released_cv.notify_one();
    }
  }

  // A test that shares another's unit (one subgraph range named two ways):
  // its run, report and report files are that test's.
  void resolve_aliases() {
    for (const auto& [id, canonical] : alias_of) {
      if (!runs.count(canonical)) continue;
      TestRun r = runs[canonical];
      const std::string dir = export_dir + "/reports/" + test_dir_name(id);
      std::error_code ec;
      fs::remove_all(dir, ec);
      fs::copy(export_dir + "/reports/" + test_dir_name(canonical), dir, fs::copy_options::recursive, ec);
      if (!r.report_file.empty()) r.report_file = dir + "/" + fs::path(r.report_file).filename().string();
      runs[id] = r;
      progress.finished(id, r);
      if (auto l = layer_files.find(canonical); l != layer_files.end()) layer_files.emplace(id, l->second);
      // Its grid names it: made again from the report file it now has.
      if (grid_files.count(canonical) && !r.report_file.empty()) {
        try {
          write_grid(id, read_report_file(r.report_file));
        } catch (const std::exception& e) {
          log(id + ": no grid page (" + e.what() + ")");
        }
      }
    }
  }

  // Starts the local workers (sim, and a set per toolchain target) on `bo`'s endpoint, a private one when unbound.
  void start_local_workers(BrokerOptions* bo, LocalFleet* fleet) {
    if (bo->bind.empty()) bo->bind = fleet->private_endpoint.emplace().str();
    LocalWorkersOptions lo;
    lo.workers = o.local_workers;
    lo.endpoint = bo->bind;
    lo.cache_dir = db + "/worker-cache";
    lo.log_file = export_dir + "/workers.log";
    lo.target = "sim";
    lo.heartbeat_ms = bo->heartbeat_ms;
    fs::create_directories(lo.cache_dir);
    fleet->workers = std::make_unique<LocalWorkers>(lo);
    fleet->workers->watch(&workers_gone);
    std::map<std::string, std::string> toolchains;  // target -> file
    for (const TestCase* t : selected)
      if (!t->target.toolchain.empty()) toolchains[toolchain_target(t->target.toolchain)] = t->target.toolchain;
    for (const auto& [target, file] : toolchains) {
      LocalWorkersOptions tl = lo;
      tl.target = target;
      tl.backend = "toolchain";
      tl.toolchain_file = file;
      tl.id_prefix = "local-" + target;
      fleet->toolchain_workers.push_back(std::make_unique<LocalWorkers>(tl));
      fleet->toolchain_workers.back()->watch(&workers_gone);
      log("started " + std::to_string(o.local_workers) + " local workers for " + target + " (" + file + ")");
    }
    std::set<std::string> boards;
    for (const auto& g : groups) {
      const std::string target = serving_target(unit_plan(*g.front(), spec, o).job_template);
      if (target != "sim" && !toolchains.count(target)) boards.insert(target);
    }
    for (const auto& b : boards)
      log("warning: local workers serve target sim only; tests on board class '" + b +
          "' wait for workers started with --target " + b);
    log("started " + std::to_string(o.local_workers) + " local workers (log " + lo.log_file + ")");
  }

  // Test `id`'s layer grid for its grid page, rendered into a file of grid_dir; throws.
  void write_grid(const std::string& id, const ModelReport& rep) {
    const std::string path = grid_dir + "/" + std::to_string(grid_files.size()) + ".html";
    write_text(path, matrix::grid_html(id, rep));
    grid_files[id] = path;
  }

  // Test `id`'s layers' history records, written into a file of grid_dir; throws.
  void write_layers(const std::string& id, std::vector<history::LayerRecord> layers) {
    history::TestRecord t;
    t.id = id;
    t.layers = std::move(layers);
    const std::string path = grid_dir + "/" + std::to_string(layer_files.size()) + ".layers.json";
    write_text(path, history::to_json(t).dump());
    layer_files[id] = path;
  }
  // What write_layers wrote for test `id` (none when it has no report); throws.
  std::vector<history::LayerRecord> read_layers(const std::string& id) const {
    const auto f = layer_files.find(id);
    if (f == layer_files.end()) return {};
    return history::test_from_json(nlohmann::json::parse(detail::read_text(f->second))).layers;
  }

  // Test `id`'s report files under reports/<test-id>/ and its run (from unit
  // `u`, whose layers have op keys `keys`); throws.
  void collect_report(const std::string& id, const RunUnit& u, const std::vector<std::string>& keys) {
    const std::string dir = export_dir + "/reports/" + test_dir_name(id);
    prepare_output_dir(dir);
    ModelReport rep = unit_report(u, *store, run_id, o.tolerance, dir, log);
    TestRun r = run_from_report(rep, u.full_result);
    select_compared(&r, spec.options.compare_with_original);
    if (u.full_result) {
      // The report made and written once, with its full-model run (a run
      // test's report was made three times over, a fifth of the exporter's
      // time in a nightly, issue 32).
      write_json_atomic(compiler_path(dir, rep.model_name), compiler_json(rep));
      write_json_atomic(report_path(dir, rep.model_name), with_full_model(u, rep, dir, &r));
    } else {
      write_report_files(rep, dir);
    }
    double secs = 0;
    for (const auto& l : rep.layers)
      for (const auto& [e, res] : l.results) secs += res.host_ms / 1000.0;
    r.wall_s = secs;
    r.report_file = report_path(dir, rep.model_name);
    {
      std::lock_guard<std::mutex> lock(mu);
      runs[id] = r;
    }
    progress.finished(id, r);
    write_layers(id, matrix::layer_records(rep, keys));
    write_grid(id, rep);
  }

  // The JSON report of `rep` with unit `u`'s assigned full-model run (and
  // its profile, written into `dir`), which goes into run `r` too; throws.
  nlohmann::ordered_json with_full_model(const RunUnit& u, const ModelReport& rep, const std::string& dir,
                                         TestRun* r) const {
    std::vector<LayerInfo> infos;
    if (u.fixed_assignment) {
      infos = u.model->layers();
    } else {
      for (const auto& l : rep.layers) infos.push_back(l.info);
    }
    FullModelRule rule;
    rule.tolerance = o.tolerance;
    const FullModelRun full = full_model_run(u, infos, rule);
    nlohmann::ordered_json j = report_to_json(rep);
    attach_full_model(&j, full);
    if (!full.result.profiles.empty()) {
      j["full_model"]["profile_overview"] = export_profile(
          merge_layer_profiles(full.result.profiles, rep.model_name), dir, rep.model_name, &r->profile_overview);
      r->profile_trace = dir + "/" + rep.model_name + ".trace.json";
    }
    if (full.failing)
      r->failing_range = std::to_string(full.failing->first) + ".." + std::to_string(full.failing->last) + " (" +
                         j["full_model"]["first_failing_range"]["first_layer"].get<std::string>() + " .. " +
                         j["full_model"]["first_failing_range"]["last_layer"].get<std::string>() + ")";
    return j;
  }

  // Judges each selected test on its run.
  void judge_tests() {
    for (const TestCase* t : selected) results.push_back(judge(*t, runs[t->id], o.strict_xfail));
  }

  // The run's info (wall time, jobs, selection, boards), its exit code and the suggested config edits.
  void describe_run() {
    wall_s = std::chrono::duration<double>(Clock::now() - t_start).count();
    info.spec = spec.path;
    info.run_id = run_id;
    info.started_utc = started;
    info.wall_s = wall_s;
    info.jobs = totals.done_jobs;
    info.fleet_jobs = totals.fleet_jobs;
    info.cache_hits = totals.cache_hits;
    info.jobs_per_s = totals.run_s > 0 ? static_cast<double>(totals.fleet_jobs) / totals.run_s : 0;
    info.k = o.k;
    info.m = o.m;
    info.preset = o.preset;
    info.strict_xfail = o.strict_xfail;
    info.deselected = deselected;
    for (const auto& [id, b] : totals.fleet.boards) {
      std::string tags;
      for (const auto& t : b.tags) tags += (tags.empty() ? "" : ",") + t;
      info.boards.push_back(RunInfo::Board{id, b.target, tags, b.health, b.reason, b.since});
    }
    for (const TestResult& r : results)
      if (unexpected(r)) code = 1;
    suggestions = suggest(results);
  }

  // The run's history record (durable before anything reports the run done):
  // what changed since each test's previous record, the op-support matrix.
  Exit record_history() {
    OpMatrixBuilder op_rows;
    try {
      history::History hist(*store, spec.path);
      const auto record_at = [&](size_t i) {
        history::TestRecord t = matrix::test_record(results[i], read_layers(results[i].test->id));
        op_rows.add(t);
        return t;
      };
      seq = record_run(hist, run_record(info, o.last_failed), record_at, since_thresholds(spec.options), &results);
      ops = op_rows.finish();
      info.trend = matrix::trend_points(hist.runs(), kTrendRuns);
    } catch (const std::exception& e) {
      err << "torq-coordinator: error: recording the run history: " << e.what() << "\n";
      return 2;
    }
    return std::nullopt;
  }

  // Test `r`'s grid page beside report.html, its grid copied from its file; throws.
  void write_grid_page(const TestResult& r) const {
    const std::string& id = r.test->id;
    const std::string& file = grid_files.at(id);
    AtomicFile f(export_dir + "/" + matrix::grid_page_path(id));
    std::string buf(size_t{1} << 20, '\0');
    matrix::write_grid_page([&](std::string_view piece) { f.write(piece); }, r, [&](const matrix::HtmlOut& out) {
      std::ifstream in(file, std::ios::binary);
      if (!in) throw PipelineError(file + ": cannot read " + id + "'s layer grid");
      while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
        out(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
      if (in.bad()) throw PipelineError(file + ": cannot read " + id + "'s layer grid");
    });
    f.commit();
  }

  // report.html, and each test's grid page it links (the grids stay out of
  // it: a spec's layers would make it tens of MB; issue 33).
  void write_html(const std::string& path) const {
    std::set<std::string> pages;
    for (const TestResult& r : results)
      if (grid_files.count(r.test->id)) {
        write_grid_page(r);
        pages.insert(r.test->id);
      }
    write_text(path, matrix::html_report(results, pages, info, &ops));
    std::error_code ec;
    fs::remove_all(grid_dir, ec);
  }

  // Writes ops.csv, ops.html, junit.xml, summary.json, report.html and suggested.yaml (removing a stale one) to
  // the export.
  Exit export_files() {
    progress.phase("exporting", "junit.xml, summary.json, report.html to " + export_dir);
    try {
      write_text(export_dir + "/ops.csv", ops_csv(ops));
      write_text(export_dir + "/" + matrix::kOpsPage, matrix::ops_page(ops, info));
      write_text(export_dir + "/junit.xml", junit_xml(results, info));
      write_json_atomic(export_dir + "/summary.json",
                        nlohmann::ordered_json::parse(summary_json(results, info).dump()));
      write_html(export_dir + "/report.html");
      std::error_code ec;
      if (suggestions.empty()) fs::remove(export_dir + "/suggested.yaml", ec);
      else write_text(export_dir + "/suggested.yaml", suggestions);
    } catch (const std::exception& e) {
      err << "torq-coordinator: error: " << e.what() << "\n";
      return 2;
    }
    return std::nullopt;
  }

  // Prints each test's outcome, the serving totals and where everything went; returns the exit code.
  // When each phase ended, from the start (issue 32: workers never wait for
  // preparation): preparation, the first job sent, the job phase (first job
  // sent to last result committed), the whole run; and this process's peak RSS.
  void print_phases() const {
    const auto at = [this](const std::optional<Clock::time_point>& t) {
      return t ? fmt(std::chrono::duration<double>(*t - t_start).count(), 2) + " s" : std::string("-");
    };
    out << "phases    " << prepared << " units prepared by " << at(prepared_at) << ", first job sent at "
        << at(totals.fleet.first_dispatch) << ", job phase " << fmt(totals.fleet.dispatch_window_s, 2)
        << " s, wall " << fmt(wall_s, 2) << " s; coordinator peak RSS " << fmt(base::peak_rss_mb(), 0) << " MB\n";
    // What the coordinator's side costs the machine: on a machine it shares
    // with its workers, that CPU is theirs to lose (issue 32).
    out << "cpu       coordinator " << fmt(base::cpu_seconds(false), 1) << " s, its child processes (int8 quantization, "
        << "local workers) " << fmt(base::cpu_seconds(true), 1) << " s, over a wall of " << fmt(wall_s, 1) << " s\n";
    print_thread_cpu();
  }

  // The coordinator's own CPU by thread, the largest 8: the broker (main),
  // the preparer, the exporter, the store's writers and RocksDB's; then the
  // rest of the process's CPU (smaller threads, and threads that ended
  // unnamed: ZeroMQ's I/O thread, gone with the broker's context).
  void print_thread_cpu() const {
    const auto threads = base::cpu_by_thread();
    if (threads.empty()) return;
    out << "threads  ";
    double shown_s = 0;
    for (size_t i = 0; i < threads.size() && i < 8 && threads[i].second >= 0.05; ++i) {
      out << " " << threads[i].first << " " << fmt(threads[i].second, 1) << " s,";
      shown_s += threads[i].second;
    }
    out << " others " << fmt(std::max(0.0, base::cpu_seconds(false) - shown_s), 1)
        << " s (the coordinator's CPU by thread)\n";
  }

  int print_summary() const {
    const base::Progress::LogLine over_the_live_line;  // a terminal's progress line is not drawn midway
    out << "== torq-coordinator matrix " << spec.path << " (run " << (run_id.empty() ? "-" : run_id) << ") ==\n";
    print_results(results, out);
    if (!groups.empty()) print_serve_totals(totals, wall_s, out);
    print_phases();
    out << "export    " << export_dir << "/{junit.xml,summary.json,report.html,ops.html,ops.csv"
        << (suggestions.empty() ? "" : ",suggested.yaml") << "}, reports/<test-id>/\n";
    out << "history   run " << seq << " of this spec (" << ops.rows.size()
        << " unique ops); changes: torq-coordinator diff " << (o.db.empty() ? "--export " + export_dir : "--db " + db)
        << " --spec " << spec.path << "\n";
    if (!suggestions.empty())
      out << "suggest   config edits in " << export_dir << "/suggested.yaml (xpasses, pcc margins, unlisted tests)\n";
    out << "exit      " << code << (code ? " (unexpected outcomes: failed or xpassed)" : "") << "\n" << std::flush;
    return code;
  }
};

}  // namespace

int run_matrix(const MatrixRunOptions& o, std::ostream& out, std::ostream& err) {
  MatrixRun run(o, out, err);
  if (const Exit code = run.load_and_select()) return *code;
  if (run.spec.probe) return run_probe_matrix(o, run.spec, out, err);
  if (o.collect_only) {
    run.print_collected();
    return 0;
  }
  if (const Exit code = run.prepare_export()) return *code;
  if (const Exit code = run.group_tests()) return *code;
  // Prepare the runnable tests' models (an import failure is that test's
  // result) while the fleet runs those already prepared, in one broker run
  // (local workers when asked), and write each test's reports as its unit
  // finishes.
  if (const Exit code = run.serve()) return *code;
  run.judge_tests();
  run.describe_run();
  if (const Exit code = run.record_history()) return *code;
  if (const Exit code = run.export_files()) return *code;
  run.progress.phase("done");
  return run.print_summary();
}

int validate_files(const std::vector<std::string>& files, std::ostream& out, std::ostream& err) {
  if (files.empty()) {
    err << "torq-coordinator validate: give a spec and/or test_config files\n";
    return 2;
  }
  std::vector<std::string> specs, configs;
  for (const auto& f : files) {
    if (const std::string why = base::not_a_regular_file(f); !why.empty()) {
      err << f << ": cannot open: " << why << "\n";
      return 2;
    }
    bool is_spec = false;
    try {
      const YAML::Node root = YAML::LoadFile(f);
      is_spec = root.IsMap() && (root["models"].IsDefined() || root["probe"].IsDefined());
    } catch (const YAML::Exception&) {
      // Parse errors are reported with their location by the loaders below.
    }
    (is_spec ? specs : configs).push_back(fs::absolute(f).lexically_normal().string());
  }
  try {
    if (specs.empty()) {
      const ConfigSet set = load_configs(configs);
      out << "ok: " << configs.size() << " config file" << (configs.size() == 1 ? "" : "s") << ", "
          << set.entries.size() << " entries (IDs not checked: give the spec too)\n";
      return 0;
    }
    for (const auto& s : specs) {
      Spec spec = load_spec(s);
      if (spec.probe) {
        out << "ok: " << s << ": a probe of " << probe::expand_points(probe::load_probe_spec(spec.probe->spec)).size()
            << " points (" << spec.probe->spec << ") on " << spec.executors.size() << " executor(s) x "
            << spec.targets.size() << " target(s)\n";
        continue;
      }
      std::vector<std::string> all = spec.config_files;
      for (const auto& c : configs)
        if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
      const ConfigSet set = load_configs(all);
      const std::vector<TestCase> tests = collect(spec, set);
      size_t placeholders = 0;
      for (const auto& t : tests) placeholders += t.placeholder ? 1 : 0;
      out << "ok: " << s << ": " << tests.size() << " tests (" << placeholders << " placeholders), "
          << set.entries.size() << " config entries in " << all.size() << " files, " << spec.presets.size()
          << " presets\n";
    }
  } catch (const std::exception& e) {
    err << e.what() << "\n";
    return 1;
  }
  return 0;
}

int suggest_from_summary(const std::string& spec_file, const std::string& summary_file, const std::string& out_file,
                         std::ostream& out, std::ostream& err) {
  try {
    const Spec spec = load_spec(spec_file);
    const std::vector<TestCase> tests = collect(spec, load_configs(spec.config_files));
    std::ifstream in(summary_file);
    if (!in) throw PipelineError(summary_file + ": cannot open");
    std::stringstream summary_text;
    summary_text << in.rdbuf();
    check_json_depth(summary_text.str(), summary_file);
    nlohmann::json sum;
    try {
      sum = nlohmann::json::parse(summary_text.str());
    } catch (const nlohmann::json::exception& e) {
      throw PipelineError(summary_file + ": not a summary.json: " + e.what());
    }
    if (!sum.is_object() || !sum.contains("tests") || !sum["tests"].is_array())
      throw PipelineError(summary_file + ": not a summary.json (no \"tests\" array)");
    std::map<std::string, const TestCase*> by_id;
    for (const auto& t : tests) by_id[t.id] = &t;
    auto num = [](const nlohmann::json& j, const char* k) {
      return j.contains(k) && j[k].is_number() ? j[k].get<double>() : -1.0;
    };
    std::vector<TestResult> results;
    size_t unknown = 0;
    for (const auto& t : sum["tests"]) {
      if (!t.is_object() || !t.contains("id") || !t["id"].is_string())
        throw PipelineError(summary_file + ": a test entry without a string \"id\"");
      auto it = by_id.find(t["id"].get<std::string>());
      if (it == by_id.end()) {
        ++unknown;
        continue;
      }
      TestRun r;
      r.ran = t.value("ran", false);
      r.failed_step = t.value("failed_step", "");
      r.message = t.value("message", "");
      r.pcc = num(t, "pcc");
      r.max_abs = num(t, "max_abs");
      r.max_rel = num(t, "max_rel");
      r.layers = t.value("layers", 0);
      r.critical_failures = t.value("critical_failures", 0);
      results.push_back(judge(*it->second, r, false));
    }
    if (unknown) err << "torq-coordinator suggest: " << unknown << " tests of the summary are no longer collected\n";
    const std::string text = suggest(results);
    if (text.empty()) {
      out << "nothing to suggest: the config matches the run\n";
      return 0;
    }
    if (out_file.empty()) {
      out << text;
    } else {
      write_text(out_file, text);
      out << "wrote " << out_file << "\n";
    }
  } catch (const std::exception& e) {
    err << "torq-coordinator: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace torq::coordinator
