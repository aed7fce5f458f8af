// The worker-side job runner: for one job, materialise the layer's
// sub-model with its real (or random) inputs, compute the fp32 host
// reference with the engine, ask the Backend to run the sub-model on the
// job's executor, and compare (DESIGN §3). It knows jobs and tensors, no
// sockets or processes, and no backend's details (worker/runner/backend.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/wire/codec.h"
#include "pipeline/core/types.h"
#include "worker/engine/tensor.h"
#include "worker/runner/backend.h"

namespace torq::engine {
class Tensor;
}
namespace onnx {
class ModelProto;
}

namespace torq::runner {

class JobRunner {
 public:
  // Returns the model bytes for a content hash, or throws (e.g. not cached).
  using FetchModel = std::function<std::string(const std::string& hash)>;

  // `backend` runs the sub-models (required); `threads` is for the
  // reference engine.
  JobRunner(FetchModel fetch, std::string worker_id, std::unique_ptr<Backend> backend, int threads = 1);
  ~JobRunner();
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // Runs the job. Never throws: every failure is an `error` result with a
  // class (the backend's: unsupported, import, compile, runtime, crash,
  // timeout, target; or the runner's: reference, fetch) and a message. A job
  // with an assignment is an assigned full-model run: every layer in order
  // on its assigned executor (or, where the compiler decides, the first
  // executor in priority order the backend accepts), fed the outputs the
  // layers before it produced there, and the graph outputs compared with
  // the fp32 host reference; an error names the layer that failed.
  //
  // Thread-safe with the sim backend: jobs running at once in one process
  // share each model's reference run (worker --lanes).
  pipeline::ExecResult run(const pipeline::JobSpec& job);

  // What a layer job [first_node, last_node] hands its backend, without
  // running any executor: the sub-model (graph inputs = feeds, in order;
  // graph outputs = outs), its inputs, and the fp32 host reference of its
  // outputs. Throws PipelineError when the model, inputs or reference
  // cannot be had (repro bundles, issue 28).
  struct LayerCase {
    std::unique_ptr<onnx::ModelProto> model;
    std::vector<engine::Tensor> feeds, expected;
    std::vector<std::string> outs;
  };
  LayerCase layer_case(const pipeline::JobSpec& job);

  // Preloading, for a process started before its first job (a local
  // worker starts while the coordinator imports the model): after
  // expect_preload(), a job that loads a model waits until preload() has
  // set up `proto` (imported as the coordinator does) or preload_failed()
  // says none comes. preload() sets it up with the reference of a job with
  // `seed` and `bf16_rne` while it hashes it (the hash names it, as the
  // coordinator's jobs do), then runs the first nodes of that reference, so
  // the first jobs find them done. A job for another model, seed or
  // rounding loads as usual (from FetchModel). Throws PipelineError when
  // the proto cannot be hashed (jobs are then still waiting: call
  // preload_failed()).
  void expect_preload();
  void preload(std::unique_ptr<onnx::ModelProto> proto, uint64_t seed, bool bf16_rne);
  void preload_failed();

 private:
  struct ModelState;
  struct SubModel;
  struct Loading {  // a model being loaded once for every job that wants it
    std::once_flag once;
    std::shared_ptr<ModelState> state;
    std::string error;
  };
  std::shared_ptr<ModelState> model(const pipeline::JobSpec& job);
  std::shared_ptr<ModelState> load_model(const pipeline::JobSpec& job);
  // Its layers and its reference run (started lazily) on a seeded input.
  void set_up(ModelState& ms, uint64_t seed, bool bf16_rne);
  std::vector<engine::Tensor> full_run_outputs(ModelState& ms, const pipeline::JobSpec& job,
                                               const std::vector<std::string>& outs);
  // The sub-model of layers [first, last] and its feeds: activations of the
  // reference run, or with `assigned` the values an assigned run computed
  // (constants are baked in either way). False with out->error when an
  // input has no value.
  bool materialise(ModelState& ms, const pipeline::JobSpec& job, uint32_t first, uint32_t last,
                   const std::map<std::string, engine::Tensor>* assigned, SubModel* out);
  std::map<std::string, engine::Tensor> range_inputs(ModelState& ms, uint32_t first, uint32_t last) const;
  std::optional<engine::Tensor> input_value(ModelState& ms, const pipeline::JobSpec& job, const std::string& in,
                                           uint32_t layer, uint64_t input_no, std::string* error);
  // The backend's run of `sm` on executor e, for `job` (its target for e,
  // rounding, timeout; `runs` timing runs).
  BackendResult run_on(const pipeline::JobSpec& job, pipeline::Executor e, const SubModel& sm, uint32_t runs);
  // With job.original_hash, an assigned run of the whole model: the fp32
  // original it was converted from, run by the fp32 host reference on this
  // run's input (`values`: the graph inputs, cast to the original's input
  // types), its graph outputs compared with the run's (`values`, by the
  // model's graph output names). A comparison that cannot be made says why
  // in its `error`; an original that cannot be fetched throws (the job's
  // fetch error: infrastructure, not the model's result).
  pipeline::ExecResult::EndToEnd end_to_end(const pipeline::JobSpec& job, ModelState& ms,
                                            const std::map<std::string, engine::Tensor>& values);
  pipeline::ExecResult run_assigned_whole(const pipeline::JobSpec& job, ModelState& ms, pipeline::ExecResult r,
                                          std::chrono::steady_clock::time_point t0,
                                          const std::map<std::string, engine::Tensor>& assigned);
  // A layer (or range) job: the sub-model of [first_node, last_node] on the
  // reference's values, its fp32 host reference and the job's executor,
  // compared. `r` carries the job's result header; t0 is when it started.
  pipeline::ExecResult run_layers(const pipeline::JobSpec& job, ModelState& ms, pipeline::ExecResult r,
                                  std::chrono::steady_clock::time_point t0);
  // An assigned run of [first_node, last_node]: starts from the reference
  // values entering the range, runs each layer where assigned (or where the
  // compiler decides), compares the range's outputs with the reference.
  // `r` carries the job's result header; t0 is when the job started.
  pipeline::ExecResult run_assigned(const pipeline::JobSpec& job, ModelState& ms, pipeline::ExecResult r,
                                    std::chrono::steady_clock::time_point t0);

  FetchModel fetch_;
  std::string worker_id_;
  std::unique_ptr<Backend> backend_;
  int threads_;
  std::mutex models_mu_;
  std::map<std::string, std::shared_ptr<Loading>> models_;  // by hash + activation key
  std::mutex preload_mu_;
  std::condition_variable preload_cv_;
  bool preload_pending_ = false;
  struct Preloaded {
    std::shared_ptr<ModelState> state;
    uint64_t seed = 0;
    bool bf16_rne = false;
  };
  std::map<std::string, Preloaded> preloaded_;  // by hash, until a load takes it
};

// The engine's identity, "torq-sim-<digest of the executor sources and
// libraries it was built from> (oneDNN X.Y.Z, the library it runs on)": the
// reference's and the sim backend's, in every result. (engine_identity.cc)
std::string toolchain_identity();

}  // namespace torq::runner
