#include "worker/runner/preload.h"

#include <cstdio>
#include <thread>

#include <onnx/onnx_pb.h>

#include "pipeline/model/model_import.h"

namespace torq::runner {

std::vector<std::string> preload_args(const PreloadOptions& o) {
  if (o.model.empty()) return {};
  std::vector<std::string> a{"--preload", o.model, "--preload-seed", std::to_string(o.seed), "--preload-rounding",
                             o.rne ? "rne" : "truncate"};
  if (o.convert_bf16) a.push_back("--preload-bf16");
  return a;
}

void start_preload(JobRunner& runner, const PreloadOptions& o) {
  if (o.model.empty()) return;
  runner.expect_preload();
  std::thread([&runner, o] {
    try {
      pipeline::ImportOptions io;
      io.convert_bf16 = o.convert_bf16;
      io.rounding = o.rne ? engine::Rounding::kNearestEven : engine::Rounding::kTruncate;
      // The coordinator checks the model; preload() hashes it in parallel.
      io.check = false;
      io.hash = false;
      std::unique_ptr<onnx::ModelProto> proto = pipeline::ImportedModel::from_file(o.model, io)->take_proto();
      runner.preload(std::move(proto), o.seed, o.rne);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "torq-worker: preload of %s failed (%s); jobs load their models from the cache\n",
                   o.model.c_str(), e.what());
      runner.preload_failed();
    }
  }).detach();
}

}  // namespace torq::runner
