// torq-coordinator: serves executor discovery to a fleet of torq-workers
// over ZeroMQ (DESIGN.md §6) and runs model-matrix specs (§8).
//
//   torq-coordinator --model M [--model M2 ...] --db DIR [--export DIR] ...
//   torq-coordinator --spec FILE [-k EXPR] [-m EXPR] [--preset NAME]
//       [--collect-only] [--strict-xfail] [--last-failed] [--export DIR]
//       [--db DIR] [--local-workers N] ...
//   common: --bind tcp://127.0.0.1:5555 [--insecure] [--max-attempts N]
//       [--heartbeat-ms MS] [--key PREFIX --allow FILE]
//   torq-coordinator validate FILE...       spec and/or test_config files
//   torq-coordinator suggest --spec FILE --summary summary.json [-o OUT]
//   torq-coordinator diff [--spec FILE] [--db DIR | --export DIR] [--json]
//       [--pcc-drift X] [--time-drift F] [--time-floor-ms MS] [RUN_A] [RUN_B]
//   torq-coordinator keygen OUT_PREFIX      -> OUT_PREFIX.key, OUT_PREFIX.pub
//   torq-coordinator status --http URL [--http-token FILE] [--json]
//   a run's status while it runs: --http HOST:PORT [--http-token FILE]
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "pipeline/base/file_bytes.h"
#include "pipeline/base/peak_rss.h"
#include "pipeline/base/stop_signals.h"
#include "pipeline/base/toolchain_budget.h"
#include "pipeline/base/progress.h"
#include "coordinator/matrix/diff_command.h"
#include "coordinator/fleet/fleet_run.h"
#include "coordinator/matrix/matrix_run.h"
#include "coordinator/observe/status_server.h"

using namespace torq;

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop.store(true); }

// Writes `text` to a new file with `mode`; refuses to overwrite.
bool write_new(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  if (fd < 0) {
    std::perror(path.c_str());
    return false;
  }
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return close(fd) == 0 && ok;
}

int keygen(const std::string& prefix) {
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0) {
    std::fprintf(stderr, "torq-coordinator: keygen: %s (libzmq without CURVE?)\n", zmq_strerror(zmq_errno()));
    return 2;
  }
  if (!write_new(prefix + ".key", std::string(sec) + "\n", 0600)) return 2;
  if (!write_new(prefix + ".pub", std::string(pub) + "\n", 0644)) return 2;
  std::printf("wrote %s.key (secret, keep it on this host) and %s.pub (public)\n", prefix.c_str(), prefix.c_str());
  return 0;
}

std::string read_key(const std::string& path) {
  if (const std::string why = base::not_a_regular_file(path); !why.empty())
    throw pipeline::PipelineError(path + ": cannot read a CURVE key: " + why);
  std::ifstream f(path);
  std::string k;
  if (!f || !(f >> k)) throw pipeline::PipelineError(path + ": cannot read a CURVE key");
  return k;
}

// One z85 public key per line, optionally followed by whitespace and a
// # comment; blank lines and comment lines are skipped. ('#' is also a z85
// character: a 40-character token that decodes is a key.)
std::set<std::string> read_allow_list(const std::string& path) {
  if (const std::string why = base::not_a_regular_file(path); !why.empty())
    throw pipeline::PipelineError(path + ": cannot open the allow-list: " + why);
  std::ifstream f(path);
  if (!f) throw pipeline::PipelineError(path + ": cannot open the allow-list");
  std::set<std::string> keys;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    std::istringstream words(line);
    std::string key, rest;
    if (!(words >> key)) continue;
    uint8_t raw[32];
    const bool z85 = key.size() == 40 && zmq_z85_decode(raw, key.c_str()) != nullptr;
    if (!z85 && key[0] == '#') continue;  // a comment line
    if (!z85 || ((words >> rest) && rest[0] != '#'))
      throw pipeline::PipelineError(path + ":" + std::to_string(n) + ": not a z85 public key (40 chars)");
    keys.insert(key);
  }
  return keys;
}

// The subcommands' operands and options, and the subcommands once added.
struct SubcommandArgs {
  std::string prefix;                        // keygen
  std::vector<std::string> validate_args;    // validate
  std::string sg_spec, sg_summary, sg_out;   // suggest
  coordinator::DiffCommand dc;               // diff
  std::string st_url, st_token;              // status
  bool st_json = false;
  CLI::App *kg = nullptr, *va = nullptr, *sg = nullptr, *df = nullptr, *st = nullptr;
};

// Adds `diff` and its options (bound to `dc`) to `app`.
CLI::App* add_diff(CLI::App& app, coordinator::DiffCommand& dc) {
  auto* df = app.add_subcommand("diff", "What changed between two runs of a matrix spec (its run history in the "
                                        "store): new failures, fixes, outcome, status and recommendation changes, "
                                        "PCC and timing drift, per test and per layer. Exit 0, 2 on bad input");
  df->add_option("--spec", dc.spec, "The matrix spec (default: the only spec with a history in the store)");
  auto* df_db = df->add_option("--db", dc.db, "Store directory (default: EXPORT/.torq-store)");
  df->add_option("--export", dc.export_dir, "The run's export directory (default: torq-results)")->excludes(df_db);
  df->add_option("RUNS", dc.runs, "RUN_A RUN_B: run numbers (default: the last two; RUN_A alone: against the last)")
      ->expected(0, 2)
      ->type_name("N");
  df->add_flag("--json", dc.json, "Print JSON for machines instead of text");
  df->add_option("--pcc-drift", dc.thresholds.pcc, "Report a PCC change larger than this (absolute)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  df->add_option("--time-drift", dc.thresholds.time,
                 "Report a device-time change larger than this fraction (0.2: 20%) ...")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  df->add_option("--time-floor-ms", dc.thresholds.time_floor_ms, "... and larger than this many ms")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  return df;
}

// Adds keygen, validate, suggest and diff (their options bound to `s`) to `app`.
void add_subcommands(CLI::App& app, SubcommandArgs& s) {
  s.kg = app.add_subcommand("keygen", "Write a CURVE key pair: PREFIX.key (secret) and PREFIX.pub");
  s.kg->add_option("OUT_PREFIX", s.prefix, "Output path prefix")->required();
  s.va = app.add_subcommand("validate", "Validate a matrix spec and/or test_config files (file:line:col errors)");
  s.va->add_option("FILES", s.validate_args, "Spec (has `models`) and test_config YAML files")->required();
  s.sg = app.add_subcommand("suggest", "Suggest config edits (YAML patch) from a run's summary.json");
  s.sg->add_option("--spec", s.sg_spec, "The matrix spec of the run")->required();
  s.sg->add_option("--summary", s.sg_summary, "summary.json of the run (in its --export directory)")->required();
  s.sg->add_option("-o,--output", s.sg_out, "Write the patch here (default: stdout)");
  s.df = add_diff(app, s.dc);
  s.st = app.add_subcommand("status", "Print a running coordinator's status (started with --http): phase, "
                                      "progress, workers and boards, tests, last failures. Exit 0, 2 when "
                                      "it cannot be read");
  s.st->add_option("--http", s.st_url, "The coordinator's --http address, e.g. http://127.0.0.1:8080")->required();
  s.st->add_option("--http-token", s.st_token, "A file holding the coordinator's bearer token")
      ->check(CLI::ExistingFile);
  s.st->add_flag("--json", s.st_json, "Print /api/status's JSON instead of text");
}

// A run's options (--model or --spec) and the strings turned into them after the parse.
struct RunArgs {
  coordinator::FleetRunOptions o;
  coordinator::MatrixRunOptions mo;
  std::vector<std::string> models;
  std::string spec_file, key_prefix, allow_file;
  std::string http, http_token;  // --http HOST:PORT, --http-token FILE
  int grace_s = 30;
  std::string executors = "nss,css,host";
  CLI::Option* bind = nullptr;  // --bind, to tell whether it was given
};

// Adds the options of every run (--model or --spec): what to run, the broker, the store, CURVE.
void add_run_options(CLI::App& app, RunArgs& r) {
  coordinator::FleetRunOptions& o = r.o;
  auto* om = app.add_option("--model", r.models, "ONNX model (repeatable): a plain discovery run");
  auto* os = app.add_option("--spec", r.spec_file, "Matrix spec YAML (models, variants, targets, test_config, presets)");
  om->excludes(os);
  r.bind = app.add_option("--bind", o.broker.bind, "ROUTER endpoint")->capture_default_str();
  app.add_option("--db", o.db, "Store directory (RocksDB); the same --db resumes a run; with --spec it also "
                               "keeps the spec's run history (diff, --last-failed) (default with --spec: "
                               "EXPORT/.torq-store)");
  app.add_option("--export", o.export_dir, "Output directory: report and compiler JSON per model; with --spec also "
                                           "junit.xml, summary.json, report.html, ops.csv (default with --spec: "
                                           "torq-results)");
  app.add_flag("--insecure", o.broker.insecure, "Allow a non-loopback bind without CURVE");
  app.add_option("--max-attempts", o.broker.max_attempts, "Workers a job may outlive before error/crash")
      ->capture_default_str()->check(CLI::Range(1, 100));
  app.add_option("--heartbeat-ms", o.broker.heartbeat_ms, "Heartbeat interval")
      ->capture_default_str()->check(CLI::Range(10, 60000));
  app.add_option("--liveness", o.broker.liveness,
                 "Heartbeat intervals a worker may be silent before it is dead and its jobs requeued")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--grace-s", r.grace_s, "On SIGTERM: wait this long for leased jobs")->capture_default_str();
  app.add_option("--min-workers", o.broker.min_workers,
                 "Start dispatching once this many workers have registered (benchmarks)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--job-timeout-ms", o.job_timeout_ms,
                 "Per-job executor timeout (without --spec; a spec sets options.job_timeout_ms). Default 120000, "
                 "with a --target other than sim the real tools' step budgets added up (import 300 s + compile "
                 "300 s + run 240 s per timing run + 1 s)")
      ->capture_default_str();
  app.add_option("--http", r.http,
                 "Serve the run's status over HTTP on HOST:PORT while it runs: GET /metrics (Prometheus), "
                 "/api/status (JSON), / (a live page). Loopback only unless --http-token is given");
  app.add_option("--http-token", r.http_token,
                 "A file whose first line (16+ characters) is the bearer token every --http request must carry "
                 "(required for a non-loopback --http address)")
      ->check(CLI::ExistingFile);
  app.add_option("--key", r.key_prefix, "CURVE: this coordinator's key pair PREFIX.key / PREFIX.pub");
  app.add_option("--allow", r.allow_file, "CURVE: allow-list of worker public keys, one per line");
}

// Adds the options of a --spec run: the test selection and local workers.
void add_matrix_options(CLI::App& app, coordinator::MatrixRunOptions& mo) {
  // Matrix runs.
  app.add_option("-k", mo.k, "With --spec: select tests whose ID matches (and/or/not/parentheses over substrings)");
  app.add_option("-m", mo.m, "With --spec: select tests by markers (and/or/not/parentheses over marker names)");
  app.add_option("--preset", mo.preset, "With --spec: a named -k/-m selection from the spec's presets");
  app.add_flag("--collect-only", mo.collect_only, "With --spec: list the selected test IDs and exit");
  app.add_flag("--strict-xfail", mo.strict_xfail, "With --spec: an xpassed test fails the run");
  app.add_flag("--last-failed,--lf", mo.last_failed,
               "With --spec: rerun only the selected tests that failed at their latest run in the store's history "
               "(none failed: run nothing, exit 0; no previous run: run every selected test)");
  app.add_option("--local-workers", mo.local_workers,
                 "Start N torq-worker processes on this machine (target sim) on a private endpoint "
                 "(or on --bind when given)")
      ->check(CLI::Range(0, 256));
}

// Adds the options of a --model run: the fields a spec would set.
void add_specless_options(CLI::App& app, RunArgs& r) {
  // Spec-less runs: the spec's fields as flags.
  app.add_option("--executors", r.executors, "Executors to test, priority order (with --model)")
      ->capture_default_str();
  app.add_option("--target", r.o.spec.target, "Target the workers must serve (with --model)")->capture_default_str();
  app.add_flag("--auto-convert-bf16", r.o.spec.auto_convert_bf16, "Convert models to bf16 (with --model)");
  app.add_flag("--dedup", r.o.spec.dedup, "Deduplicate layers by signature (with --model)");
  app.add_flag("--skip-mode", r.o.spec.skip_mode, "Stop at the first successful executor (with --model)");
  app.add_option("--timing-runs", r.o.spec.timing_runs, "Executor runs per job (with --model)")
      ->capture_default_str()->check(CLI::Range(1, 1000));
}

// With --spec: the spec-less flags are errors (the spec sets them); throws.
void check_spec_run(const CLI::App& app) {
  for (const char* flag : {"--executors", "--target", "--auto-convert-bf16", "--dedup", "--skip-mode",
                           "--timing-runs", "--job-timeout-ms"})
    if (app.count(flag)) throw pipeline::PipelineError(std::string(flag) + " conflicts with --spec (set it in the spec)");
}

// Without --spec: checks the flags (throws) and fills the run's spec from them.
void settle_model_run(const CLI::App& app, RunArgs& r) {
  coordinator::FleetRunOptions& o = r.o;
  for (const char* flag : {"-k", "-m", "--preset", "--collect-only", "--strict-xfail", "--last-failed",
                           "--local-workers"})
    if (app.count(flag)) throw pipeline::PipelineError(std::string(flag) + " needs --spec");
  if (r.models.empty()) throw pipeline::PipelineError("give --model M (repeatable) or --spec FILE (see --help)");
  o.spec.models = r.models;
  o.spec.executors = pipeline::parse_executor_list(r.executors);
  if (o.db.empty()) throw pipeline::PipelineError("--db DIR is required (the run's durable store)");
  // Workers of a board target run the Torq tools: a job gets the real
  // tool's step budgets added up (import, compile, a run per timing run)
  // unless --job-timeout-ms says otherwise.
  if (!app.count("--job-timeout-ms") && o.spec.target != "sim")
    o.job_timeout_ms = base::job_budget_ms(base::kImportTimeoutS, base::kCompileTimeoutS, base::kRunTimeoutS,
                                           o.spec.timing_runs);
}

// Checks a run's options and completes them (CURVE keys read): 0, or 2 with the error on stderr.
int check_run_options(const CLI::App& app, RunArgs& r) {
  try {
    if (!r.spec_file.empty()) {
      check_spec_run(app);
    } else {
      settle_model_run(app, r);
    }
    if (r.key_prefix.empty() != r.allow_file.empty())
      throw pipeline::PipelineError("CURVE needs both --key PREFIX and --allow FILE");
    if (!r.key_prefix.empty()) {
      r.o.broker.curve_secret_key = read_key(r.key_prefix + ".key");
      r.o.broker.allowed_client_keys = read_allow_list(r.allow_file);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torq-coordinator: error: %s\n", e.what());
    return 2;
  }
  return 0;
}

// Runs the --spec matrix with the run's broker, store and export directory.
int run_spec(RunArgs& r) {
  coordinator::MatrixRunOptions& mo = r.mo;
  const coordinator::FleetRunOptions& o = r.o;
  mo.spec_file = r.spec_file;
  mo.db = o.db;
  if (!o.export_dir.empty()) mo.export_dir = o.export_dir;
  mo.broker = o.broker;
  // Local workers without --bind: a private ipc:// endpoint.
  if (mo.local_workers > 0 && r.bind->count() == 0) mo.broker.bind.clear();
  mo.stop = &g_stop;
  mo.tolerance = o.tolerance;
  return coordinator::run_matrix(mo, std::cout, std::cerr);
}

// `status --http URL`: a running coordinator's status in this terminal.
int remote_status(const SubcommandArgs& s) {
  try {
    const std::string token = s.st_token.empty() ? "" : coordinator::observe::read_token(s.st_token);
    return coordinator::observe::print_remote_status(s.st_url, token, s.st_json, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torq-coordinator: status: %s\n", e.what());
    return 2;
  }
}

// --http: the status server, started before the run (0), or 2 with the error on stderr.
int start_status_server(const RunArgs& r, const coordinator::observe::StatusBoard& board,
                        std::unique_ptr<coordinator::observe::StatusServer>* server) {
  try {
    if (r.http.empty()) {
      if (!r.http_token.empty()) throw pipeline::PipelineError("--http-token needs --http HOST:PORT");
      return 0;
    }
    const std::string token = r.http_token.empty() ? "" : coordinator::observe::read_token(r.http_token);
    *server = std::make_unique<coordinator::observe::StatusServer>(board, r.http, token);
    std::fprintf(stderr, "[coordinator] status on %s/ (/metrics, /api/status)%s\n", (*server)->url().c_str(),
                 token.empty() ? "" : ", bearer token required");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torq-coordinator: error: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"torq-coordinator: serves executor discovery to a fleet of torq-workers and runs model-matrix specs"};
  app.footer("Exit codes: 0 every test as expected (a run: complete, no critical failure); 1 an unexpected outcome "
             "(a run: critical failures); 2 bad input or an error; 3 stopped early (SIGTERM/SIGINT): nothing "
             "judged, the same command with the same --db resumes it.");
  app.require_subcommand(0, 1);
  SubcommandArgs s;
  add_subcommands(app, s);
  RunArgs r;
  add_run_options(app, r);
  add_matrix_options(app, r.mo);
  add_specless_options(app, r);
  CLI11_PARSE(app, argc, argv);
  if (s.kg->parsed()) return keygen(s.prefix);
  if (s.va->parsed()) return coordinator::validate_files(s.validate_args, std::cout, std::cerr);
  if (s.sg->parsed()) return coordinator::suggest_from_summary(s.sg_spec, s.sg_summary, s.sg_out, std::cout, std::cerr);
  if (s.df->parsed()) return coordinator::diff_command(s.dc, std::cout, std::cerr);
  if (s.st->parsed()) return remote_status(s);

  if (const int rc = check_run_options(app, r)) return rc;
  // A run's threads (serving, preparing, exporting, RocksDB's) share 8 MiB
  // of cached free objects instead of 32: the peak RSS of a long spec then
  // stays that of a short one (issue 32).
  base::limit_thread_caches(size_t{8} << 20);
  r.o.broker.grace_ms = std::max(0, r.grace_s) * 1000;
  r.o.broker.stop_flag = &g_stop;
  base::install_stop_signals(on_stop_signal);
  // Where a long run is: on stderr every few seconds, or a live line on a
  // terminal (issues 31, 33), and over HTTP with --http.
  coordinator::observe::StatusBoard board;  // before the progress line, whose thread reads it to the end
  base::Progress progress("torq-coordinator");
  r.o.broker.observer = &board;
  r.mo.status = &board;
  std::unique_ptr<coordinator::observe::StatusServer> server;
  if (const int rc = start_status_server(r, board, &server)) return rc;
  progress.set_status([&board] {
    const coordinator::observe::RunStatus s = board.snapshot();
    if (s.phase == "starting") return std::string("starting (reading the spec, opening the store)");
    return s.phase + " | " + coordinator::observe::progress_figures(s);
  });
  if (!r.spec_file.empty()) return run_spec(r);
  board.set_phase("running");
  const int rc = coordinator::run_fleet(r.o, std::cout, std::cerr);
  board.set_phase("done");
  return rc;
}
