// A layer job's reference outputs come from the worker's full-model run
// when the job's inputs are that run's activations (job_runner.cc,
// full_run_outputs). That must be exactly what the per-job reference run
// computes: discover of the demo CNN in fp32, bf16 and int8 gives the same
// report, metric for metric, with TORQ_REFERENCE_PER_JOB=1 (the per-job run)
// and without it.
#include <gtest/gtest.h>

#include "tests/integration/proc.h"

using namespace torq::test;
using json = nlohmann::ordered_json;

namespace {

// Every executor result of every layer, without the fields that depend on
// the machine and the scheduling (host time, which worker ran it).
json results_of(const json& rep) {
  json out = json::object();
  for (auto& [id, op] : rep["ops"].items())
    for (auto& [e, r] : op["executors"].items()) {
      json x = r;
      x.erase("host_ms");
      x.erase("worker_id");
      out[id + "/" + e] = x;
    }
  return out;
}

class ReferenceReuse : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceReuse, ReportEqualsThePerJobReferenceRuns) {
  const std::string dir = fresh_dir("reference-reuse-" + std::to_string(std::hash<std::string>{}(GetParam())));
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + dir + "/demo.onnx").code, 0);
  json reports[2];
  for (int per_job = 0; per_job < 2; ++per_job) {
    const std::string out = dir + "/out" + std::to_string(per_job);
    auto r = run_cmd(std::string(per_job ? "TORQ_REFERENCE_PER_JOB=1 " : "") + bin("torq-gen-config") +
                     " discover --workers 2 " + GetParam() + " --model " + dir + "/demo.onnx -o " + out);
    ASSERT_EQ(r.code, 0) << r.output;
    const std::string name = GetParam().find("--quantize") != std::string::npos ? "demo_quant" : "demo";
    reports[per_job] = read_json(out + "/torq_gen_config_" + name + ".json");
  }
  const json a = results_of(reports[0]), b = results_of(reports[1]);
  ASSERT_EQ(a.size(), 3u * 14u);
  EXPECT_EQ(a, b);
  // Not vacuous: the results hold metrics that would show a difference.
  size_t compared = 0;
  for (auto& [k, r] : a.items())
    if (r.contains("max_diff")) ++compared;
  EXPECT_GT(compared, 14u);
}

INSTANTIATE_TEST_SUITE_P(Numerics, ReferenceReuse, ::testing::Values("", "--auto-convert-bf16", "--quantize"),
                         [](const auto& info) {
                           return std::string(info.index == 0 ? "Fp32" : info.index == 1 ? "Bf16" : "Int8");
                         });

}  // namespace
