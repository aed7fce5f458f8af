// Shared by the local-pool integration tests: run jobs on a real LocalPool
// and compare results without what depends on timing and placement.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "pipeline/wire/codec.h"
#include "tests/integration/proc.h"
#include "worker/runner/local_pool.h"

namespace torq::test {

// Runs `jobs` on `pool` (which stays up after); results by job id, each exactly once.
inline std::map<std::string, pipeline::ExecResult> run_jobs(runner::LocalPool& pool,
                                                            std::deque<pipeline::JobSpec> jobs) {
  std::map<std::string, pipeline::ExecResult> out;
  pool.run(
      [&]() -> std::optional<pipeline::JobSpec> {
        if (jobs.empty()) return std::nullopt;
        auto j = jobs.front();
        jobs.pop_front();
        return j;
      },
      [&](const pipeline::JobSpec& j, pipeline::ExecResult r) { EXPECT_TRUE(out.emplace(j.id, r).second) << j.id; });
  return out;
}

// Runs `jobs` on a pool made with `o` (its worker binary is the build's
// torq-worker); results by job id, each exactly once.
inline std::map<std::string, pipeline::ExecResult> run_on_pool(runner::LocalPoolOptions o,
                                                               std::deque<pipeline::JobSpec> jobs) {
  o.worker_binary = bin("torq-worker");
  runner::LocalPool pool(o);
  return run_jobs(pool, std::move(jobs));
}

// A result without what depends on timing and placement.
inline std::string comparable(pipeline::ExecResult r) {
  r.host_ms = 0;
  r.worker_id.clear();
  return pipeline::encode_result(r);
}

}  // namespace torq::test
