// Probe specs and points (pipeline/probe/probe_spec.h, probe_model.h):
// strict parsing with locations, stable ids, and every point of the
// shipped default spec built into a model the import accepts as one layer
// of the point's op.
#include <gtest/gtest.h>

#include <set>

#include "coordinator/fleet/probe_units.h"
#include "pipeline/base/config_dir.h"
#include "pipeline/base/error.h"
#include "pipeline/model/model_import.h"
#include "pipeline/probe/probe_model.h"
#include "pipeline/probe/probe_spec.h"
#include "pipeline/targets/target_profile.h"
#include "worker/engine/profile.h"

using namespace torq::pipeline;
using namespace torq::pipeline::probe;

namespace {

std::string config(const std::string& rel) { return std::string(TORQ_SOURCE_DIR) + "/configs/" + rel; }

std::string parse_error(const std::string& text) {
  try {
    parse_probe_spec(text, "p.yaml");
  } catch (const torq::base::EngineError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ProbeSpec, ErrorsNameTheFileLineAndColumnWithAHint) {
  EXPECT_NE(parse_error("ops:\n  Convv: {}\n").find("p.yaml:2:3: no probe family for op 'Convv' (did you mean 'Conv'?)"),
            std::string::npos)
      << parse_error("ops:\n  Convv: {}\n");
  EXPECT_NE(parse_error("ops:\n  Conv:\n    axes: {kernal: [3]}\n").find("p.yaml:3:12: unknown axis 'kernal' of Conv "
                                                                         "(did you mean 'kernel'?)"),
            std::string::npos)
      << parse_error("ops:\n  Conv:\n    axes: {kernal: [3]}\n");
  EXPECT_NE(parse_error("ops:\n  Conv:\n    axes: {groups: [1, 3]}\n").find("p.yaml:3:24:"), std::string::npos)
      << parse_error("ops:\n  Conv:\n    axes: {groups: [1, 3]}\n");
  EXPECT_NE(parse_error("ops:\n  Conv:\n    axes: {kernel: [0]}\n").find("Conv.kernel must be in [1, 64], not 0"),
            std::string::npos);
  EXPECT_NE(parse_error("seed: 1\nop: {}\n").find("p.yaml:2:1:"), std::string::npos) << parse_error("seed: 1\nop: {}\n");
  EXPECT_NE(parse_error("ops:\n  Conv:\n    axes: {kernel: [3]}\n    grids: [[kernel, stride]]\n")
                .find("grid axis 'stride' of Conv has no values under Conv.axes"),
            std::string::npos);
  const std::string many = parse_error("max_points: 10\nops:\n  Conv:\n    axes: {kernel: [1, 2, 3, 4, 5, 6]}\n");
  EXPECT_NE(many.find("p.yaml:1:13: the spec expands to 18 points, more than max_points 10"), std::string::npos) << many;
  EXPECT_NE(parse_error("max_points: 10\nops:\n  Conv:\n    axes: {kernel: [1, 2, 3, 4], stride: [1, 2, 3, 4]}\n"
                        "    full: true\n")
                .find("p.yaml:5:11: Conv: the full product has 16 points, more than max_points 10"),
            std::string::npos);
}

// Every number of a probe spec is range-checked at load, and a second YAML
// document is refused, not ignored (issue 60).
TEST(ProbeSpec, EveryNumberIsRangeCheckedAndOneDocumentRead) {
  const std::string ops = "ops:\n  Conv:\n    axes: {kernel: [1, 3]}\n";
  EXPECT_EQ(parse_error("seed: -1\n" + ops), "p.yaml:1:7: seed must be an integer in [0, 9223372036854775807], got -1");
  EXPECT_EQ(parse_error("max_points: 0\n" + ops), "p.yaml:1:13: max_points must be an integer in [1, 1000000], got 0");
  EXPECT_EQ(parse_error("max_points: -5\n" + ops), "p.yaml:1:13: max_points must be an integer in [1, 1000000], got -5");
  EXPECT_EQ(parse_error("max_points: 1000001\n" + ops),
            "p.yaml:1:13: max_points must be an integer in [1, 1000000], got 1000001");
  EXPECT_EQ(parse_error("refine: 9\n" + ops), "p.yaml:1:9: refine (rounds) must be an integer in [0, 8], got 9");
  EXPECT_EQ(parse_error("refine: -1\n" + ops), "p.yaml:1:9: refine (rounds) must be an integer in [0, 8], got -1");
  EXPECT_EQ(parse_error(ops + "    sample: -2\n"),
            "p.yaml:4:13: Conv.sample must be an integer in [0, 9223372036854775807], got -2");
  EXPECT_EQ(parse_error(ops + "---\nops:\n  Relu: {}\n"),
            "p.yaml:4:1: a second YAML document starts here; this file holds one document (remove the '---' and what "
            "follows, or merge it into the first)");
}

TEST(ProbeSpec, PointsAreTheBasePlusEachAxisSweptAloneThenGridsAndTheirIdsAreStable) {
  const ProbeSpec s = parse_probe_spec(
      "seed: 3\ndtypes: [bf16]\nops:\n  Conv:\n    base: {channels: 8}\n    axes: {kernel: [1, 3, 5], stride: [1, 2]}\n"
      "    grids: [[kernel, stride]]\n",
      "p.yaml");
  const auto points = expand_points(s);
  // base (k3 s1), k1, k5, s2 (k3 s1 again is the base), grid: k1s2, k5s2 (others seen).
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0].params_text(),
            "kernel=3 stride=1 dilation=1 pad=same groups=1 channels=8 spatial=14 rank=4");
  std::set<std::string> ids;
  for (const auto& p : points) {
    EXPECT_EQ(p.dtype, "bf16");
    EXPECT_EQ(p.id.rfind("Conv-bf16-", 0), 0u) << p.id;
    ids.insert(p.id);
  }
  EXPECT_EQ(ids.size(), 6u);
  // A longer axis keeps every id it had (cache hits survive a growing grid).
  const auto grown = expand_points(parse_probe_spec(
      "seed: 3\ndtypes: [bf16]\nops:\n  Conv:\n    base: {channels: 8}\n    axes: {kernel: [1, 3, 5, 7], stride: [1, 2]}\n"
      "    grids: [[kernel, stride]]\n",
      "p.yaml"));
  size_t kept = 0;
  for (const auto& p : grown) kept += ids.count(p.id);
  EXPECT_EQ(kept, 6u);
  EXPECT_EQ(grown.size(), 8u);
}

TEST(ProbeSpec, TheDefaultSpecCoversEveryOpOfTheNssProfileInAFewThousandPoints) {
  const ProbeSpec s = load_probe_spec(config("probe/default.yaml"));
  const auto points = expand_points(s);
  EXPECT_GE(points.size(), 1500u);
  EXPECT_LE(points.size(), 6000u);
  std::map<std::string, std::set<std::string>> dtypes_of;
  for (const auto& p : points) dtypes_of[p.op].insert(p.dtype);
  const auto nss = torq::targets::TargetProfile::resolve("nss", torq::engine::kernel_catalog());
  for (const auto& [op, rule] : nss.ops()) {
    ASSERT_TRUE(dtypes_of.count(op)) << op << " of nss.yaml is not probed";
    EXPECT_TRUE(dtypes_of[op].count("bf16")) << op;
    EXPECT_TRUE(dtypes_of[op].count("fp32")) << op;
  }
  // Deterministic: the same spec, the same points.
  const auto again = expand_points(s);
  ASSERT_EQ(again.size(), points.size());
  for (size_t i = 0; i < points.size(); ++i) EXPECT_EQ(again[i].id, points[i].id);
}

// Every default point builds a model of one layer of its op (an int8
// point's Q/DQ included), or says why it cannot; its features give the
// shape the model's graph input 0 has.
TEST(ProbeModel, EveryDefaultPointImportsAsOneLayerOfItsOpOrIsInvalidWithAReason) {
  const auto points = expand_points(load_probe_spec(config("probe/default.yaml")));
  size_t built = 0, invalid = 0;
  for (const auto& p : points) {
    const BuiltPoint b = build_point(p);
    if (!b.invalid.empty()) {
      EXPECT_TRUE(b.bytes.empty());
      ++invalid;
      continue;
    }
    ImportOptions io;
    io.convert_bf16 = p.dtype == "bf16";
    std::unique_ptr<ImportedModel> m;
    try {
      m = ImportedModel::from_bytes(b.bytes, p.id, io);
    } catch (const std::exception& e) {
      ADD_FAILURE() << p.id << " " << p.params_text() << ": " << e.what();
      continue;
    }
    ASSERT_EQ(m->layers().size(), 1u) << p.id << " " << p.params_text();
    EXPECT_EQ(m->layers()[0].op_type, p.op) << p.id;
    EXPECT_FALSE(b.features.input_shape.empty()) << p.id;
    EXPECT_GE(b.features.max_rank, static_cast<int64_t>(b.features.input_shape.size())) << p.id;
    ++built;
  }
  EXPECT_GT(built, points.size() * 9 / 10);
  EXPECT_GT(invalid, 0u);  // e.g. a 2-group Conv of 3 channels
}

TEST(ProbeModel, TheSameSeedGivesTheSameBytesAndAnotherSeedOtherWeights) {
  const auto points = expand_points(parse_probe_spec("seed: 5\ndtypes: [fp32, int8]\nops:\n  Conv: {}\n", "p.yaml"));
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(build_point(points[0]).bytes, build_point(points[0]).bytes);
  ProbePoint other = points[0];
  other.seed = 6;
  other.id = point_id(other.op, other.dtype, other.params, other.seed);
  EXPECT_NE(build_point(other).bytes, build_point(points[0]).bytes);
  const BuiltPoint q = build_point(points[1]);
  EXPECT_EQ(q.features.dtype, torq::base::DType::kI8);
  EXPECT_EQ(q.features.group_kind, "standard");
  EXPECT_EQ(q.features.kernel, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(q.features.input_shape, (std::vector<int64_t>{1, 16, 14, 14}));
}

TEST(ProbeSpec, AnOpWithoutABodyTakesTheSpecsDtypesAndSampleIsBoundedByMaxPoints) {
  const auto points = expand_points(parse_probe_spec("dtypes: [int8]\nops:\n  Conv:\n  Add:\n", "p.yaml"));
  ASSERT_EQ(points.size(), 2u);
  for (const auto& p : points) EXPECT_EQ(p.dtype, "int8") << p.id;
  EXPECT_NE(parse_error("max_points: 100\nops:\n  Conv:\n    axes: {kernel: [1, 3]}\n    sample: 2000000\n")
                .find("p.yaml:5:13: Conv.sample 2000000 is more than max_points 100"),
            std::string::npos);
  EXPECT_NE(parse_error("dtypes: [int8]\nops:\n  Softmax:\n").find("p.yaml:3:3: Softmax is not probed in these dtypes"),
            std::string::npos)
      << parse_error("dtypes: [int8]\nops:\n  Softmax:\n");
}

// A point with a tensor over the probe's limit is invalid, never built:
// a 65536 x 65536 MatMul weight would be 16 GiB of floats.
TEST(ProbeModel, ATensorOverTheLimitMakesThePointInvalidWithoutBuildingIt) {
  const auto points = expand_points(parse_probe_spec(
      "dtypes: [fp32]\nops:\n  MatMul: {base: {K: 65536, N: 65536}}\n  Conv: {base: {channels: 4096, rank: 5, spatial: 64}}\n",
      "p.yaml"));
  ASSERT_EQ(points.size(), 2u);
  for (const auto& p : points) {
    const BuiltPoint b = build_point(p);
    EXPECT_NE(b.invalid.find("elements is over the probe's limit"), std::string::npos) << p.id << ": " << b.invalid;
    EXPECT_TRUE(b.bytes.empty());
  }
}

TEST(ProbeModel, LayerNormalizationOverTheChannelsAndArgMaxOnOneAxisImport) {
  const auto points = expand_points(parse_probe_spec(
      "dtypes: [fp32]\nops:\n  LayerNormalization: {axes: {axis: [channel, last], rank: [2, 3, 4]}}\n"
      "  ArgMax: {base: {axes: last}, axes: {axes: [c, last]}}\n",
      "p.yaml"));
  ASSERT_GE(points.size(), 6u);
  for (const auto& p : points) {
    const BuiltPoint b = build_point(p);
    ASSERT_TRUE(b.invalid.empty()) << p.id << " " << p.params_text() << ": " << b.invalid;
    EXPECT_NO_THROW(ImportedModel::from_bytes(b.bytes, p.id, {})) << p.params_text();
  }
}

// A result that says nothing of the op is not learned from.
TEST(ProbeUnits, TimeoutsCrashesAndUnstagedJobsAreInfrastructureWhateverTheirClass) {
  ExecResult r;
  r.status = Status::kError;
  r.error_class = "compile";
  r.error_message = "compile step (torq-compile) exited with status 1: error: Conv kernel 9";
  EXPECT_FALSE(torq::coordinator::infrastructure_error(r));
  r.error_message = "compile step (torq-compile) timed out after 600 s; its process group was killed";
  EXPECT_TRUE(torq::coordinator::infrastructure_error(r));
  r.error_message = "compile step (torq-compile) killed by SIGKILL";
  EXPECT_TRUE(torq::coordinator::infrastructure_error(r));
  for (const char* c : {"crash", "timeout", "fetch", "target", "reference", "invalid_job"}) {
    r.error_class = c;
    r.error_message = "x";
    EXPECT_TRUE(torq::coordinator::infrastructure_error(r)) << c;
  }
  r.error_class = "unsupported";
  EXPECT_FALSE(torq::coordinator::infrastructure_error(r));
  r.status = Status::kSuccess;
  r.error_class = "crash";
  EXPECT_FALSE(torq::coordinator::infrastructure_error(r));
}
