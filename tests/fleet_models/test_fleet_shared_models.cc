// The fleet's proof on real models: the four shared models (SqueezeNet 1.0,
// MobileNetV2, ResNet-18, EfficientNet-B1) discovered by one torq-coordinator
// and three torq-worker processes on loopback give the same statuses and
// recommendations, layer by layer and executor by executor, as the
// single-machine `torq-gen-config discover` — for fp32 and with bf16
// auto-conversion (where nss results mix success and unsupported errors).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include "tests/fleet/fleet_harness.h"

using namespace torq::fleet_test;
using nlohmann::json;

namespace {

const std::vector<std::string> kModels = {"squeezenet1.0", "mobilenetv2", "resnet18", "efficientnet_b1"};

std::string model_path(const std::string& name) { return std::string(TORQ_SHARED_MODELS) + "/" + name + "/model.onnx"; }

json read_json(const std::string& path) { return json::parse(slurp(path)); }

// Runs both paths for every model and compares the reports.
void compare_fleet_with_single_machine(bool bf16) {
  const std::string dir = fresh_dir(bf16 ? "shared-bf16" : "shared-fp32");
  const std::string ep = endpoint(free_port());
  // The fleet: the four models, 1 coordinator, 3 workers.
  std::vector<std::string> cargs = {bin("torq-coordinator"), "--bind", ep, "--db", dir + "/db", "--export",
                                    dir + "/fleet", "--heartbeat-ms", "200"};
  for (const auto& m : kModels) cargs.insert(cargs.end(), {"--model", model_path(m)});
  if (bf16) cargs.push_back("--auto-convert-bf16");
  Proc coord(cargs, dir + "/coordinator.log");
  std::vector<Proc> workers;
  for (int i = 0; i < 3; ++i)
    workers.emplace_back(std::vector<std::string>{bin("torq-worker"), "--connect", ep, "--id", "w" + std::to_string(i),
                                                  "--cache", dir + "/cache-" + std::to_string(i), "--heartbeat-ms",
                                                  "200"},
                         dir + "/worker" + std::to_string(i) + ".log");
  auto code = coord.wait(600000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  for (auto& w : workers) w.signal(SIGTERM);
  for (auto& w : workers) EXPECT_EQ(w.wait(30000), 0) << w.output();

  std::map<std::string, int> status_counts;
  for (const auto& m : kModels) {
    // The single machine, one model at a time, as users run it.
    std::vector<std::string> args = {bin("torq-gen-config"), "discover", "--model", model_path(m), "--output-dir",
                                     dir + "/local", "--workers", "2"};
    if (bf16) args.push_back("--auto-convert-bf16");
    Proc local(args, dir + "/local-" + m + ".log");
    auto rc = local.wait(600000);
    ASSERT_TRUE(rc) << local.output();
    ASSERT_EQ(*rc, 0) << local.output();

    const json a = read_json(dir + "/local/torq_gen_config_" + m + ".json");
    const json b = read_json(dir + "/fleet/torq_gen_config_" + m + ".json");
    ASSERT_GT(a["ops"].size(), 40u) << m;
    ASSERT_EQ(b["ops"].size(), a["ops"].size()) << m;
    for (auto& [id, op] : a["ops"].items()) {
      ASSERT_TRUE(b["ops"].contains(id)) << m << " " << id;
      const json& other = b["ops"][id];
      EXPECT_EQ(other["recommended_executor"], op["recommended_executor"]) << m << " " << id;
      for (const char* e : {"nss", "css", "host"}) {
        EXPECT_EQ(other["executors"][e]["status"], op["executors"][e]["status"]) << m << " " << id << " " << e;
        EXPECT_EQ(other["executors"][e].value("error_class", ""), op["executors"][e].value("error_class", ""))
            << m << " " << id << " " << e;
        ++status_counts[std::string(e) + "=" + op["executors"][e]["status"].get<std::string>()];
      }
    }
    EXPECT_EQ(read_json(dir + "/fleet/torq_gen_config_" + m + "_compiler.json"),
              read_json(dir + "/local/torq_gen_config_" + m + "_compiler.json"))
        << m;
  }
  std::string counts;
  for (const auto& [k, n] : status_counts) counts += " " + k + ":" + std::to_string(n);
  std::printf("[ statuses ] %s over 4 models:%s\n", bf16 ? "bf16" : "fp32", counts.c_str());
  // The comparison is not vacuous: every executor succeeded somewhere, and
  // with fp32 nss rejects everything (bf16-only NPU) while bf16 mixes.
  EXPECT_GT(status_counts["css=success"], 300);
  EXPECT_GT(status_counts["host=success"], 300);
  if (bf16) {
    EXPECT_GT(status_counts["nss=success"], 100);
    EXPECT_GT(status_counts["nss=error"], 10);
  } else {
    EXPECT_EQ(status_counts["nss=success"], 0);
  }
}

}  // namespace

TEST(FleetSharedModels, Fp32OverThreeWorkersMatchesSingleMachineDiscover) { compare_fleet_with_single_machine(false); }
TEST(FleetSharedModels, Bf16OverThreeWorkersMatchesSingleMachineDiscover) { compare_fleet_with_single_machine(true); }
