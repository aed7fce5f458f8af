// Discovery over ssh on shared models (issue 10): a torq-coordinator and two
// torq-worker --backend toolchain --board processes, the stand-in toolchain
// compiling here and its torq-run-module running on the "board" (a real sshd
// on 127.0.0.1), give exactly the statuses, recommendations and metrics of
// `torq-gen-config discover` on the sim backend, bf16.
//
// Two of the four models: squeezenet1.0 (Concat, MaxPool ceil_mode, the
// smallest) and resnet18 (Add, Gemm, the largest convolutions). The ssh path
// (stage, lock, run, pull) is the same for every layer, and all four models
// go through the same stand-in locally (ToolchainSharedModels); over ssh
// mobilenetv2 and efficientnet_b1 took 10 minutes of CI's 2 cores, and
// tests/bench/farm_bench.sh runs efficientnet_b1 over ssh on 1 to 8 boards.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "tests/board/board_fleet.h"
#include "tests/board/sshd_fixture.h"
#include "tests/toolchain/toolchain_helpers.h"
#include "tests/shared_models.h"

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using namespace torq::board::testing;

namespace {

class BoardSharedModels : public BoardSshdTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(BoardSharedModels, Bf16DiscoverOverSshMatchesTheSimBackend) {
  const std::string name = GetParam();
  const std::string model = std::string(TORQ_SHARED_MODELS) + "/" + name + "/model.onnx";
  ASSERT_TRUE(fs::exists(model)) << model;
  BoardFleet f("models-" + name);
  const auto sim = torq::test::discover(model, f.dir + "/sim", "--workers 2 --auto-convert-bf16");
  ASSERT_LE(sim.code, 1) << sim.output;

  const auto t0 = std::chrono::steady_clock::now();
  auto coord = f.coordinator(model, {"--auto-convert-bf16"});
  for (int i = 0; i < 2; ++i) f.add_worker(*sshd_, torq::test::standin_yaml(), {"--no-health-check"});
  auto code = coord.wait(900000);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, sim.code) << coord.output() << f.workers[0].output();
  f.stop_workers();

  const std::string report = "/torq_gen_config_" + name + ".json";
  const ordered_json a = torq::test::read_json(f.dir + "/sim" + report);
  const ordered_json b = torq::test::read_json(f.dir + "/out" + report);
  ASSERT_EQ(a["ops"].size(), b["ops"].size());
  torq::test::expect_same_results(a, b);
  EXPECT_NE(b["ops"].begin().value()["executors"]["host"]["toolchain"].get<std::string>().find(
                "on board " + sshd_->address().user + "@127.0.0.1:" + std::to_string(sshd_->port())),
            std::string::npos);
  EXPECT_FALSE(fs::exists(kLock)) << "the board lock is still held after the run";
  EXPECT_TRUE(board_dirs().empty()) << "staging folders left on the board";
  size_t jobs = 0;
  for (auto& w : f.workers) jobs += count(w.output(), "finished ");
  std::printf("[board] %s bf16 over ssh: %zu layers, %zu jobs on 2 board workers in %.1f s (%.1f jobs/s)\n",
              name.c_str(), b["ops"].size(), jobs, wall_s, jobs / wall_s);
}

INSTANTIATE_TEST_SUITE_P(Models, BoardSharedModels, ::testing::Values("squeezenet1.0", "resnet18"),
                         torq::test::SharedModelTestName());

}  // namespace
