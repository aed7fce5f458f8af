// The engine identity the result cache is keyed on (coordinator/fleet/unit_run.h):
// its form, the sim backend reporting the same one, and which results may
// enter the cache under it (a foreign or older sim engine's may not).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "coordinator/fleet/unit_run.h"
#include "worker/runner/job_runner.h"

using namespace torq::coordinator;
using torq::pipeline::ExecResult;
using torq::pipeline::Status;

namespace {

ExecResult result(Status s, const std::string& toolchain, const std::string& error_class = "") {
  ExecResult r;
  r.status = s;
  r.toolchain = toolchain;
  r.error_class = error_class;
  return r;
}

}  // namespace

TEST(EngineIdentity, IsTheSimDigestAndTheSimBackendReportsIt) {
  const std::string id = engine_identity();
  EXPECT_TRUE(std::regex_match(id, std::regex("torq-sim-[0-9a-f]{16}"))) << id;
  const std::string reported = torq::runner::toolchain_identity();
  EXPECT_EQ(reported.rfind(id + " (oneDNN ", 0), 0u) << reported;
  EXPECT_FALSE(foreign_engine(reported, id));
  EXPECT_FALSE(foreign_engine(reported + " (bench noop)", id));
}

TEST(EngineIdentity, AnotherOrOlderSimEngineIsForeignAToolchainNever) {
  const std::string id = "torq-sim-0123456789abcdef";
  EXPECT_FALSE(foreign_engine(id, id));
  EXPECT_FALSE(foreign_engine(id + " (oneDNN 2.6.3)", id));
  EXPECT_TRUE(foreign_engine("torq-sim-fedcba9876543210 (oneDNN 2.6.3)", id));
  EXPECT_TRUE(foreign_engine("torq-sim 0.1 (oneDNN 2.6.3)", id));  // before the digest
  EXPECT_TRUE(foreign_engine(id + "ff (oneDNN 2.6.3)", id));       // a longer digest with ours as prefix
  EXPECT_FALSE(foreign_engine("toolchain sl2610 (/opt/torq; chip sl2610, hw astra)", id));  // names none
  EXPECT_FALSE(foreign_engine("", id));
  // A toolchain backend's names its reference engine; its path may say torq-sim.
  const std::string tc = "toolchain standin (/b/bin/torq-sim; chip sl2610, hw astra) on board 127.0.0.1 [engine ";
  EXPECT_FALSE(foreign_engine(tc + id + " (oneDNN 2.6.3)]", id));
  EXPECT_TRUE(foreign_engine(tc + "torq-sim-fedcba9876543210 (oneDNN 2.6.3)]", id));
  EXPECT_TRUE(foreign_engine(tc + "torq-sim 0.1 (oneDNN 2.6.3)]", id));
}

TEST(EngineIdentity, OnlyOwnEnginesLayerVerdictsAreCached) {
  const std::string id = "torq-sim-0123456789abcdef";
  const std::string own = id + " (oneDNN 2.6.3)", other = "torq-sim-fedcba9876543210 (oneDNN 2.6.3)";
  EXPECT_TRUE(cacheable(result(Status::kSuccess, own), id));
  EXPECT_TRUE(cacheable(result(Status::kDifference, own), id));
  EXPECT_TRUE(cacheable(result(Status::kError, own, "unsupported"), id));
  EXPECT_TRUE(cacheable(result(Status::kError, own, "compile"), id));
  EXPECT_FALSE(cacheable(result(Status::kError, own, "crash"), id));
  EXPECT_FALSE(cacheable(result(Status::kError, own, "timeout"), id));
  EXPECT_FALSE(cacheable(result(Status::kSuccess, other), id));
  EXPECT_FALSE(cacheable(result(Status::kError, other, "unsupported"), id));
  EXPECT_TRUE(cacheable(result(Status::kSuccess, "toolchain sl2610 (/opt/torq) [engine " + own + "]"), id));
  EXPECT_FALSE(cacheable(result(Status::kSuccess, "toolchain sl2610 (/opt/torq) [engine " + other + "]"), id));
}
