// torq-worker: runs discovery jobs. The composition root of worker/: it
// picks the backend (sim or toolchain) and gives the fleet worker its
// health-check model (the sim's demo model), so runner/ knows neither.
//  --stdio: serves its parent (a local pool) over stdin/stdout frames: Job
//    in, Result out, models read from the --cache directory (<hash>.onnx).
//  --connect tcp://HOST:PORT: a fleet worker (DESIGN §6) serving a
//    torq-coordinator; each job runs in a `--stdio` child process.
//  --connect ... --bench-executor noop|sleep:MS: BENCHMARKING ONLY, jobs
//    answered in-process without the engine (tests/bench/fleet_bench.sh).
//  --backend sim|toolchain [--toolchain FILE.yaml]: what runs the executor
//    (worker/runner/backend.h): the engine under the executor profiles
//    (default), or the Torq tools per the toolchain file (a bad file: exit 2
//    with file:line:col). --check-backend validates, runs each tool of the
//    file once (`--version` / `--help`, worker/toolchain/toolchain_probe.h)
//    and exits 0, or 2 naming a tool that cannot run and why.
//  --board [USER@]HOST[:PORT] [--ssh-key FILE] [--board-lock-timeout-s N] [--board-host-keys accept-new|ignore]
//    (with --backend toolchain): compile here, run the module on the board
//    over ssh (worker/toolchain/toolchain_backend.h, board mode); --capacity
//    lanes compile at once, the board runs one module at a time, and the
//    worker holds kBoardQueue jobs more than its lanes, so that jobs waiting
//    for the board do not keep a lane from compiling.
#include <signal.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "pipeline/wire/codec.h"
#include "pipeline/base/stop_signals.h"
#include "pipeline/base/file_bytes.h"
#include "worker/board/address.h"
#include "worker/runner/fleet_worker.h"
#include "worker/runner/frame_io.h"
#include "worker/runner/job_env.h"
#include "worker/runner/job_runner.h"
#include "worker/runner/preload.h"
#include "worker/runner/stdio_serve.h"
#include "worker/sim/demo_model.h"
#include "worker/sim/sim_backend.h"
#include "worker/toolchain/toolchain_backend.h"
#include "worker/toolchain/toolchain_probe.h"

using namespace torq;

namespace {

runner::FleetWorker* g_fleet = nullptr;
extern "C" void on_stop_signal(int) {
  if (g_fleet) g_fleet->request_stop();
}

std::string read_key_file(const std::string& path) {
  std::ifstream f(path);
  std::string key;
  if (!f || !(f >> key)) throw pipeline::PipelineError(path + ": cannot read a CURVE key");
  return key;
}

int run_fleet(runner::FleetWorkerOptions o, const std::string& executors, const std::string& key_prefix,
              const std::string& server_key_file) {
  try {
    o.executors = pipeline::parse_executor_list(executors);
    if (!server_key_file.empty() || !key_prefix.empty()) {
      if (server_key_file.empty() || key_prefix.empty())
        throw pipeline::PipelineError("CURVE needs both --server-key FILE and --key PREFIX");
      o.server_public_key = read_key_file(server_key_file);
      o.public_key = read_key_file(key_prefix + ".pub");
      o.secret_key = read_key_file(key_prefix + ".key");
    }
    runner::FleetWorker worker(std::move(o));
    g_fleet = &worker;
    base::install_stop_signals(on_stop_signal);
    const int rc = worker.run();
    g_fleet = nullptr;
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torq-worker: error: %s\n", e.what());
    return 2;
  }
}

struct BackendChoice {
  std::string kind = "sim";
  std::string toolchain_file;
  std::string board, ssh_key;       // board mode: [USER@]HOST[:PORT], key file
  double board_lock_timeout_s = 600;
  int compile_lanes = 0;            // board mode: BoardSettings::compile_lanes
  std::string board_host_keys = "accept-new";  // BoardOptions::host_key_policy
  std::string debug_ir_dir;                     // ToolchainConfig::debug_ir_dir
  std::string cache_dir, id;        // the board's control dir and lock owner
};

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// The backend a --stdio worker runs jobs with; throws for a bad toolchain
// file or board address.
std::unique_ptr<runner::Backend> make_backend(const BackendChoice& b, int threads) {
  if (b.kind == "toolchain") {
    std::optional<toolchain::BoardSettings> bs;
    if (!b.board.empty()) {
      bs.emplace();
      bs->address = board::parse_board(b.board);
      bs->address.key_file = b.ssh_key;
      bs->control_dir = toolchain::board_control_dir(b.cache_dir, bs->address);
      bs->owner = "torq-worker " + b.id + " pid " + std::to_string(getpid()) + " on " + host_name();
      bs->lock_timeout = std::chrono::milliseconds(static_cast<long long>(b.board_lock_timeout_s * 1000));
      bs->compile_lanes = b.compile_lanes;
      bs->options.host_key_policy = b.board_host_keys;
      const std::string who = b.id;
      bs->options.log = [who, addr = board::to_string(bs->address)](const std::string& line) {
        std::fprintf(stderr, "torq-worker %s: board %s: %s\n", who.c_str(), addr.c_str(), line.c_str());
      };
    }
    toolchain::ToolchainConfig cfg = toolchain::ToolchainConfig::load(b.toolchain_file);
    cfg.debug_ir_dir = b.debug_ir_dir;
    return std::make_unique<toolchain::ToolchainBackend>(std::move(cfg), std::move(bs));
  }
  return std::make_unique<sim::SimBackend>(threads);
}

// Validates the choice (the toolchain file) before serving anything: exit
// code 0, or 2 with the message on stderr. With probe (--check-backend),
// also runs each of the file's tools once (toolchain_probe.h; not the run
// step's with --board: it runs on the board) and refuses one that cannot run.
int check_backend(const BackendChoice& b, bool probe) {
  if (b.kind == "toolchain" && b.toolchain_file.empty()) {
    std::fprintf(stderr, "torq-worker: error: --backend toolchain needs --toolchain FILE.yaml\n");
    return 2;
  }
  if (b.kind != "toolchain" && !b.toolchain_file.empty()) {
    std::fprintf(stderr, "torq-worker: error: --toolchain is for --backend toolchain\n");
    return 2;
  }
  if (b.kind != "toolchain" && (!b.board.empty() || !b.ssh_key.empty())) {
    std::fprintf(stderr, "torq-worker: error: --board and --ssh-key are for --backend toolchain\n");
    return 2;
  }
  if (b.kind != "toolchain" && !b.debug_ir_dir.empty()) {
    std::fprintf(stderr, "torq-worker: error: --debug-ir-dir is for --backend toolchain (the compiler's IR dump)\n");
    return 2;
  }
  if (!b.ssh_key.empty() && access(b.ssh_key.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "torq-worker: error: --ssh-key %s: not a readable file\n", b.ssh_key.c_str());
    return 2;
  }
  try {
    make_backend(b, 1);
    if (!probe || b.kind != "toolchain") return 0;
    const toolchain::ToolchainConfig cfg = toolchain::ToolchainConfig::load(b.toolchain_file);
    std::string refused;
    for (const auto& p : toolchain::probe_tools(cfg, !b.board.empty())) {
      if (p.ok) std::printf("torq-worker: toolchain %s: %s\n", cfg.name.c_str(), toolchain::describe(p).c_str());
      else refused += (refused.empty() ? "" : "\n") + toolchain::describe(p);
    }
    if (!refused.empty())
      throw std::runtime_error("toolchain " + b.toolchain_file + ": a tool cannot run\n" + refused);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torq-worker: error: %s\n", e.what());
    return 2;
  }
  return 0;
}

// Every option of torq-worker, bound for the parse.
struct WorkerArgs {
  bool stdio = false;
  std::string cache_dir = ".torq-cache/models";
  std::string id = "local";
  int threads = 1, lanes = 1;
  runner::FleetWorkerOptions fo;
  std::string executors = "nss,css,host", key_prefix, server_key;
  std::string tags_csv;
  double health_interval_h = 24;
  BackendChoice backend;
  bool check_only = false;
  runner::PreloadOptions preload;
  std::string preload_rounding = "truncate";
};

// Adds --stdio / --connect and the options of every job process; returns --connect.
CLI::Option* add_mode_options(CLI::App& app, WorkerArgs& a) {
  auto* o_stdio = app.add_flag("--stdio", a.stdio, "Serve jobs on stdin/stdout (used by local pools)");
  auto* o_connect = app.add_option("--connect", a.fo.connect, "Serve a torq-coordinator at tcp://HOST:PORT");
  o_stdio->excludes(o_connect);
  app.add_option("--cache", a.cache_dir, "Directory of cached models (<sha256>.onnx)")->capture_default_str();
  app.add_option("--id", a.id, "Worker id reported in results (fleet default: <hostname>-<pid>)");
  app.add_option("--threads,-t", a.threads, "Threads per job")->capture_default_str();
  app.add_option("--lanes", a.lanes,
                 "Jobs one job process runs at once, on threads sharing its models, their reference runs and "
                 "compiled kernels (sim backend; fleet: --capacity jobs in ceil(capacity/lanes) processes)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  return o_connect;
}

// Adds the fleet worker's serving options: target, executors, capacity, prefetch, heartbeats, cache trust.
void add_fleet_options(CLI::App& app, WorkerArgs& a) {
  runner::FleetWorkerOptions& fo = a.fo;
  app.add_option("--target", fo.target, "Fleet: target this worker serves (sim, astra, a board name)")
      ->capture_default_str();
  app.add_option("--executors", a.executors, "Fleet: executors offered, comma-separated")->capture_default_str();
  app.add_option("--capacity", fo.capacity, "Fleet: jobs run in parallel")->capture_default_str()->check(
      CLI::Range(1, 4096));
  app.add_option("--prefetch", fo.prefetch,
                 "Fleet: jobs taken beyond --capacity, waiting in the job processes, so a lane never waits "
                 "for the coordinator between two short jobs (the worker tells the coordinator when each "
                 "starts; its timeout and its lease run from then)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  app.add_option("--heartbeat-ms", fo.heartbeat_ms, "Fleet: heartbeat interval")->capture_default_str()->check(
      CLI::Range(10, 60000));
  app.add_option("--liveness", fo.liveness,
                 "Fleet: heartbeat intervals the coordinator may be silent before this worker reconnects "
                 "(before it first answers: sends READY again)")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_flag("--verbose,-v", fo.verbose, "Fleet: log every finished job");
  app.add_flag("--trusted-cache", fo.trusted_cache,
               "Fleet: models in --cache are written whole by the coordinator that started this worker; use them "
               "without checking their SHA-256 (torq-gen-config's local workers)");
}

// Adds the fleet worker's device options (tags, health checks, maintenance), --bench-executor and CURVE.
void add_fleet_device_options(CLI::App& app, WorkerArgs& a, CLI::Option* o_connect) {
  runner::FleetWorkerOptions& fo = a.fo;
  app.add_option("--tags", a.tags_csv, "Fleet: device tags offered, comma-separated (e.g. sl2610,astra-machina)");
  app.add_flag("!--no-health-check", fo.health_checks,
               "Fleet: no device health check (the worker is Good from the start)");
  app.add_option("--health-interval-h", a.health_interval_h, "Fleet: hours between health checks")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--health-retry-s", fo.health_retry_s,
                 "Fleet: first retry of a failed health check (doubles, up to 1 h)")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  app.add_option("--maintenance-file", fo.maintenance_file,
                 "Fleet: while this file exists the device is in Maintenance and takes no jobs");
  app.add_option("--bench-executor", fo.bench_executor,
                 "Fleet, BENCHMARKING ONLY: answer jobs in this process without running the engine: "
                 "'noop' (success at once) or 'sleep:MS' (success after MS ms, standing in for a board; "
                 "--capacity jobs at once, prefetched ones wait); "
                 "results are not real measurements")
      ->needs(o_connect);
  app.add_option("--server-key", a.server_key, "Fleet/CURVE: file with the coordinator's public key (z85)");
  app.add_option("--key", a.key_prefix, "Fleet/CURVE: this worker's key pair PREFIX.pub / PREFIX.key");
}

// Adds --backend, --toolchain, --check-backend, the board options and --debug-ir-dir.
void add_backend_options(CLI::App& app, BackendChoice& backend, bool& check_only) {
  app.add_option("--backend", backend.kind, "What runs the executor: sim (the engine under the profiles) or "
                                            "toolchain (the Torq tools per --toolchain)")
      ->check(CLI::IsMember({"sim", "toolchain"}))->capture_default_str();
  app.add_option("--toolchain", backend.toolchain_file, "Toolchain file (configs/toolchains/*.yaml) for --backend toolchain");
  app.add_flag("--check-backend", check_only,
               "Validate --backend/--toolchain, run each tool once (--version/--help) and exit (0 ok, 2 bad)");
  app.add_option("--board", backend.board,
                 "With --backend toolchain: compile here, run on this board over ssh, [USER@]HOST[:PORT] "
                 "(--capacity lanes compile here at once; the board runs one module at a time under its lock)");
  app.add_option("--ssh-key", backend.ssh_key, "With --board: the ssh private key (default: ssh's own identities)");
  app.add_option("--board-lock-timeout-s", backend.board_lock_timeout_s,
                 "With --board: how long a job waits for the board lock (/tmp/torq_board_test.lock) before it is "
                 "given back as an infrastructure error")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--board-host-keys", backend.board_host_keys,
                 "With --board: accept-new records the board's host key on first contact and refuses a changed "
                 "one (an infrastructure error that says how to accept it); ignore checks none, as the real "
                 "tool's remote runner")
      ->check(CLI::IsMember({"accept-new", "ignore"}))->capture_default_str();
  app.add_option("--compile-lanes", backend.compile_lanes,
                 "With --board and --stdio (a fleet worker's job process): at most this many job processes "
                 "import and compile at once; a fleet worker passes its --capacity")
      ->check(CLI::Range(1, 4096));
  app.add_option("--debug-ir-dir", backend.debug_ir_dir,
                 "With --backend toolchain: every compile dumps its IR after each pass into DIR/<job> "
                 "(--mlir-print-ir-after-all --mlir-print-ir-tree-dir)");
}

// Adds --preload and the seed, rounding and bf16 conversion of its jobs.
void add_preload_options(CLI::App& app, runner::PreloadOptions& preload, std::string& preload_rounding) {
  app.add_option("--preload", preload.model,
                 "Import this ONNX model at start, as the coordinator does, so its first jobs find it loaded "
                 "with its reference begun (local workers of discover; fleet: passed to the job processes)");
  app.add_option("--preload-seed", preload.seed, "With --preload: the jobs' seed")->capture_default_str();
  app.add_option("--preload-rounding", preload_rounding, "With --preload: the jobs' bf16 rounding")
      ->check(CLI::IsMember({"truncate", "rne"}))->capture_default_str();
  app.add_flag("--preload-bf16", preload.convert_bf16, "With --preload: the import converts to bf16 (--auto-convert-bf16)");
}

// Completes the preload and backend choice from the parse: rounding, cache, id, an absolute --ssh-key.
void resolve_options(const CLI::App& app, WorkerArgs& a) {
  BackendChoice& backend = a.backend;
  a.preload.rne = a.preload_rounding == "rne";
  backend.cache_dir = a.cache_dir;
  backend.id = app.count("--id") ? a.id : (a.fo.connect.empty() ? a.id : host_name() + "-" + std::to_string(getpid()));
  if (!backend.ssh_key.empty())
    backend.ssh_key = std::filesystem::absolute(backend.ssh_key).lexically_normal().string();
}

// Makes the (checked) toolchain file and --debug-ir-dir absolute paths.
void absolute_backend_paths(BackendChoice& backend) {
  if (!backend.toolchain_file.empty())
    backend.toolchain_file = std::filesystem::absolute(backend.toolchain_file).lexically_normal().string();
  if (!backend.debug_ir_dir.empty())
    backend.debug_ir_dir = std::filesystem::absolute(backend.debug_ir_dir).lexically_normal().string();
}

// Exit code 2 with a message without --stdio or --connect, or with --lanes on the toolchain; else 0.
int check_mode(const WorkerArgs& a) {
  if (!a.stdio && a.fo.connect.empty()) {
    std::fprintf(stderr, "torq-worker: give --stdio or --connect tcp://HOST:PORT (see --help)\n");
    return 2;
  }
  if (a.lanes > 1 && a.backend.kind != "sim") {
    std::fprintf(stderr, "torq-worker: --lanes needs --backend sim (the toolchain's tools run one job at a time)\n");
    return 2;
  }
  return 0;
}

// A board worker's jobs beyond its compile lanes: one on the board, one
// ready for it (issue 32's farm bench: with the lanes alone, a lane waited
// for its board after each compile).
constexpr int kBoardQueue = 2;

// The fleet worker's toolchain backend: its job processes' arguments, identity and health-check timeout.
void fleet_toolchain_backend(WorkerArgs& a) {
  runner::FleetWorkerOptions& fo = a.fo;
  const BackendChoice& backend = a.backend;
  fo.backend_args = {"--backend", backend.kind, "--toolchain", backend.toolchain_file};
  if (!backend.debug_ir_dir.empty()) fo.backend_args.insert(fo.backend_args.end(), {"--debug-ir-dir", backend.debug_ir_dir});
  if (!backend.board.empty()) {
    // --capacity N: N lanes import and compile here at once; the board runs
    // one module at a time, under the lanes' lock and the board lock
    // (worker/board/lane_lock.h). N + kBoardQueue job processes: while jobs
    // wait for the board or run on it, the N lanes go on compiling.
    fo.timeouts_check_device = true;  // a hang may be the board's: checked before it is the op's
    std::ostringstream lock_s;
    lock_s << backend.board_lock_timeout_s;
    fo.backend_args.insert(fo.backend_args.end(), {"--board", backend.board, "--board-lock-timeout-s", lock_s.str(),
                                                   "--board-host-keys", backend.board_host_keys});
    if (!backend.ssh_key.empty()) fo.backend_args.insert(fo.backend_args.end(), {"--ssh-key", backend.ssh_key});
    fo.backend_args.insert(fo.backend_args.end(), {"--compile-lanes", std::to_string(fo.capacity)});
    fo.capacity += kBoardQueue;
  }
  fo.toolchain = make_backend(backend, a.threads)->identity();
  fo.health_timeout_ms = toolchain::ToolchainConfig::load(backend.toolchain_file).job_budget_ms(1);
}

// --connect: completes the fleet options and serves the coordinator until stopped.
int serve_as_fleet_worker(const CLI::App& app, WorkerArgs& a) {
  runner::FleetWorkerOptions& fo = a.fo;
  const std::string& tags_csv = a.tags_csv;
  fo.cache_dir = a.cache_dir;
  fo.lanes = a.lanes;
  fo.threads_per_job = a.threads;
  if (app.count("--id")) fo.worker_id = a.id;
  fo.health_interval_s = static_cast<int>(a.health_interval_h * 3600);
  if (fo.health_checks) fo.health_model = sim::build_demo_model();
  for (size_t at = 0; at < tags_csv.size();) {
    size_t end = tags_csv.find(',', at);
    if (end == std::string::npos) end = tags_csv.size();
    if (end > at) fo.tags.push_back(tags_csv.substr(at, end - at));
    at = end + 1;
  }
  if (a.backend.kind != "sim") fleet_toolchain_backend(a);
  for (auto& arg : runner::preload_args(a.preload)) fo.backend_args.push_back(arg);
  return run_fleet(std::move(fo), a.executors, a.key_prefix, a.server_key);
}

// --stdio: serves the parent pool's jobs on stdin/stdout, then exits with serve_stdio's code.
[[noreturn]] void serve_stdio_jobs(WorkerArgs& a) {
  const std::string& cache_dir = a.cache_dir;
  auto fetch = [&](const std::string& hash) {
    if (hash.find('/') != std::string::npos || hash.find("..") != std::string::npos)
      throw pipeline::PipelineError("bad model hash '" + hash + "'");
    std::optional<std::string> bytes = base::read_file_bytes(cache_dir + "/" + hash + ".onnx");
    if (!bytes) throw pipeline::PipelineError("model " + hash + " not in cache " + cache_dir);
    return std::move(*bytes);
  };
  // A job process dies with its pool's process (kill -9 of a worker
  // included): a hung job must not outlive the worker that was waiting
  // for it. Before the first job a dead parent shows as EOF on stdin.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // A layer job allocates and frees its sub-model, inputs and outputs
  // (up to megabytes each); by default glibc maps every such block afresh
  // and trims the heap after it, so each job page-faults its memory in
  // again (a quarter of a discover's job time). Blocks up to 64 MB come from
  // the heap and freed memory stays for the next job instead: the process
  // holds its peak, which it reaches again at the next job anyway. (Its
  // lanes share that heap, on huge pages, when started by a LocalPool:
  // job_env.h.)
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  runner::JobRunner runner(fetch, a.id, make_backend(a.backend, a.threads), a.threads);
  runner::start_preload(runner, a.preload);
  runner::StdioServeOptions so;
  so.id = a.id;
  so.lanes = a.lanes;
  runner::faults_from_env(&so);
  const int rc = runner::serve_stdio(runner, so);
  // Every result is written (unbuffered) and nothing else is owed: leave
  // without freeing the models (hundreds of MB of activations, tens of ms).
  std::fflush(nullptr);
  _exit(rc);
}

}  // namespace

int main(int argc, char** argv) {
  runner::restore_caller_tunables();  // a pool's job process: its tools start as its caller would
  CLI::App app{"torq-worker: runs executor-discovery jobs (sim or toolchain backend)"};
  WorkerArgs a;
  CLI::Option* o_connect = add_mode_options(app, a);
  add_fleet_options(app, a);
  add_fleet_device_options(app, a, o_connect);
  add_backend_options(app, a.backend, a.check_only);
  add_preload_options(app, a.preload, a.preload_rounding);
  CLI11_PARSE(app, argc, argv);
  resolve_options(app, a);
  if (const int rc = check_backend(a.backend, a.check_only); rc != 0 || a.check_only) return rc;
  absolute_backend_paths(a.backend);
  if (const int rc = check_mode(a)) return rc;
  if (!a.fo.connect.empty()) return serve_as_fleet_worker(app, a);
  serve_stdio_jobs(a);
}
