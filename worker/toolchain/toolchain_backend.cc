#include "worker/toolchain/toolchain_backend.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>

#include <onnx/onnx_pb.h>

#include <nlohmann/json.hpp>

#include "pipeline/model/mlir.h"
#include "worker/runner/job_runner.h"

#include "pipeline/wire/fleet_codec.h"
#include "worker/board/lane_lock.h"
#include "worker/board/remote_script.h"

#include "worker/toolchain/raw_tensor.h"
#include "worker/toolchain/subprocess.h"

namespace torq::toolchain {

namespace fs = std::filesystem;
using runner::BackendRequest;
using runner::BackendResult;
using Clock = std::chrono::steady_clock;

struct ToolchainBackend::Job {
  const BackendRequest* req;
  std::string dir;
  TemplateValues values;
  std::vector<TensorType> out_types;
  std::vector<std::string> env;  // NAME=VALUE for every step
  Clock::time_point deadline;
  dev_t dir_dev = 0;  // the scratch folder as made: a folder at that path
  ino_t dir_ino = 0;  // that is not this one is not the job's
  // True, with r the infrastructure error, when the scratch folder is gone.
  bool vanished(const std::string& during, BackendResult* r) const;
};

namespace {

BackendResult& fail(BackendResult& r, const std::string& cls, const std::string& msg) {
  r.ok = false;
  r.error_class = cls;
  r.error_message = msg;
  return r;
}

// True when the job's scratch folder is gone (or another folder took its
// path): removed under the job by another process, a /tmp cleaner say.
// Then r is the infrastructure error (toolchain_backend.h): requeued, never
// the op's result.
bool work_dir_vanished(const std::string& dir, dev_t dev, ino_t ino, const std::string& during, BackendResult* r) {
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == dev && st.st_ino == ino) return false;
  fail(*r, pipeline::kInfrastructureClass,
       "the job's work dir " + dir + " vanished during " + during +
           ": removed by another process (a /tmp cleaner?); not the op's result, the job is requeued");
  return true;
}

// The declared type of each graph output of the sub-model.
bool output_types(const onnx::ModelProto& m, std::vector<TensorType>* out, std::string* why) {
  for (const auto& o : m.graph().output()) {
    TensorType t;
    const auto& tt = o.type().tensor_type();
    t.dtype = engine::dtype_from_onnx(tt.elem_type());
    bool known = t.dtype != engine::DType::kUndefined && tt.has_shape();
    for (const auto& d : tt.shape().dim()) {
      known = known && d.has_dim_value();
      t.shape.push_back(d.dim_value());
    }
    if (!known) {
      *why = "output '" + o.name() + "' has no static type and shape: the tools cannot be given one";
      return false;
    }
    out->push_back(t);
  }
  return true;
}

// The tool a step's argv runs, as messages name it: its file name, with a
// torq-sim persona's name.
std::string tool_of(const std::vector<std::string>& argv) {
  std::string tool = fs::path(argv[0]).filename().string();
  if (argv.size() > 1 && argv[1].rfind("torq-", 0) == 0) tool += " " + argv[1];  // a persona of torq-sim
  return tool;
}

// Removes the job's scratch folder unless asked to keep it.
struct Scratch {
  std::string dir;
  bool keep = false;
  ~Scratch() {
    std::error_code ec;
    if (!dir.empty() && !keep) fs::remove_all(dir, ec);
  }
};

}  // namespace

bool ToolchainBackend::Job::vanished(const std::string& during, BackendResult* r) const {
  return work_dir_vanished(dir, dir_dev, dir_ino, during, r);
}

std::string board_control_dir(const std::string& cache_dir, const board::BoardAddress& a) {
  std::string key = a.host + "-" + std::to_string(a.port);
  for (char& c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  std::error_code ec;
  const std::string beside = fs::absolute(cache_dir, ec).lexically_normal().string() + "/ssh-" + key;
  // SshBoard adds "/mux-<pid>-<n>" and ssh ".<16 chars>" to a 107-byte sun_path.
  if (!ec && beside.size() <= 64) return beside;
  return "/tmp/torq-ssh-" + std::to_string(geteuid()) + "/" + key;
}

ToolchainBackend::ToolchainBackend(ToolchainConfig config, std::optional<BoardSettings> board)
    : cfg_(std::move(config)), board_settings_(std::move(board)) {
  if (board_settings_) {  // throws std::invalid_argument for a bad address or control dir
    // Every board section runs under the lanes' lock (run_on_board).
    board_settings_->options.lanes_lock = board::lanes_lock_path(board_settings_->control_dir);
    board_ = std::make_unique<board::SshBoard>(board_settings_->address, board_settings_->control_dir,
                                               board_settings_->owner, board_settings_->options);
  }
}

ToolchainBackend::~ToolchainBackend() = default;  // the board: lock released, master stopped

std::string ToolchainBackend::identity() const {
  std::string id = "toolchain " + cfg_.name + " (" + cfg_.path + "; chip " + cfg_.chip + ", hw " + cfg_.hw_type + ")";
  if (board_settings_) id += " on board " + board::to_string(board_settings_->address);
  // Its results are judged against this worker's engine (the reference run):
  // the coordinator caches them only when that engine is its own.
  return id + " [engine " + runner::toolchain_identity() + "]";
}

bool ToolchainBackend::run_on_board(const Job& job, const Step& run_step, bool profile, uint32_t runs,
                                    BackendResult* r, double* total_ms) {
  const BoardSettings& bs = *board_settings_;
  // /tmp/torq-board-XXXXXX: never the local scratch folder's own name, even
  // when the board is this machine.
  std::string stem = fs::path(job.dir).filename().string();
  if (stem.rfind("torq-job-", 0) == 0) stem = "torq-board-" + stem.substr(9);
  else stem = "torq-board-" + stem;
  const std::string remote = bs.remote_base + "/" + stem;
  // The run step's values with the board's paths.
  TemplateValues v = job.values;
  v.scalars["vmfb"] = remote + "/" + fs::path(job.values.scalars.at("vmfb")).filename().string();
  v.scalars["workdir"] = remote;
  std::vector<std::string> staged = {job.values.scalars.at("vmfb")}, pulled;
  for (auto& t : v.inputs) {
    staged.push_back(t.file);
    t.file = remote + "/" + fs::path(t.file).filename().string();
  }
  for (auto& t : v.outputs) {
    t.file = remote + "/" + fs::path(t.file).filename().string();
    pulled.push_back(t.file);
  }
  if (profile) pulled.push_back(remote + "/host_profile.csv");  // --torq_profile_host={workdir}/...
  std::vector<std::string> argv;
  try {
    argv = expand_argv(run_step.argv, v);
  } catch (const std::exception& e) {
    fail(*r, "runtime", std::string("run step: ") + e.what());
    return false;
  }
  auto left_ms = [&] {
    return std::max<long long>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(job.deadline - Clock::now()).count());
  };
  board::SshBoard& b = *board_;
  // Held from before the board lock until after it is released, in the
  // catch blocks too: a sibling lane never finds the board locked by a lane
  // that failed midway.
  std::optional<board::LaneLock> lane;
  // After a failure: the board lock, if this lane still holds it, goes back
  // (best effort: a lost connection cannot release it; this process's next
  // job does, as above).
  auto release = [&b] {
    try {
      if (b.locked()) b.unlock();
    } catch (const std::exception&) {
    }
  };
  try {
    if (!b.is_open()) b.open();
    // A lock this process still holds from a job whose connection was cut
    // (its token is ours): release it before taking it again.
    if (b.locked()) b.unlock();
    // The wait for the lock must end before the job's own deadline, so that
    // a busy board is an infrastructure error (requeued), not a timeout.
    // Round trips per job: lock + mkdir, scp up, the run, scp down,
    // cleanup + unlock.
    // Under the lock no other job runs on the board: the torq-board-*
    // folders there are interrupted jobs' (a killed worker, a timeout that
    // killed the job process), swept with their process groups unless the
    // file keeps work folders for debugging.
    // The worker's other lanes (its job processes) wait here, not in the
    // remote lock's 250 ms polls.
    try {
      lane.emplace(bs.control_dir,
                   std::min<std::chrono::milliseconds>(bs.lock_timeout, std::chrono::milliseconds(left_ms() / 2)));
    } catch (const board::InfraError& e) {
      if (e.kind() != board::InfraKind::lock_timeout) throw;
      // This worker's other lanes kept the board: neither the board's fault
      // nor the op's, and the job never reached the board. Given back
      // declined: requeued, not an attempt, the board's health untouched
      // (as an infrastructure error it made the board Unknown, issue 32).
      release();
      fail(*r, pipeline::kDeclinedClass, e.what());
      return false;
    }
    b.lock(std::min<std::chrono::milliseconds>(bs.lock_timeout, std::chrono::milliseconds(left_ms() / 2)), remote,
           cfg_.keep_work_dir ? std::string() : bs.remote_base + "/torq-board-");
    b.stage(staged, remote);
    for (uint32_t k = 0; k < runs; ++k) {
      const long long limit = std::min<long long>(static_cast<long long>(cfg_.run_step.timeout_s * 1000), left_ms());
      board::RunResult rr = b.run(argv, remote, static_cast<int>(limit));
      std::string tool = fs::path(argv[0]).filename().string();
      if (argv.size() > 1 && argv[1].rfind("torq-", 0) == 0) tool += " " + argv[1];  // a persona of torq-sim
      const std::string where = "run step (" + tool + ") on board " + board::to_string(bs.address);
      if (rr.timed_out) {
        fail(*r, "timeout", where + " timed out after " + std::to_string(limit / 1000.0).substr(0, 6) +
                                " s; the remote process group was killed");
      } else if (rr.exit_code != 0) {
        const std::string diag = diagnostic_excerpt(rr.err.empty() ? rr.out : rr.err);
        // bash reports a child killed by signal N as 128+N.
        std::string what = rr.exit_code > 128 && rr.exit_code < 128 + 65
                               ? where + " killed by " + signal_name(rr.exit_code - 128)
                               : where + " exited with status " + std::to_string(rr.exit_code);
        fail(*r, rr.exit_code > 128 && rr.exit_code < 128 + 65 ? "crash" : "runtime",
             diag.empty() ? what : what + ": " + diag);
      } else {
        *total_ms += rr.wall_s * 1000.0;
        continue;
      }
      break;
    }
    if (r->error_class.empty()) b.pull(pulled, job.dir);
    b.unlock(cfg_.keep_work_dir ? std::string() : remote);
  } catch (const board::InfraError& e) {
    // Never the op's error: the coordinator requeues the job and the
    // worker checks the board's health.
    release();
    fail(*r, "infrastructure", e.what());
    return false;
  } catch (const std::exception& e) {  // a local file the steps did not write (not the board's fault)
    release();
    if (!job.vanished("the run step on board " + board::to_string(bs.address), r))
      fail(*r, "runtime", std::string("run step on board ") + board::to_string(bs.address) + ": " + e.what());
    return false;
  }
  return r->error_class.empty();
}

bool ToolchainBackend::step(const Job& job, const Step& s, const std::string& which, BackendResult* r,
                            double* wall_ms, const std::string& writes) {
  std::vector<std::string> argv;
  try {
    argv = expand_argv(s.argv, job.values);
  } catch (const std::exception& e) {
    fail(*r, which == "run" ? "runtime" : which, which + " step: " + e.what());
    return false;
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(job.deadline - Clock::now()).count();
  const long long limit = std::min<long long>(static_cast<long long>(s.timeout_s * 1000), std::max<long long>(1, left));
  const std::string tool = tool_of(argv);
  ProcessResult p;
  try {
    p = run_process(argv, static_cast<int>(limit), job.dir, job.env);
  } catch (const std::exception& e) {
    if (!job.vanished("the " + which + " step (" + tool + ")", r))
      fail(*r, which == "run" ? "runtime" : which, which + " step: " + e.what());
    return false;
  }
  if (wall_ms) *wall_ms = p.wall_ms;
  // Whatever the tool said: a folder removed under it is no verdict on the op.
  if (job.vanished("the " + which + " step (" + tool + ")", r)) return false;
  if (p.ok()) {
    // Exit 0 is not enough: the step's product must be there (a compile
    // that wrote no module is the compile's failure, not the run's).
    if (writes.empty() || !job.values.scalars.count(writes)) return true;
    const std::string& path = job.values.scalars.at(writes);
    const long long size = file_size(path);
    if (size > 0) return true;
    fail(*r, which, tool + " exited 0 but wrote " + (size == 0 ? "an empty " : "no ") +
                        (writes == "vmfb" ? "module" : "MLIR") + " at " + path);
    return false;
  }
  std::string diag = diagnostic_excerpt(p.err.empty() ? p.out : p.err);
  std::string cls = which == "run" ? "runtime" : which, what;
  if (p.timed_out) {
    if (which == "run") cls = "timeout";
    what = which + " step (" + tool + ") timed out after " + std::to_string(limit / 1000.0).substr(0, 6) +
           " s; its process group was killed";
  } else if (p.term_signal) {
    if (which == "run") cls = "crash";
    what = which + " step (" + tool + ") killed by " + signal_name(p.term_signal);
  } else {
    what = which + " step (" + tool + ") exited with status " + std::to_string(p.exit_code);
  }
  fail(*r, cls, diag.empty() ? what : what + ": " + diag);
  return false;
}

namespace {

// The op_type of the node whose result graph output `name` is ("" for none).
std::string producer_of(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& n : m.graph().node())
    for (const auto& o : n.output())
      if (o == name) return n.op_type();
  return "";
}

}  // namespace

bool ToolchainBackend::read_outputs(const Job& job, BackendResult* r) {
  std::string tool = "run tool";
  try {
    tool = tool_of(expand_argv(cfg_.run_step.argv, job.values));
  } catch (const std::exception&) {
  }
  const std::string where = "run step (" + tool + ")";
  for (size_t i = 0; i < job.out_types.size(); ++i) {
    if (job.vanished("the " + where, r)) return false;
    const std::string file = job.values.outputs[i].file;
    const TensorType& t = job.out_types[i];
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const long long want = numel * static_cast<long long>(engine::dtype_size(t.dtype));
    // nss returns a bf16 MatMul/Gemm in f32 (configs/targets/nss.yaml,
    // widen_output): only such an output may come back at f32's size (an
    // assigned run's module narrows it, as the compiler does).
    const std::string op = producer_of(*job.req->model, job.req->model->graph().output(static_cast<int>(i)).name());
    const bool may_widen = t.dtype == engine::DType::kBF16 && job.req->executor == pipeline::Executor::kNss &&
                           !job.req->assigned_run && (op == "MatMul" || op == "Gemm");
    const long long widened = numel * 4;
    const long long have = file_size(file);
    const std::string which = "output " + std::to_string(i) + " (" + fs::path(file).filename().string() + ")";
    if (have < 0) {
      fail(*r, "runtime", where + " exited 0 but wrote no " + which + " at " + file);
      return false;
    }
    if (have != want && !(may_widen && have == widened)) {
      std::string expected = std::to_string(want) + " (" + iree_type(t.dtype, t.shape) + ")";
      if (may_widen)
        expected += " or " + std::to_string(widened) + " (" + iree_type(engine::DType::kF32, t.shape) +
                    ", nss widening a bf16 " + op + ")";
      fail(*r, "runtime", where + " wrote " + which + " of " + std::to_string(have) + " bytes, expected " + expected +
                              ": the tool's output does not match the sub-model's type, so it is not read");
      return false;
    }
    try {
      r->outputs.push_back(read_raw(file, have == want ? t.dtype : engine::DType::kF32, t.shape));
    } catch (const std::exception& e) {
      if (!job.vanished("the " + where, r)) fail(*r, "runtime", where + ": " + which + ": " + e.what());
      return false;
    }
  }
  return true;
}

namespace {

// A profile the tools wrote, or "" when they wrote none.
std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  if (f) ss << f.rdbuf();
  return ss.str();
}


}  // namespace

std::string ToolchainBackend::write_executor_map(const Job& job, std::string* why_not) const {
  // Keyed on the import this toolchain made: the i-th non-Constant node is
  // the i-th top-level torch.operator of that text (pipeline/model/mlir.h).
  const std::string mlir = read_text_file(job.values.scalars.at("mlir"));
  const onnx::ModelProto& model = *job.req->model;
  const pipeline::MlirMapping mm = pipeline::map_mlir_locations(mlir, pipeline::non_constant_op_types(model));
  nlohmann::ordered_json assignments = nlohmann::ordered_json::object();
  size_t k = 0;
  for (const auto& n : model.graph().node()) {
    if (n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx")) continue;
    const size_t index = k++;
    if (n.output_size() == 0) continue;
    auto a = job.req->assignment.find(n.output(0));
    if (a == job.req->assignment.end()) continue;
    if (index >= mm.locations.size() || mm.locations[index].empty()) {
      *why_not = "the import does not match the model, so the executor map cannot be keyed on it: " +
                 (mm.problems.empty() ? std::string("no location for node ") + std::to_string(index)
                                      : mm.problems[0]);
      return "";
    }
    assignments[mm.locations[index]] = {{"executor", pipeline::executor_name(a->second)}};
  }
  nlohmann::ordered_json j = {{"model_name", model.graph().name()}, {"op_assignments", assignments}};
  const std::string path = job.dir + "/model_compiler.json";
  std::ofstream f(path, std::ios::binary);
  f << j.dump(2) << "\n";
  if (!f) {
    *why_not = path + ": cannot write the executor map";
    return "";
  }
  return path;
}

BackendResult ToolchainBackend::run(const BackendRequest& req) {
  BackendResult r;
  r.chip = cfg_.chip;
  Job job;
  job.req = &req;
  job.deadline = Clock::now() + std::chrono::milliseconds(std::max<int64_t>(1000, int64_t{req.timeout_ms} - 500));
  std::string why;
  if (!output_types(*req.model, &job.out_types, &why)) return fail(r, "import", why);
  std::string base = cfg_.work_dir.empty() ? (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") : cfg_.work_dir;
  std::string templ = base + "/torq-job-XXXXXX";
  if (!mkdtemp(templ.data())) return fail(r, "runtime", "cannot create a scratch folder in " + base);
  Scratch scratch{templ, cfg_.keep_work_dir};
  job.dir = templ;
  struct stat made {};
  if (stat(job.dir.c_str(), &made) == 0) job.dir_dev = made.st_dev, job.dir_ino = made.st_ino;
  TemplateValues& v = job.values;
  v.scalars = {{"onnx", job.dir + "/model.onnx"}, {"mlir", job.dir + "/model.mlir"}, {"vmfb", job.dir + "/model.vmfb"},
               {"workdir", job.dir}, {"chip", cfg_.chip}, {"hw_type", cfg_.hw_type}, {"function", cfg_.function},
               {"executor", pipeline::executor_name(req.executor)}, {"torq_sim", torq_sim_path()},
               {"worker_dir", self_dir()}};
  job.env = {std::string("TORQ_FARM_BF16_ROUNDING=") + (req.bf16_rne ? "rne" : "truncate")};
  // The stand-in's simulated latencies (toolchain_config.h: stand_in_latency).
  for (const auto& [var, by_executor] : {std::pair{"TORQ_FARM_STANDIN_COMPILE_MS=", &cfg_.standin_compile_s},
                                         std::pair{"TORQ_FARM_STANDIN_RUN_MS=", &cfg_.standin_run_s}})
    if (auto it = by_executor->find(req.executor); it != by_executor->end())
      job.env.push_back(var + std::to_string(std::llround(it->second * 1000)));
  for (const auto& [name, path] : cfg_.tools) v.scalars[name] = path;
  v.lists["executor_flags"] = cfg_.executor_flags.count(req.executor) ? cfg_.executor_flags.at(req.executor)
                                                                      : std::vector<std::string>{};
  v.lists["compiler_options"] = cfg_.compiler_options;
  try {
    std::ofstream f(v.scalars["onnx"], std::ios::binary);
    if (!req.model->SerializeToOstream(&f)) throw std::runtime_error(v.scalars["onnx"] + ": cannot write");
    f.close();
    for (size_t i = 0; i < req.feeds->size(); ++i) {
      const engine::Tensor& t = (*req.feeds)[i];
      v.inputs.push_back({job.dir + "/in" + std::to_string(i) + ".bin", shape_text(t.shape()), iree_dtype_name(t.dtype())});
      write_raw(t, v.inputs.back().file);
    }
    for (size_t i = 0; i < job.out_types.size(); ++i)
      v.outputs.push_back({job.dir + "/out" + std::to_string(i) + ".bin", shape_text(job.out_types[i].shape),
                           iree_dtype_name(job.out_types[i].dtype)});
  } catch (const std::exception& e) {
    if (job.vanished("the job's staging", &r)) return r;
    return fail(r, "runtime", std::string("cannot stage the job: ") + e.what());
  }
  // --collect-profile: the tools' own profiling flags (DESIGN §5).
  // On a board {workdir} is the board's folder: the host profile is pulled back.
  Step compile = cfg_.compile_step, run_step = cfg_.run_step;
  if (!cfg_.debug_ir_dir.empty()) {
    std::string leaf = req.label.empty() ? fs::path(job.dir).filename().string() : req.label;
    for (char& ch : leaf)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_') ch = '_';
    compile.argv.insert(compile.argv.end(), {"--mlir-print-ir-after-all",
                                             "--mlir-print-ir-tree-dir=" + cfg_.debug_ir_dir + "/" + leaf,
                                             "--mlir-elide-elementsattrs-if-larger=50"});
  }
  if (req.collect_profile) {
    compile.argv.push_back("--torq-enable-profiling");
    compile.argv.push_back("--torq-dump-profiling={workdir}/device_trace.csv");
    run_step.argv.push_back("--torq_profile_host={workdir}/host_profile.csv");
  }
  // A board worker's lanes: this job compiles in one of them, then gives
  // it back while it waits for the board (toolchain_backend.h).
  std::optional<board::CompileSlot> slot;
  if (board_settings_ && board_settings_->compile_lanes > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(job.deadline - Clock::now());
    try {
      slot.emplace(board_settings_->control_dir, board_settings_->compile_lanes,
                   std::min<std::chrono::milliseconds>(board_settings_->lock_timeout, left / 2));
    } catch (const board::InfraError& e) {
      // Kept by this worker's own lanes: declined (requeued, not an attempt).
      return fail(r, e.kind() == board::InfraKind::lock_timeout ? pipeline::kDeclinedClass : "infrastructure",
                  e.what());
    }
  }
  // A step that exits 0 must have written what its argv names: the import
  // {mlir}, the compile {vmfb}.
  auto product = [](const Step& st, const std::string& name) {
    for (const auto& item : st.argv)
      if (item.find("{" + name + "}") != std::string::npos) return name;
    return std::string();
  };
  if (!step(job, cfg_.import_step, "import", &r, nullptr, product(cfg_.import_step, "mlir"))) return r;
  // The runner is given the import's own function, as the real tool reads it
  // from the import (a toolchain file's `function:` overrides).
  if (cfg_.function.empty()) {
    v.scalars["function"] = pipeline::mlir_text_function_name(read_text_file(v.scalars["mlir"]));
    if (v.scalars["function"].empty())
      return fail(r, "import", "import step wrote no func.func into " + v.scalars["mlir"]);
  }
  if (req.assigned_run) {
    std::string why_not;
    const std::string map = write_executor_map(job, &why_not);
    if (map.empty()) return fail(r, "import", why_not);
    // No --torq-disable-*: the compiler places what the map leaves, and
    // with --torq-disable-slices it would not read the map at all.
    v.lists["executor_flags"] = {"--torq-executor-map=" + map};
  }
  if (!step(job, compile, "compile", &r, nullptr, product(compile, "vmfb"))) return r;
  slot.reset();
  r.accepted = true;
  const uint32_t runs = std::max<uint32_t>(1, req.runs);
  double total_ms = 0;
  if (board_) {
    if (!run_on_board(job, run_step, req.collect_profile, runs, &r, &total_ms)) return r;
  }
  for (uint32_t k = 0; !board_ && k < runs; ++k) {
    double ms = 0;
    if (!step(job, run_step, "run", &r, &ms)) return r;
    total_ms += ms;
  }
  if (!read_outputs(job, &r)) return r;
  if (req.collect_profile) {
    r.device_csv = read_text_file(job.dir + "/device_trace.csv");
    r.host_csv = read_text_file(job.dir + "/host_profile.csv");
  }
  r.ok = true;
  r.runs = runs;
  r.runtime_ms = total_ms / runs;
  return r;
}

}  // namespace torq::toolchain
