// A local job process's preload (torq-worker --stdio --preload FILE): the
// model a discover is about to test, imported in the job process while the
// coordinator imports it too, so the first layer job finds the model, its
// reference run started and the first kernels compiled, instead of loading
// them after the coordinator is done. The import is the coordinator's
// (ImportedModel::from_file with the same options), so the content hash is
// the same and the job's model is recognised; with another hash (the file
// changed in between) jobs load the cached model as usual.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "worker/runner/job_runner.h"

namespace torq::runner {

struct PreloadOptions {
  std::string model;          // ONNX file; empty: no preload
  bool convert_bf16 = false;  // the import's --auto-convert-bf16
  bool rne = false;           // rounding: of that conversion and of the jobs (bf16_rne)
  uint64_t seed = 0;          // the jobs' seed (of the reference run's inputs)
};

// torq-worker arguments that ask a job process for this preload.
std::vector<std::string> preload_args(const PreloadOptions& o);

// Starts the preload on a thread of its own (detached); jobs that load a
// model wait for it. A failure is written to stderr and jobs then load
// their models as usual.
void start_preload(JobRunner& runner, const PreloadOptions& o);

}  // namespace torq::runner
