// A job process's preload (worker/runner/preload.h) with real processes on
// the demo CNN: the model imported by the job process at start serves the
// jobs for its hash (they succeed with no model in the cache at all) with
// results byte-identical to jobs that load the cached model; a preload that
// fails, or imports another model, leaves jobs to the cache as before.
#include <gtest/gtest.h>

#include <deque>
#include <fstream>
#include <map>
#include <string>

#include "pipeline/wire/codec.h"
#include "pipeline/model/model_import.h"
#include "tests/integration/pool_run.h"
#include "tests/integration/proc.h"
#include "worker/runner/local_pool.h"
#include "worker/runner/preload.h"

using namespace torq;
using namespace torq::test;

namespace {

std::deque<pipeline::JobSpec> layer_jobs(const std::string& hash, int layers, bool rne) {
  std::deque<pipeline::JobSpec> jobs;
  for (int i = 0; i < layers; ++i)
    for (auto e : pipeline::kExecutorPriority) {
      pipeline::JobSpec j;
      j.id = hash.substr(0, 16) + "/" + std::to_string(i) + "/" + pipeline::executor_name(e);
      j.model_hash = hash;
      j.first_node = j.last_node = static_cast<uint32_t>(i);
      j.executor = e;
      j.seed = 7;
      j.bf16_rne = rne;
      jobs.push_back(j);
    }
  return jobs;
}

std::map<std::string, pipeline::ExecResult> run_pool(const std::string& cache, std::deque<pipeline::JobSpec> jobs,
                                                     const runner::PreloadOptions& pre) {
  runner::LocalPoolOptions o;
  o.workers = 2;
  o.lanes = 2;
  o.queue_ahead = 2;
  o.cache_dir = cache;
  o.backend_args = runner::preload_args(pre);
  return run_on_pool(o, std::move(jobs));
}

// What a result says, for failure messages (the encoded bytes are not read).
std::string describe(const pipeline::ExecResult& r) {
  std::string s = std::string("status ") + pipeline::status_name(r.status) + " " + r.error_class + " '" +
                  r.error_message + "' runtime " + std::to_string(r.runtime_ms);
  for (const auto& o : r.outputs)
    s += "; " + o.name + " max_abs " + std::to_string(o.max_abs) + " pcc " + std::to_string(o.pcc);
  return s;
}

struct Demo {
  std::string dir, file, hash, cache, empty_cache;
  explicit Demo(const std::string& name, bool bf16 = false) {
    dir = fresh_dir(name);
    file = dir + "/demo.onnx";
    EXPECT_EQ(run_cmd(bin("torq-sim") + " demo --save " + file).code, 0);
    pipeline::ImportOptions io;
    io.convert_bf16 = bf16;
    io.rounding = engine::Rounding::kNearestEven;
    const auto m = pipeline::ImportedModel::from_file(file, io);
    hash = m->hash();
    cache = dir + "/cache";
    empty_cache = dir + "/empty";
    std::filesystem::create_directories(cache);
    std::filesystem::create_directories(empty_cache);
    std::ofstream(cache + "/" + hash + ".onnx", std::ios::binary) << m->bytes();
  }
};

}  // namespace

TEST(Preload, ServesItsModelsJobsWithTheResultsOfTheCachedModel) {
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16 import" : "fp32 import");
    Demo d(bf16 ? "preload-bf16" : "preload-fp32", bf16);
    const auto jobs = layer_jobs(d.hash, 14, bf16);
    const auto cached = run_pool(d.cache, jobs, {});
    runner::PreloadOptions pre;
    pre.model = d.file;
    pre.convert_bf16 = bf16;
    pre.rne = bf16;
    pre.seed = 7;
    // No model in this cache: every job is served by the preload.
    const auto preloaded = run_pool(d.empty_cache, jobs, pre);
    ASSERT_EQ(cached.size(), 42u);
    ASSERT_EQ(preloaded.size(), 42u);
    size_t compared = 0;
    for (const auto& [id, r] : cached) {
      ASSERT_TRUE(preloaded.count(id)) << id;
      EXPECT_NE(r.error_class, "fetch") << id << ": " << r.error_message;
      EXPECT_TRUE(comparable(preloaded.at(id)) == comparable(r))
          << id << ": preloaded " << describe(preloaded.at(id)) << "; cached " << describe(r);
      compared += r.status == pipeline::Status::kSuccess && !r.outputs.empty();
    }
    EXPECT_GE(compared, 28u);
  }
}

TEST(Preload, AFailedOrForeignPreloadLeavesJobsToTheCache) {
  Demo d("preload-other");
  const auto jobs = layer_jobs(d.hash, 14, false);
  const auto cached = run_pool(d.cache, jobs, {});
  // Not a model: the preload fails, jobs load from the cache.
  const std::string junk = d.dir + "/junk.onnx";
  std::ofstream(junk) << "not a model";
  runner::PreloadOptions bad;
  bad.model = junk;
  bad.seed = 7;
  // Another model (the demo converted to bf16 has another hash): unused.
  runner::PreloadOptions other;
  other.model = d.file;
  other.convert_bf16 = true;
  other.seed = 7;
  for (const auto& pre : {bad, other}) {
    const auto got = run_pool(d.cache, jobs, pre);
    ASSERT_EQ(got.size(), 42u);
    for (const auto& [id, r] : cached)
      EXPECT_TRUE(comparable(got.at(id)) == comparable(r))
          << id << " (preload " << pre.model << "): " << describe(got.at(id)) << "; cached " << describe(r);
  }
  // And with neither a usable preload nor the model cached, jobs say so.
  const auto none = run_pool(d.empty_cache, layer_jobs(d.hash, 1, false), other);
  ASSERT_EQ(none.size(), 3u);
  for (const auto& [id, r] : none) {
    EXPECT_EQ(r.status, pipeline::Status::kError) << id;
    EXPECT_NE(r.error_message.find("not in cache"), std::string::npos) << id << ": " << r.error_message;
  }
}
