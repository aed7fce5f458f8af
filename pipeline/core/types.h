// Discovery pipeline: the in-memory vocabulary shared by every room —
// executors, statuses, tolerances, per-executor results, layer and model
// reports (DESIGN.md §4, §5). No I/O here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace torq::pipeline {

enum class Executor { kNss = 0, kCss = 1, kHost = 2 };
// Priority order of DESIGN §1: nss, css, host.
inline constexpr Executor kExecutorPriority[] = {Executor::kNss, Executor::kCss, Executor::kHost};
const char* executor_name(Executor e);              // "nss" | "css" | "host"
std::optional<Executor> executor_from_name(const std::string& name);
// Parses "nss,css" into executors; throws PipelineError naming a bad entry.
std::vector<Executor> parse_executor_list(const std::string& csv);

enum class Status { kSuccess = 0, kDifference = 1, kError = 2 };
const char* status_name(Status s);                  // "success" | "difference" | "error"
std::optional<Status> status_from_name(const std::string& name);

struct Tolerance {
  double fp_avg_tol = 0.01;
  double fp_max_tol = 0.01;
  double allowed_wrong = 0;  // fraction of elements allowed over fp_max_tol
  bool operator==(const Tolerance&) const = default;
};

struct OutputDiff {
  std::string name;
  double max_abs = 0, mean_abs = 0, rmse = 0, max_rel = 0, pcc = 0;
  int64_t over_tol = 0, size = 0, nan_mismatch = 0;
};

// One executor's result for one layer.
struct ExecResult {
  std::string job_id;
  Executor executor = Executor::kHost;
  Status status = Status::kError;
  std::string error_class;    // set when status == kError
  std::string error_message;
  std::vector<OutputDiff> outputs;
  double max_abs = 0, max_rel = 0, pcc = 0;
  Tolerance tolerance_used;
  double runtime_ms = -1;     // simulated/device time, mean over timing_runs; -1 unknown
  uint32_t timing_runs = 0;
  double host_ms = 0;         // wall time the job took on its worker
  std::string worker_id, toolchain;
  std::string chip;           // the chip the executor's profile models, if it names one
  // With collect_profile: per layer run, the compile-time trace CSV and the
  // runtime host profile CSV (DESIGN §5 columns).
  struct Profile {
    std::string device_csv, host_csv;
    bool operator==(const Profile&) const = default;
  };
  std::vector<Profile> profiles;
  uint32_t attempts = 1;
  bool cached = false;        // served from the content-addressed cache
  std::string dedup_of;       // layer id whose result this copies
  // An assigned run only: per layer of its range, the executor it ran on
  // and its simulated/device time (ms).
  std::vector<Executor> placed;
  std::vector<double> layer_ms;
  // An assigned run of a whole converted model (bf16, int8) only: its graph
  // outputs against the fp32 original's on the same input (issue 29).
  struct EndToEnd {
    std::string reference;            // what the outputs were compared with
    std::vector<OutputDiff> outputs;
    std::string error;                // why no comparison was made (outputs empty)
    double pcc() const;               // lowest over outputs; -1 with none
    double max_abs() const;           // worst over outputs; -1 with none
    double max_rel() const;
    bool operator==(const EndToEnd&) const;
  };
  std::optional<EndToEnd> e2e;
};

// Keys of a report file this tool does not know, in file order, each with
// its value as JSON text: kept so that rewriting a report never drops them.
using ExtraFields = std::vector<std::pair<std::string, std::string>>;

struct LayerInfo {
  int index = 0;              // _node_index: position among non-Constant nodes
  std::string id;             // <OpType>_<first output>
  std::string op_type;
  std::string mlir_location;  // "line:col" or empty
};

struct LayerReport {
  LayerInfo info;
  std::map<Executor, ExecResult> results;
  std::optional<Executor> recommended;
  // Set by `edit --executor E`: a user's decision that later discovers keep
  // (released by `edit --executor auto` or discover --recompute-cache).
  bool pinned = false;
  std::string dedup_of;
  // Set by `torq-gen-config edit --tolerance-*`: the tolerance the next
  // discover uses for this layer (overrides the model default).
  std::optional<Tolerance> tolerance;
  // A file's `mlir_location` that is not "line:col" (the seed tool's op-type
  // placeholder, e.g. "Conv"): no location for the compiler, written back
  // unchanged while info.mlir_location is empty.
  std::string mlir_placeholder;
  // Op-level keys of the report file this tool does not know (e.g. the
  // seed's `_orig_index`, `mac_count`), kept and written back as is.
  ExtraFields extra;
  // The same for each executor's result object (e.g. a `difference`'s
  // `failure_report`, which the seed tool wrote).
  std::map<Executor, ExtraFields> result_extra;
};

// What a report was made from (issue 29): one report, one variant. The
// real tool's reports have none (absent: accepted as they are).
struct VariantRecord {
  std::string model_sha256;  // of the model file as given (--model)
  std::string dtype;         // fp32 | bf16 | int8
  std::string rounding;      // bf16's conversion: truncate | rne
  std::string quantization;  // int8: how (e.g. "qdq, per-tensor, 16 calibration inputs")
  std::string executors;     // "sim" (+ a --targets digest) or the toolchain target
  bool operator==(const VariantRecord&) const = default;
};

// A model's discovery report (the source of truth, DESIGN §5).
struct ModelReport {
  std::string model_name;
  std::optional<VariantRecord> variant;
  Tolerance default_tolerance;
  std::vector<LayerReport> layers;  // by _node_index
  // Top-level keys this tool does not know (the seed's full-model
  // `tolerance`, `full_model`, `subgraph`, ...), kept and written back as is.
  ExtraFields extra;
};

// Thrown for bad user input to the pipeline (files, flags, reports):
// the message names the file and, where known, line and field.
class PipelineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace torq::pipeline
