// The probe's envelope learner (issue 34): thresholds planted in a hidden
// profile are recovered from the statuses they imply; noise becomes a
// listed residual; the derived profile parses back and reproduces its
// predictions; refusing_key agrees with the engine's check; probe.csv
// round-trips; probe_diff groups a changed point by the key of A's rule.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "pipeline/probe/envelope_learn.h"
#include "pipeline/probe/envelope_predict.h"
#include "pipeline/probe/envelope_report.h"
#include "pipeline/probe/probe_diff.h"
#include "worker/engine/kernel.h"
#include "worker/engine/profile.h"

namespace probe = torq::pipeline::probe;
using torq::base::DType;
using torq::pipeline::Executor;
using torq::pipeline::Status;
using torq::targets::TargetProfile;

namespace {

// The hidden truth the synthetic statuses come from: an element limit off
// the grid of round numbers, and integer limits that differ.
const char* kHidden = R"(name: nss
numerics: {float_type: bf16}
cost: {clock_mhz: 1000, slices: 1, macs_per_cycle_per_slice: 1, eltwise_per_cycle: 1, dma_bytes_per_cycle: 1, dispatch_overhead_cycles: 0}
ops:
  Conv:
    dtypes: [bf16, i8]
    conv_groups: [standard]
    max_kernel: 5
    max_stride: 1
    min_spatial: 4
    max_input_elements: 200000
    int:
      max_stride: 2
      min_spatial: null
      max_strided_input_elements: 5000
  MaxPool:
    dtypes: [bf16]
    max_kernel: 3
)";

const TargetProfile& hidden() {
  static const TargetProfile p = TargetProfile::parse(kHidden, "hidden.yaml", torq::engine::kernel_catalog());
  return p;
}

probe::ProbeRow make_row(const std::string& op, const std::string& dtype, int64_t channels, int64_t spatial,
                         int64_t kernel, int64_t stride, const std::string& group, int n) {
  probe::ProbeRow r;
  r.point.op = op;
  r.point.dtype = dtype;
  r.point.id = op + "-" + dtype + "-" + std::to_string(n);
  r.point.params = {{"kernel", std::to_string(kernel)}, {"stride", std::to_string(stride)},
                    {"shape", "1x" + std::to_string(channels) + "x" + std::to_string(spatial) + "x" + std::to_string(spatial)}};
  if (!group.empty()) r.point.params.emplace_back("groups", group);
  r.point.seed = 7;
  probe::PointFeatures& f = r.features;
  f.op = op;
  f.dtype = dtype == "fp32" ? DType::kF32 : dtype == "bf16" ? DType::kBF16 : DType::kI8;
  f.input_shape = {1, channels, spatial, spatial};
  f.max_rank = 4;
  f.group_kind = group;
  f.kernel = {kernel, kernel};
  f.strides = {stride, stride};
  return r;
}

// Every point's nss status as the hidden profile implies; `message` names
// the error of a refused point from its key.
void measure(std::vector<probe::ProbeRow>& rows, const std::function<std::string(const std::string&)>& message) {
  for (probe::ProbeRow& r : rows) {
    const std::string key = probe::refusing_key(hidden(), r.features);
    probe::ProbeOutcome o;
    o.executor = Executor::kNss;
    o.status = key.empty() ? (r.features.max_kernel() == 3 ? Status::kDifference : Status::kSuccess) : Status::kError;
    if (!key.empty()) o.error_class = "unsupported", o.error_message = message(key);
    o.runtime_ms = key.empty() ? 0.25 : -1;
    o.host_ms = 12.5;
    r.outcomes = {o};
  }
}

std::string message_of_key(const std::string& key) {
  return key == "fp32" ? "FP32 not supported on nss; use --auto-convert-bf16" : "refused by " + key;
}

// Conv over kernel x stride x groups x spatial x channels in three dtypes,
// MaxPool over kernel x stride in bf16 and int8, Softmax (never runs).
std::vector<probe::ProbeRow> synthetic_rows() {
  std::vector<probe::ProbeRow> rows;
  int n = 0;
  for (const char* dt : {"fp32", "bf16", "int8"})
    for (int64_t k : {1, 3, 5, 7})
      for (int64_t s : {1, 2, 3})
        for (const char* g : {"standard", "depthwise", "grouped"})
          for (int64_t sp : {2, 4, 8, 48, 56})
            for (int64_t c : {16, 64}) rows.push_back(make_row("Conv", dt, c, sp, k, s, g, n++));
  for (const char* dt : {"bf16", "int8"})
    for (int64_t k : {2, 3, 4, 5})
      for (int64_t s : {1, 2}) rows.push_back(make_row("MaxPool", dt, 16, 8, k, s, "", n++));
  for (int i = 0; i < 3; ++i) {
    probe::ProbeRow r = make_row("Softmax", "bf16", 16, 8, 1, 1, "", n++);
    r.features.kernel.clear(), r.features.strides.clear();
    rows.push_back(r);
  }
  measure(rows, message_of_key);
  return rows;
}

TargetProfile parse_derived(const probe::DerivedProfile& d) {
  return TargetProfile::parse(d.yaml, "derived.yaml", torq::engine::kernel_catalog());
}

probe::DerivedProfile learn(const std::vector<probe::ProbeRow>& rows) {
  return probe::learn_profile("nss", rows, nullptr, torq::engine::kernel_catalog());
}

}  // namespace

TEST(ProbeLearn, PlantedThresholdsAreRecovered) {
  const std::vector<probe::ProbeRow> rows = synthetic_rows();
  const probe::DerivedProfile d = learn(rows);
  EXPECT_EQ(d.points, static_cast<int>(rows.size()));
  EXPECT_EQ(d.explained, d.points) << d.yaml;
  const TargetProfile p = parse_derived(d);
  EXPECT_EQ(p.float_type(), DType::kBF16);
  EXPECT_EQ(p.fp32_error(), "FP32 not supported on nss; use --auto-convert-bf16");
  const torq::targets::OpRule* conv = p.rule("Conv");
  ASSERT_NE(conv, nullptr) << d.yaml;
  EXPECT_EQ(conv->dtypes, (std::set<DType>{DType::kBF16, DType::kI8}));
  EXPECT_EQ(conv->conv_groups, (std::set<std::string>{"standard"}));
  EXPECT_EQ(conv->max_kernel, 5);
  EXPECT_EQ(conv->max_stride, 1);
  EXPECT_EQ(conv->min_spatial, 4);
  EXPECT_FALSE(conv->min_kernel.has_value());  // excludes nothing: pruned
  // 64x48x48 = 147456 runs, 64x56x56 = 200704 fails: no 2^k or 3*2^(k-1)
  // lies in [147456, sqrt(147456 * 200704)], so the largest running input.
  EXPECT_EQ(conv->max_input_elements, 147456);
  ASSERT_NE(conv->int_rule, nullptr);
  EXPECT_EQ(conv->int_rule->max_stride, 2);
  EXPECT_FALSE(conv->int_rule->min_spatial.has_value());
  // Strided i8 inputs run up to 64x8x8 = 4096 and fail from 16x48x48 = 36864:
  // the middle sqrt(4096 * 36864) = 12288 = 3 * 2^12.
  EXPECT_EQ(conv->int_rule->max_strided_input_elements, 12288);
  EXPECT_EQ(conv->int_rule->max_kernel, 5);  // as the float rule
  const torq::targets::OpRule* pool = p.rule("MaxPool");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->dtypes, (std::set<DType>{DType::kBF16}));
  EXPECT_EQ(pool->max_kernel, 3);
  EXPECT_FALSE(pool->max_stride.has_value());
  EXPECT_EQ(p.rule("Softmax"), nullptr);  // never ran: refused as not supported
  EXPECT_NE(d.yaml.find("# Softmax: left out"), std::string::npos);
  EXPECT_NE(d.yaml.find("bound in [5, 7)"), std::string::npos) << d.yaml;
}

TEST(ProbeLearn, EnvelopeSentencesAndEvidence) {
  const probe::DerivedProfile d = learn(synthetic_rows());
  const probe::OpEnvelope* conv = nullptr;
  for (const auto& e : d.envelopes)
    if (e.op == "Conv" && e.group == "float") conv = &e;
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->points, 720);
  EXPECT_EQ(conv->explained, 720);
  EXPECT_EQ(conv->sentence,
            "Conv bf16 on nss runs iff groups ∈ {standard} and kernel ≤ 5 and min(H,W) ≥ 4 and stride ≤ 1 and "
            "input ≤ 147456 elements; otherwise error: refused by conv_groups (240); f32 never runs: FP32 not "
            "supported on nss; use --auto-convert-bf16 (360); explains 720/720");
  EXPECT_FALSE(conv->table.empty());
  const probe::LearnedKey* k = d.ops[0].main.find("max_kernel");
  ASSERT_NE(k, nullptr);
  // bf16 Conv runs: standard, k 1/3/5, stride 1, 4 spatial sizes x 2
  // channels but 64x56x56: 21; k7 fails for 3 strides x 3 groups x 10 shapes.
  EXPECT_EQ(k->runs_within, 21);
  EXPECT_EQ(k->excludes, 90);
  EXPECT_EQ(k->evidence, "runs 21 pts k<=5; excludes 90 failing pts k 7; bound in [5, 7)");
}

TEST(ProbeLearn, NoisyPointIsAListedResidual) {
  std::vector<probe::ProbeRow> rows = synthetic_rows();
  // A bf16 standard k3 stride-1 Conv on 16x8x8 the hidden rule accepts fails.
  auto noisy = std::find_if(rows.begin(), rows.end(), [](const probe::ProbeRow& r) {
    return r.point.dtype == "bf16" && r.features.op == "Conv" && r.features.max_kernel() == 3 &&
           r.features.max_stride() == 1 && r.features.group_kind == "standard" && r.features.numel() == 1024;
  });
  ASSERT_NE(noisy, rows.end());
  noisy->outcomes[0].status = Status::kError;
  noisy->outcomes[0].error_message = "compiler crashed";
  const probe::DerivedProfile clean = learn(synthetic_rows()), d = learn(rows);
  EXPECT_EQ(d.explained, d.points - 1);
  EXPECT_EQ(d.explained_by_id.at(noisy->point.id), false);
  EXPECT_EQ(d.predicted.at(noisy->point.id), "");
  bool listed = false;
  for (const auto& e : d.envelopes)
    for (const auto& id : e.residuals) listed = listed || id == noisy->point.id;
  EXPECT_TRUE(listed);
  EXPECT_EQ(parse_derived(d).rule("Conv")->max_kernel, 5);
  EXPECT_EQ(parse_derived(d).rule("Conv")->min_spatial, 4);
}

TEST(ProbeLearn, ErrorMessagesDoNotChangeTheRule) {
  std::vector<probe::ProbeRow> rows = synthetic_rows();
  const TargetProfile a = parse_derived(learn(rows));
  measure(rows, [](const std::string&) { return std::string("it failed"); });
  const TargetProfile b = parse_derived(learn(rows));
  ASSERT_EQ(a.ops().size(), b.ops().size());
  for (const auto& [op, ra] : a.ops()) {
    const torq::targets::OpRule& rb = b.ops().at(op);
    EXPECT_EQ(ra.dtypes, rb.dtypes) << op;
    EXPECT_EQ(ra.conv_groups, rb.conv_groups) << op;
    EXPECT_EQ(ra.max_kernel, rb.max_kernel) << op;
    EXPECT_EQ(ra.max_stride, rb.max_stride) << op;
    EXPECT_EQ(ra.min_spatial, rb.min_spatial) << op;
    EXPECT_EQ(ra.max_input_elements, rb.max_input_elements) << op;
    EXPECT_EQ(ra.int_rule != nullptr, rb.int_rule != nullptr) << op;
  }
  EXPECT_EQ(b.fp32_error(), "it failed");
}

TEST(ProbeLearn, ExcludedPointsAreListedNotLearned) {
  std::vector<probe::ProbeRow> rows = synthetic_rows();
  rows[0].outcomes[0].infrastructure = true;
  rows[1].invalid = "kernel larger than the input";
  rows[1].outcomes.clear();
  const probe::DerivedProfile d = learn(rows);
  EXPECT_EQ(d.excluded, (std::vector<std::string>{rows[0].point.id, rows[1].point.id}));
  EXPECT_EQ(d.points, static_cast<int>(rows.size()) - 2);
  EXPECT_EQ(d.predicted.count(rows[0].point.id), 0u);
}

TEST(ProbeLearn, YamlRoundTripsAndReproducesPredictions) {
  const std::vector<probe::ProbeRow> rows = synthetic_rows();
  const TargetProfile base = TargetProfile::resolve("nss", torq::engine::kernel_catalog());
  const probe::DerivedProfile d = probe::learn_profile("nss", rows, &base, torq::engine::kernel_catalog());
  const TargetProfile p = parse_derived(d);
  EXPECT_EQ(p.name(), "nss");
  EXPECT_EQ(p.chip(), "sl2610");
  EXPECT_EQ(p.cost().slices, base.cost().slices);
  EXPECT_EQ(p.rounding(), base.rounding());
  // Unprobed ops of the base are kept, marked.
  ASSERT_NE(p.rule("MatMul"), nullptr);
  EXPECT_EQ(p.rule("MatMul")->max_rank, 2);
  ASSERT_NE(p.rule("MatMul")->int_rule, nullptr);
  EXPECT_FALSE(p.rule("MatMul")->int_rule->max_rank.has_value());
  EXPECT_NE(d.yaml.find("# not probed: copied from nss\n  MatMul:"), std::string::npos);
  for (const auto& r : rows) EXPECT_EQ(probe::refusing_key(p, r.features), d.predicted.at(r.point.id)) << r.point.id;
  EXPECT_EQ(d.explained, d.points);
}

TEST(ProbeLearn, RoundElementBound) {
  EXPECT_EQ(probe::round_element_bound(4096, 36864), 12288);
  EXPECT_EQ(probe::round_element_bound(100000, 1000000), 262144);  // middle 316228
  EXPECT_EQ(probe::round_element_bound(147456, 200704), 147456);
  EXPECT_EQ(probe::round_element_bound(129600, 151200), 131072);
}

namespace {

onnx::NodeProto probe_node(const std::string& op, int64_t group, int64_t k, int64_t s) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name("n0");
  n.add_input("x");
  if (op == "Conv") n.add_input("w");
  n.add_output("y");
  auto ints = [&](const char* name, std::vector<int64_t> v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t e : v) a->add_ints(e);
  };
  if (op == "Softmax") return n;
  if (op == "Conv") {
    auto* g = n.add_attribute();
    g->set_name("group");
    g->set_type(onnx::AttributeProto::INT);
    g->set_i(group);
  }
  ints("kernel_shape", {k, k});
  ints("strides", {s, s});
  return n;
}

// The engine's verdict on a point: "" or its reason.
std::string engine_reason(const torq::engine::ExecutorProfile& p, const probe::ProbeRow& r, int64_t group) {
  const probe::PointFeatures& f = r.features;
  torq::engine::Tensor x(f.dtype, f.input_shape);
  const int64_t c = f.input_shape[1], k = f.kernel.empty() ? 1 : f.kernel[0];
  torq::engine::Tensor w(f.dtype, {c, c / group, k, k});
  const onnx::NodeProto proto = probe_node(f.op, group, k, f.strides.empty() ? 1 : f.strides[0]);
  torq::engine::NodeInfo info(proto, 13);
  std::vector<const torq::engine::Tensor*> in{&x};
  if (f.op == "Conv") in.push_back(&w);
  try {
    p.check(info, in);
  } catch (const torq::base::EngineError& e) {
    return e.reason();
  }
  return "";
}

}  // namespace

TEST(ProbePredict, RefusingKeyAgreesWithTheEngine) {
  const auto nss = torq::engine::ExecutorProfile::resolve("nss");
  struct Case {
    probe::ProbeRow row;
    int64_t group;
    std::string key, reason_part;
  };
  const std::vector<Case> cases = {
      {make_row("Conv", "bf16", 8, 8, 3, 1, "standard", 0), 1, "", ""},
      {make_row("Conv", "fp32", 8, 8, 3, 1, "standard", 1), 1, "fp32", "FP32 not supported"},
      {make_row("Conv", "bf16", 8, 8, 3, 1, "grouped", 2), 4, "conv_groups", "grouped Conv not supported"},
      {make_row("Conv", "bf16", 8, 16, 9, 1, "standard", 3), 1, "max_kernel", "kernel size 9"},
      {make_row("Conv", "bf16", 8, 8, 3, 4, "standard", 4), 1, "max_stride", "stride 4"},
      {make_row("Conv", "bf16", 8, 1, 1, 1, "standard", 5), 1, "min_spatial", "spatial extent of 1"},
      {make_row("Conv", "int8", 8, 1, 1, 1, "standard", 6), 1, "", ""},  // int: min_spatial null
      {make_row("Conv", "int8", 96, 112, 3, 2, "depthwise", 7), 96, "max_strided_input_elements", "stride > 1"},
      {make_row("MaxPool", "bf16", 8, 16, 9, 1, "", 8), 1, "max_kernel", "kernel size 9"},
      {make_row("Softmax", "bf16", 8, 8, 1, 1, "", 9), 1, "op", "not supported on nss"},
  };
  for (const Case& c : cases) {
    const std::string reason = engine_reason(nss, c.row, c.group);
    EXPECT_EQ(probe::refusing_key(nss, c.row.features), c.key) << c.row.point.id << ": " << reason;
    EXPECT_EQ(reason.empty(), c.key.empty()) << c.row.point.id << ": " << reason;
    EXPECT_NE(reason.find(c.reason_part), std::string::npos) << c.row.point.id << ": " << reason;
  }
}

TEST(ProbeCsv, RoundTripsRowsAndRelearnsTheSameProfile) {
  std::vector<probe::ProbeRow> rows = synthetic_rows();
  rows[5].outcomes[0].error_message = "a \"quoted\", multi-line\nmessage";
  rows[6].invalid = "kernel, larger than the input";
  rows[6].outcomes.clear();
  probe::ProbeOutcome css = rows[7].outcomes[0];
  css.executor = Executor::kCss;
  css.infrastructure = true;
  css.runtime_ms = 1.0 / 3;
  rows[7].outcomes.push_back(css);
  rows[8].features.dilations = {2, 2};
  const probe::DerivedProfile d = learn(rows);
  const std::string csv = probe::probe_csv(rows, {d});
  EXPECT_EQ(csv.rfind("point_id,op,dtype,params,seed,executor,status,", 0), 0u);
  const std::vector<probe::ProbeRow> back = probe::read_probe_csv(csv, "probe.csv");
  ASSERT_EQ(back.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const probe::ProbeRow &a = rows[i], &b = back[i];
    EXPECT_EQ(a.point.id, b.point.id);
    EXPECT_EQ(a.point.params, b.point.params);
    EXPECT_EQ(a.point.seed, b.point.seed);
    EXPECT_EQ(a.invalid, b.invalid);
    EXPECT_EQ(a.features.op, b.features.op);
    EXPECT_EQ(a.features.dtype, b.features.dtype);
    EXPECT_EQ(a.features.input_shape, b.features.input_shape);
    EXPECT_EQ(a.features.kernel, b.features.kernel);
    EXPECT_EQ(a.features.strides, b.features.strides);
    EXPECT_EQ(a.features.dilations, b.features.dilations);
    EXPECT_EQ(a.features.group_kind, b.features.group_kind);
    ASSERT_EQ(a.outcomes.size(), b.outcomes.size()) << a.point.id;
    for (size_t j = 0; j < a.outcomes.size(); ++j) {
      EXPECT_EQ(a.outcomes[j].executor, b.outcomes[j].executor);
      EXPECT_EQ(a.outcomes[j].status, b.outcomes[j].status);
      EXPECT_EQ(a.outcomes[j].error_message, b.outcomes[j].error_message);
      EXPECT_EQ(a.outcomes[j].runtime_ms, b.outcomes[j].runtime_ms);
      EXPECT_EQ(a.outcomes[j].infrastructure, b.outcomes[j].infrastructure);
    }
  }
  EXPECT_EQ(learn(back).yaml, d.yaml);
  // The learned columns: a point the profile refuses by its max_kernel.
  EXPECT_NE(csv.find(",1,max_kernel\r\n"), std::string::npos);
}

TEST(ProbeCsv, MalformedInputNamesFileAndLine) {
  const std::string csv = probe::probe_csv(synthetic_rows());
  std::string bad = csv;
  const size_t second = bad.find("\r\n", bad.find("\r\n") + 2) + 2;  // line 3
  const size_t at = bad.find(",nss,", second);
  bad.replace(at, 5, ",npu,");
  try {
    probe::read_probe_csv(bad, "probe.csv");
    FAIL() << "no error";
  } catch (const torq::pipeline::PipelineError& e) {
    EXPECT_EQ(std::string(e.what()), "probe.csv:3: unknown executor 'npu'");
  }
  EXPECT_THROW(probe::read_probe_csv("point_id,op\r\n", "p.csv"), torq::pipeline::PipelineError);
}

TEST(ProbeReport, MarkdownAndHtmlShowSentencesTablesAndResiduals) {
  std::vector<probe::ProbeRow> rows = synthetic_rows();
  auto noisy = std::find_if(rows.begin(), rows.end(), [](const probe::ProbeRow& r) {
    return r.point.dtype == "bf16" && r.features.op == "Conv" && r.features.max_kernel() == 3 &&
           r.features.max_stride() == 1 && r.features.group_kind == "standard" && r.features.numel() == 1024;
  });
  ASSERT_NE(noisy, rows.end());
  noisy->outcomes[0].status = Status::kError;
  const std::string residual = noisy->point.id;
  const probe::DerivedProfile d = learn(rows);
  const std::string md = probe::envelope_md({d}), html = probe::envelope_html({d});
  EXPECT_NE(md.find("## nss"), std::string::npos);
  EXPECT_NE(md.find("### MaxPool (float: bf16)\n\nMaxPool bf16 on nss runs iff kernel ≤ 3"), std::string::npos) << md;
  EXPECT_NE(md.find("| kernel | success | difference | error |"), std::string::npos);
  EXPECT_NE(md.find("Residuals: `" + residual + "`"), std::string::npos);
  EXPECT_NE(html.find("<h3>MaxPool (float: bf16)</h3>"), std::string::npos);
  EXPECT_NE(html.find("<p>Residuals: <code>" + residual + "</code></p>"), std::string::npos);
}

TEST(ProbeDiff, GroupsAChangedPointByTheKeyOfAsRule) {
  const std::vector<probe::ProbeRow> a = synthetic_rows();
  std::vector<probe::ProbeRow> b = a;
  // A newer toolchain runs a bf16 k7 Conv, and one point is gone.
  auto k7 = std::find_if(b.begin(), b.end(), [](const probe::ProbeRow& r) {
    return r.point.dtype == "bf16" && r.features.op == "Conv" && r.features.max_kernel() == 7 &&
           r.features.group_kind == "standard" && r.features.max_stride() == 1 && r.features.min_spatial() == 8;
  });
  ASSERT_NE(k7, b.end());
  k7->outcomes[0].status = Status::kSuccess;
  const std::string gone = b.back().point.id;
  b.pop_back();
  const probe::ProbeDiff d = probe::probe_diff(a, b, {learn(a)}, torq::engine::kernel_catalog());
  ASSERT_EQ(d.changed.size(), 1u);
  ASSERT_EQ(d.changed.count("max_kernel"), 1u);
  ASSERT_EQ(d.changed.at("max_kernel").size(), 1u);
  EXPECT_EQ(d.changed.at("max_kernel")[0].point_id, k7->point.id);
  EXPECT_EQ(d.changed.at("max_kernel")[0].a_status, "error");
  EXPECT_EQ(d.changed.at("max_kernel")[0].b_status, "success");
  ASSERT_EQ(d.only_a.size(), 1u);
  EXPECT_EQ(d.only_a[0].point_id, gone);
  EXPECT_TRUE(d.only_b.empty());
  EXPECT_EQ(d.joined, static_cast<int>(b.size()));
  EXPECT_NE(probe::probe_diff_text(d).find("refused by A's max_kernel (1):"), std::string::npos);
  const auto j = nlohmann::json::parse(probe::probe_diff_json(d));
  EXPECT_EQ(j["changed"]["max_kernel"][0]["point_id"], k7->point.id);
}

// What the probe did not measure is not guessed: without an f32 point the
// float type is the base profile's, not bf16 because bf16 points ran.
TEST(ProbeLearn, TheFloatTypeIsTheBasesWhenNoF32PointWasProbed) {
  std::vector<probe::ProbeRow> rows;
  for (const auto& r : synthetic_rows())
    if (r.features.dtype != torq::base::DType::kF32) rows.push_back(r);
  const auto css = TargetProfile::resolve("css", torq::engine::kernel_catalog());
  const auto d = probe::learn_profile("css", rows, &css, torq::engine::kernel_catalog());
  EXPECT_EQ(d.float_type, torq::base::DType::kF32);
  EXPECT_FALSE(d.float_type_measured);
  EXPECT_NE(d.yaml.find("float_type: f32  # not measured"), std::string::npos) << d.yaml;
  const auto nss = TargetProfile::resolve("nss", torq::engine::kernel_catalog());
  const auto n = probe::learn_profile("nss", rows, &nss, torq::engine::kernel_catalog());
  EXPECT_EQ(n.float_type, torq::base::DType::kBF16);
  EXPECT_EQ(n.fp32_error, nss.fp32_error());
  // With f32 points probed and none running, bf16 is measured.
  const auto m = learn(synthetic_rows());
  EXPECT_TRUE(m.float_type_measured);
  EXPECT_EQ(m.float_type, torq::base::DType::kBF16);
}
