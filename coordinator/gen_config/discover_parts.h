// The parts of `torq-gen-config discover` (discover.cc) that are not its
// sequence: its log, its options turned into a plan, local workers and a
// run id, the profile export and the MLIR locations of its report.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>
#include <string>

#include <onnx/onnx_pb.h>

#include "coordinator/gen_config/discover.h"
#include "coordinator/fleet/fmt.h"
#include "coordinator/fleet/local_fleet.h"
#include "pipeline/plan/plan.h"
#include "pipeline/report/report.h"
#include "pipeline/core/types.h"

namespace torq::coordinator {

// Lines to the output (unless quiet) and to --log-file; progress on a
// terminal's stderr, rewritten in place.
class DiscoverLog {
 public:
  DiscoverLog(std::ostream& out, const std::string& file, bool quiet) : out_(out), quiet_(quiet) {
    if (!file.empty()) {
      file_.open(file, std::ios::app);
      if (!file_) throw pipeline::PipelineError(file + ": cannot open log file");
    }
  }
  void line(const std::string& s) {
    progress_clear();
    if (!quiet_) out_ << s << "\n" << std::flush;
    if (file_) file_ << s << "\n" << std::flush;
  }
  void progress(const std::string& s) {
    if (tty_ && !quiet_) {
      std::fprintf(stderr, "\r%s\033[K", s.c_str());
      std::fflush(stderr);
      shown_ = true;
    }
  }
  void progress_clear() {
    if (shown_) {
      std::fprintf(stderr, "\r\033[K");
      shown_ = false;
    }
  }
  // Only to the log file (broker chatter).
  void file_line(const std::string& s) {
    if (file_) file_ << s << "\n" << std::flush;
  }
  bool tty() const { return tty_; }

 private:
  std::ostream& out_;
  std::ofstream file_;
  bool quiet_;
  bool tty_ = isatty(STDERR_FILENO) != 0;
  bool shown_ = false;
};

// Makes the output directory as pipeline::prepare_output_dir() does (its
// dead writers' temporary files swept) and checks it can be written;
// throws PipelineError with the real reason.
void check_writable_dir(const std::string& dir);
// --targets FILE: a YAML map from executor name to a profile file (relative
// paths are relative to FILE). Every profile is validated now, so a typo is
// an error with its location before any job runs.
std::map<pipeline::Executor, std::string> read_targets(const std::string& file, const targets::OpCatalog& ops);
// Every layer result's profiling CSVs, with its trace JSON and overview,
// as <dir>/<layer id>_<executor>.*; returns how many were written.
size_t export_layer_profiles(const pipeline::ModelReport& rep, const std::string& dir);

// The plan of a discover's unit from its options (case names start with
// `model_name`).
pipeline::PlanOptions discover_plan(const DiscoverOptions& o, const std::string& model_name);
// The run id: the model, the inputs, the rounding, each executor's profile
// (po.executor_targets or the built-in one) and a toolchain's target.
std::string discover_run_id(const DiscoverOptions& o, const std::string& model_hash, const pipeline::PlanOptions& po);
// The local workers of a discover (the sim backend's preload among their
// arguments), their model cache written by the coordinator (trusted).
LocalWorkersOptions discover_workers(const DiscoverOptions& o, const std::string& store_dir,
                                     const std::string& cache_dir, const std::string& endpoint);
// Each report layer's MLIR location: from the user's --mlir file, or from
// the torch-mlir form of `proto` written to <output_dir>/<name>.torch.mlir.
// Mapping problems are logged; an unreadable --mlir file throws
// PipelineError "<file>: cannot open MLIR file".
// The variant a discover (or run) makes results of: the model file's
// SHA-256, dtype and conversion, and what runs the executors.
pipeline::VariantRecord variant_of(const std::string& model_file, bool convert_bf16, engine::Rounding rounding,
                                   const std::string& quantization, const std::string& backend,
                                   const std::string& toolchain_file, const std::string& targets_file);

void add_mlir_locations(const DiscoverOptions& o, const std::string& name, const onnx::ModelProto& proto,
                        DiscoverLog& log, pipeline::ModelReport& rep);

}  // namespace torq::coordinator
