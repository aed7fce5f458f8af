// Planning a discovery: which (layer, executor) jobs to run, in what order,
// deduplicated by layer signature, and the content keys of the cache
// (DESIGN §3, §4). Pure logic over the ONNX graph: no tensors, no I/O.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/wire/codec.h"
#include "pipeline/model/layer_nodes.h"
#include "pipeline/core/types.h"

namespace onnx {
class ModelProto;
}

namespace torq::pipeline {

enum class DedupMode { kOff, kSignature, kExact };

// Signature of layer `index`: op type, attributes, input/output dtypes and
// shapes, initializer dtypes and shapes (values of small ones) of each of
// its nodes; kExact adds a hash of initializer values.
std::string layer_signature(const onnx::ModelProto& model, const std::vector<LayerNodes>& layers, int index,
                            DedupMode mode);
// layer_signature of every layer, in order, reading the graph's types and
// initializers once (not once per layer).
std::vector<std::string> layer_signatures(const onnx::ModelProto& model, const std::vector<LayerNodes>& layers,
                                          DedupMode mode);

struct PlanOptions {
  std::vector<Executor> executors{Executor::kNss, Executor::kCss, Executor::kHost};  // priority order
  bool skip_mode = false;          // stop at the first success per layer
  std::string filter;              // -k: substring of "<layer id>_<executor>" or of the seed's
                                   // case name "<case_prefix>_layer_<OpType>_<index>_<executor>"
  std::string case_prefix;         // the model name in seed case names
  DedupMode dedup = DedupMode::kOff;
  JobSpec job_template;            // tolerance, timing, inputs, timeout...
  // Per-executor job target replacing job_template.target (a sim profile
  // set: that executor's profile file).
  std::map<Executor, std::string> executor_targets;
};

// Tracks which jobs a discovery still needs. Jobs for a layer are issued in
// priority order; in skip mode the next executor is issued only after the
// previous one did not succeed.
class Planner {
 public:
  Planner(const std::string& model_hash, const std::vector<LayerInfo>& layers,
          const std::vector<std::string>& signatures, PlanOptions opts,
          const std::map<int, Tolerance>& layer_tolerances);

  // Marks a layer as needing no job at all (already known, e.g. skip mode
  // with a successful recorded result).
  void skip_layer(int layer);
  // Next job to run, or nullopt if none is ready now.
  std::optional<JobSpec> next();
  // Records a finished job; may make the layer's next executor ready.
  void finished(const JobSpec& job, const ExecResult& r);

  // True once every layer has all the results it needs: nothing left to
  // issue and every issued job finished.
  bool all_done() const;
  // Layer index -> source layer index for deduplicated layers.
  const std::map<int, int>& dedup_of() const { return dedup_of_; }
  size_t jobs_total_estimate() const { return estimate_; }
  size_t jobs_saved_by_dedup() const { return saved_; }
  // "<first 16 hex of the model hash>[-<result key suffix>]/<layer>/<executor>".
  static std::string job_id(const std::string& result_key, int layer, Executor e);

 private:
  struct LayerState {
    std::vector<Executor> pending;  // in priority order
    bool in_flight = false;
    bool done = false;
  };
  // Whether next() could issue a job of this layer now.
  bool ready(const LayerState& st) const {
    return !st.done && !st.pending.empty() && !(opts_.skip_mode && st.in_flight);
  }
  std::string hash_;
  std::vector<LayerInfo> layers_;
  PlanOptions opts_;
  std::map<int, Tolerance> tolerances_;
  std::vector<LayerState> state_;
  std::map<int, int> dedup_of_;
  // The job of layer i, its executor the first pending (which it takes off).
  JobSpec issue(size_t i);
  size_t cursor_ = 0;
  size_t ready_ = 0;  // layers for which ready() holds: next() scans only when some are
  // Skip mode: layers whose executor failed and whose next one waits. They
  // go first, lowest layer first, while their inputs are recent: the
  // cursor would reach them only on its next sweep from layer 0, and a job
  // process keeps reference values for layers only a window behind its
  // newest job (worker/runner/reference_release.h).
  std::set<size_t> followups_;
  size_t estimate_ = 0, saved_ = 0;
  size_t issued_ = 0, finished_ = 0;  // jobs handed out by next() / reported to finished()
};

// A range job (subgraph / assigned run): layers [first, last] of
// `model_hash`, layer i on assignment[i - first] (nullopt: the compiler
// decides), each executor's target from `executor_targets`, its result
// stored under `result_key` (layer 0, executor host naming the result).
// Its id is Planner::job_id(result_key, 0, host); identical ranges with
// identical assignments have identical cache keys (computed once, cached).
JobSpec range_job(const JobSpec& job_template, const std::string& model_hash, uint32_t first, uint32_t last,
                  const std::vector<std::optional<Executor>>& assignment,
                  const std::map<Executor, std::string>& executor_targets, const std::string& result_key);

// Content key of a job's result in the cache: everything the result
// depends on (model bytes hash, node range, executor, profile content,
// tolerance, inputs, timing runs, rounding, engine identity; for an assigned
// full-model run also the assignment and the executors' targets, with
// `profile_digest` covering every executor's profile).
std::string cache_key(const JobSpec& job, const std::string& profile_digest, const std::string& engine_identity);

}  // namespace torq::pipeline
