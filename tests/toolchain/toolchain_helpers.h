// Helpers of the toolchain-backend tests: report comparison (sim vs
// toolchain), discover runs through the real binaries.
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/proc.h"

namespace torq::test {

inline std::string standin_yaml() { return std::string(TORQ_SOURCE_DIR) + "/configs/toolchains/standin.yaml"; }

// torq-gen-config discover MODEL into DIR with extra flags; exit code and output.
inline ProcResult discover(const std::string& model, const std::string& dir, const std::string& flags) {
  return run_cmd("timeout 600 " + bin("torq-gen-config") + " discover --model '" + model + "' --output-dir '" + dir + "' -q " + flags);
}

// Keys of an executor result that legitimately differ between backends:
// timing, worker, toolchain identity, and how an error is worded/classed.
inline const std::set<std::string>& identity_keys() {
  static const std::set<std::string> k = {"timing", "worker_id", "toolchain", "chip", "host_ms", "job_id",
                                          "failure_report", "error_class", "cached", "attempts"};
  return k;
}

// Expects the two reports to agree on every op's statuses, metrics and
// recommendation, and on the summary counts.
inline void expect_same_results(const nlohmann::ordered_json& sim, const nlohmann::ordered_json& tc) {
  ASSERT_EQ(sim["ops"].size(), tc["ops"].size());
  for (const auto& [id, op] : sim["ops"].items()) {
    ASSERT_TRUE(tc["ops"].contains(id)) << id;
    const auto& other = tc["ops"][id];
    EXPECT_EQ(op["recommended_executor"], other["recommended_executor"]) << id;
    EXPECT_EQ(op["mlir_location"], other["mlir_location"]) << id;
    for (const auto& [e, r] : op["executors"].items()) {
      ASSERT_TRUE(other["executors"].contains(e)) << id << " " << e;
      const auto& o = other["executors"][e];
      for (const auto& [k, v] : r.items()) {
        if (identity_keys().count(k)) continue;
        EXPECT_EQ(v, o.value(k, nlohmann::ordered_json())) << id << " " << e << " " << k;
      }
      for (const auto& [k, v] : o.items()) {
        if (identity_keys().count(k)) continue;
        EXPECT_TRUE(r.contains(k)) << id << " " << e << " extra key " << k;
      }
      if (r["status"] == "error") {
        EXPECT_TRUE(o["error_class"] == "compile" || o["error_class"] == "runtime")
            << id << " " << e << ": " << o.dump();
      }
    }
  }
  const auto& a = sim["discovery_report"]["summary"];
  const auto& b = tc["discovery_report"]["summary"];
  EXPECT_EQ(a["total_layers"], b["total_layers"]);
  EXPECT_EQ(a["status_counts"], b["status_counts"]);
  EXPECT_EQ(a["executor_counts"], b["executor_counts"]);
  EXPECT_EQ(sim["has_critical_failures"], tc["has_critical_failures"]);
  EXPECT_EQ(sim["discovery_report"]["critical_failures"], tc["discovery_report"]["critical_failures"]);
}

// Discovers `model` with the sim backend and with the stand-in toolchain
// (same flags) and compares the reports.
inline void discover_both_and_compare(const std::string& model, const std::string& name, const std::string& flags) {
  const std::string sim_dir = fresh_dir("toolchain/" + name + "-sim");
  const std::string tc_dir = fresh_dir("toolchain/" + name + "-toolchain");
  const auto a = discover(model, sim_dir, flags);
  ASSERT_LE(a.code, 1) << a.output;
  const auto b = discover(model, tc_dir, flags + " --backend toolchain --toolchain " + standin_yaml());
  ASSERT_EQ(b.code, a.code) << b.output;
  const std::string stem = std::filesystem::path(model).parent_path().filename().string();
  const std::string file_name = std::filesystem::path(model).stem() == "model" ? stem : std::filesystem::path(model).stem().string();
  const std::string report = "/torq_gen_config_" + file_name + ".json";
  const auto sim = read_json(sim_dir + report), tc = read_json(tc_dir + report);
  expect_same_results(sim, tc);
  // The toolchain results say so.
  const auto& first = *tc["ops"].begin();
  EXPECT_NE(first["executors"]["host"]["toolchain"].get<std::string>().find("toolchain standin"), std::string::npos);
}

}  // namespace torq::test
