// The coordinator's probe mode (issue 34): torq-coordinator --spec with a
// `probe:` section, real local workers over ZeroMQ, two targets (the
// built-in sim profiles and a hidden profile set), resume from the store,
// and the spec errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/fleet/fleet_harness.h"
#include "tests/matrix/matrix_helpers.h"

using namespace torq::fleet_test;

namespace {

class MatrixProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("probe-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::pair<int, std::string> coordinator(const std::string& spec, const std::string& out) {
    return run({bin("torq-coordinator"), "--spec", dir_ + "/" + spec, "--export", dir_ + "/" + out, "--local-workers",
                "2", "--heartbeat-ms", "200"},
               dir_ + "/" + out + ".log");
  }
  std::string dir_;
};

}  // namespace

TEST_F(MatrixProbe, EachTargetGetsItsEnvelopeAndJUnitCasesAndASecondRunResumes) {
  write(dir_ + "/hidden.yaml",
        "name: nss\nnumerics: {float_type: bf16}\n"
        "cost: {clock_mhz: 1000, slices: 2, macs_per_cycle_per_slice: 128, eltwise_per_cycle: 64,\n"
        "       dma_bytes_per_cycle: 64, dispatch_overhead_cycles: 2000}\n"
        "ops:\n"
        "  Conv: {dtypes: [bf16, i8], conv_groups: [standard], max_kernel: 3, max_stride: 2}\n"
        "  MaxPool: {dtypes: [bf16, i8], max_kernel: 3}\n"
        "  GlobalAveragePool: {dtypes: [bf16, i8], max_input_elements: 100000}\n"
        "  Add: {dtypes: [bf16]}\n");
  write(dir_ + "/spec.yaml", std::string("probe:\n  spec: ") + TORQ_SOURCE_DIR +
                                 "/configs/probe/smoke.yaml\n  min_explained: 1.0\n"
                                 "executors: [nss]\n"
                                 "targets:\n  sim: {}\n  hidden: {profiles: {nss: hidden.yaml}}\n");
  auto [code, out] = coordinator("spec.yaml", "out");
  ASSERT_EQ(code, 0) << out;
  const std::string builtin = slurp(dir_ + "/out/probe/sim/profiles/nss.yaml");
  const std::string hidden = slurp(dir_ + "/out/probe/hidden/profiles/nss.yaml");
  EXPECT_NE(builtin.find("max_kernel: 7"), std::string::npos) << builtin;
  EXPECT_NE(hidden.find("max_kernel: 3"), std::string::npos) << hidden;
  EXPECT_NE(hidden.find("conv_groups: [standard]"), std::string::npos) << hidden;
  // Refinement put the hidden GlobalAveragePool limit (100000) between
  // measured points closer than the smoke grid's [64*45^2, 64*64^2).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(hidden, m, std::regex("bound in \\[([0-9]+), ([0-9]+)\\)\n    max_input_elements"))) << hidden;
  EXPECT_LE(std::stoll(m[1]), 100000);
  EXPECT_GT(std::stoll(m[2]), 100000);
  EXPECT_LT(std::stod(m[2]) / std::stod(m[1]), 1.1) << m[0];
  for (const char* f : {"probe.csv", "envelope.md", "envelope.html", "targets.yaml"}) {
    EXPECT_TRUE(std::filesystem::exists(dir_ + "/out/probe/sim/" + f)) << f;
    EXPECT_TRUE(std::filesystem::exists(dir_ + "/out/probe/hidden/" + f)) << f;
  }
  const std::string junit = slurp(dir_ + "/out/junit.xml");
  EXPECT_NE(junit.find("classname=\"probe.hidden.nss\" name=\"Conv float\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("failures=\"0\""), std::string::npos) << junit;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("jobs: ([0-9]+) run, ([0-9]+) resumed"))) << out;
  const int jobs = std::stoi(m[1]);
  EXPECT_GT(jobs, 100);

  auto [again, out2] = coordinator("spec.yaml", "out");
  ASSERT_EQ(again, 0) << out2;
  ASSERT_TRUE(std::regex_search(out2, m, std::regex("jobs: ([0-9]+) run, ([0-9]+) resumed"))) << out2;
  EXPECT_EQ(std::stoi(m[1]), 0) << out2;
  EXPECT_EQ(std::stoi(m[2]), jobs) << out2;
  EXPECT_EQ(slurp(dir_ + "/out/probe/hidden/profiles/nss.yaml"), hidden);
}

TEST_F(MatrixProbe, ABadProbeSectionIsAnErrorAtItsLocation) {
  write(dir_ + "/a.yaml", "probe:\n  spec: nope.yaml\n");
  auto [c1, o1] = coordinator("a.yaml", "out");
  EXPECT_EQ(c1, 2);
  EXPECT_NE(o1.find("a.yaml:2:9: probe spec '"), std::string::npos) << o1;
  write(dir_ + "/b.yaml", std::string("probe:\n  spec: ") + TORQ_SOURCE_DIR +
                              "/configs/probe/smoke.yaml\n  min_explaned: 1\n");
  auto [c2, o2] = coordinator("b.yaml", "out");
  EXPECT_EQ(c2, 2);
  EXPECT_NE(o2.find("b.yaml:3:3:"), std::string::npos) << o2;
  EXPECT_NE(o2.find("min_explained"), std::string::npos) << o2;
  write(dir_ + "/p.yaml", "ops:\n  Conv:\n    axes: {stride: [0]}\n");
  write(dir_ + "/c.yaml", "probe: {spec: p.yaml}\n");
  auto [c3, o3] = coordinator("c.yaml", "out");
  EXPECT_EQ(c3, 2);
  EXPECT_NE(o3.find("p.yaml:3:21: Conv.stride must be in [1, 16], not 0"), std::string::npos) << o3;
}
