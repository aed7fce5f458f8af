// Pure pieces of `torq-gen-config run`, subgraphs and auto-bisect: the
// bisect search, subgraph references and extraction, the full-model rule and
// report section, the debug-IR annotation, and the job/result fields.
#include <gtest/gtest.h>

#include <cmath>
#include <onnx/onnx_pb.h>

#include "coordinator/gen_config/debug_ir.h"
#include "pipeline/plan/bisect.h"
#include "pipeline/wire/codec.h"
#include "pipeline/report/full_model.h"
#include "pipeline/model/model_import.h"
#include "pipeline/plan/plan.h"
#include "pipeline/model/subgraph.h"
#include "worker/sim/demo_model.h"

using namespace torq::pipeline;
using json = nlohmann::ordered_json;

namespace {

// Runs a bisect of [0, n-1] where a range fails iff it contains [s, e].
std::pair<Bisector::Range, int> bisect_window(uint32_t n, uint32_t s, uint32_t e) {
  Bisector b(0, n - 1);
  while (auto r = b.next()) b.report(r->first <= s && r->second >= e);
  return {b.result(), b.runs()};
}

}  // namespace

TEST(Bisect, FindsEveryWindowOfA40LayerModel) {
  for (uint32_t s = 0; s < 40; ++s)
    for (uint32_t e = s; e < 40; ++e) {
      auto [r, runs] = bisect_window(40, s, e);
      ASSERT_EQ(r.first, s) << s << ".." << e;
      ASSERT_EQ(r.second, e) << s << ".." << e;
      EXPECT_LE(runs, 12);  // 2 * ceil(log2(40))
    }
}

TEST(Bisect, A300LayerModelNeedsFewerThan20RangeRuns) {
  int worst = 0;
  for (uint32_t s : {0u, 1u, 57u, 150u, 298u, 299u})
    for (uint32_t e : {s, s + 1, s + 7, 299u}) {
      if (e > 299) continue;
      auto [r, runs] = bisect_window(300, s, e);
      EXPECT_EQ(r, (Bisector::Range{s, e}));
      worst = std::max(worst, runs);
    }
  EXPECT_LE(worst, 18);
  EXPECT_GE(worst, 16);  // it does search: ~2 log2(300)
}

TEST(Bisect, ARangeOfOneLayerNeedsNoRun) {
  Bisector b(5, 5);
  EXPECT_TRUE(b.done());
  EXPECT_EQ(b.result(), (Bisector::Range{5, 5}));
  EXPECT_EQ(b.runs(), 0);
}

class DemoModel : public ::testing::Test {
 protected:
  void SetUp() override { model = ImportedModel::from_bytes(torq::sim::build_demo_model(), "demo"); }
  std::unique_ptr<ImportedModel> model;
};

TEST_F(DemoModel, SubgraphEndsResolveByIdOutputNameAndIndex) {
  ASSERT_GT(model->layers().size(), 8u);
  const LayerInfo& l3 = model->layers()[3];
  EXPECT_EQ(resolve_layer(*model, l3.id, "--subgraph-from"), 3u);
  EXPECT_EQ(resolve_layer(*model, "3", "--subgraph-from"), 3u);
  const std::string out = l3.id.substr(l3.op_type.size() + 1);
  EXPECT_EQ(resolve_layer(*model, out, "--subgraph-from"), 3u);
  const LayerRange r = resolve_range(*model, "1", l3.id);
  EXPECT_EQ(r.first, 1u);
  EXPECT_EQ(r.last, 3u);
  EXPECT_EQ(subgraph_name("demo", r), "demo_subgraph_1_3");
}

TEST_F(DemoModel, UnknownSubgraphEndListsTheClosestLayerIds) {
  try {
    resolve_layer(*model, "Conv_conv9", "--subgraph-to");
    FAIL() << "no error";
  } catch (const PipelineError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--subgraph-to 'Conv_conv9': no such layer in demo"), std::string::npos) << m;
    EXPECT_NE(m.find("closest layer ids: Conv_conv"), std::string::npos) << m;
  }
  EXPECT_THROW(resolve_layer(*model, "99", "--subgraph-to"), PipelineError);
  EXPECT_THROW(resolve_range(*model, "5", "2"), PipelineError);
}

TEST_F(DemoModel, ExtractedSubgraphHasExactlyTheRangesLayersAndTypedBoundaries) {
  const LayerRange r{1, 5};
  const onnx::ModelProto sub = extract_subgraph(*model, r);
  std::vector<std::string> ops;
  for (const auto& n : sub.graph().node())
    if (n.op_type() != "Constant") ops.push_back(n.op_type());
  ASSERT_EQ(ops.size(), 5u);
  const auto layers = subgraph_layers(*model, r);
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i], model->layers()[1 + i].op_type);
    EXPECT_EQ(layers[i].index, static_cast<int>(i));
    EXPECT_EQ(layers[i].id, model->layers()[1 + i].id);
  }
  // One data input (the output of layer 0) with its inferred shape; weights are initializers.
  ASSERT_EQ(sub.graph().input_size(), 1);
  EXPECT_EQ(sub.graph().input(0).type().tensor_type().shape().dim_size(), 4);
  EXPECT_GE(sub.graph().initializer_size(), 2);
  ASSERT_GE(sub.graph().output_size(), 1);
  // It is a valid model on its own: it imports.
  EXPECT_NO_THROW(ImportedModel::from_bytes(sub.SerializeAsString(), "sub"));
}

TEST(FullModelRule, DefaultRuleCountsElementsOverToleranceRelaxedRuleBoundsTheWorst) {
  ExecResult r;
  r.status = Status::kDifference;
  r.outputs.push_back(OutputDiff{"y", 0.5, 0.1, 0.1, 0.2, 0.99, 3, 100, 0});
  r.max_abs = 0.5;
  r.max_rel = 0.2;
  FullModelRule rule;
  EXPECT_FALSE(full_model_passes(r, rule));
  rule.tolerance.allowed_wrong = 0.05;
  EXPECT_TRUE(full_model_passes(r, rule));
  json rep = {{"tolerance", {{"max_relative_diff", 0.25}, {"max_absolute_diff", 0.4}}}};
  read_relaxed_tolerance(rep, "r.json", &rule);
  EXPECT_FALSE(full_model_passes(r, rule));  // max_abs 0.5 > 0.4
  rule.max_absolute_diff = 0.6;
  EXPECT_TRUE(full_model_passes(r, rule));
  r.status = Status::kError;
  EXPECT_FALSE(full_model_passes(r, rule));
  json bad = {{"tolerance", {{"max_relative_diff", "x"}}}};
  EXPECT_THROW(read_relaxed_tolerance(bad, "r.json", &rule), PipelineError);
}

TEST(FullModelSection, JsonAndTextCarryCountsTimesDecidedOpsAndTheFailingRange) {
  FullModelRun run;
  run.range = {0, 2};
  run.layers = {{0, "Conv_a", "Conv", "3:5"}, {1, "Relu_b", "Relu", "4:5"}, {2, "Mul_c", "Mul", "5:5"}};
  run.decided = {0, 1, 0};
  run.result.status = Status::kDifference;
  run.result.placed = {Executor::kNss, Executor::kCss, Executor::kNss};
  run.result.layer_ms = {1.0, 2.0, 0.5};
  run.result.runtime_ms = 3.5;
  run.result.outputs.push_back(OutputDiff{"y", 0.5, 0.1, 0.1, 0.2, 0.98, 4, 10, 0});
  run.result.max_abs = 0.5;
  run.result.max_rel = 0.2;
  run.result.pcc = 0.98;
  run.result.worker_id = "w1";
  run.failing = LayerRange{1, 2};
  run.failing_result = run.result;
  run.bisect_runs = 3;
  const json j = full_model_json(run);
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["executor_counts"]["nss"], 2);
  EXPECT_EQ(j["executor_counts"]["css"], 1);
  EXPECT_DOUBLE_EQ(j["simulated_time_ms"]["nss"].get<double>(), 1.5);
  EXPECT_EQ(j["compiler_decided"][0]["layer"], "Relu_b");
  EXPECT_EQ(j["metrics"]["elements_over_tolerance"], 4);
  EXPECT_EQ(j["worker"], "w1");
  EXPECT_EQ(j["first_failing_range"]["first_layer"], "Relu_b");
  EXPECT_EQ(j["first_failing_range"]["last_node"], 2);
  EXPECT_EQ(j["first_failing_range"]["bisect_runs"], 3);
  const std::string t = full_model_text(run);
  EXPECT_EQ(t.rfind("--- Full Model Comparison ---\n  Max relative difference: 0.2\n  Max absolute difference: 0.5\n"
                    "  Number of differences: 4 out of 10 [40.00%]\n", 0), 0u) << t;
  EXPECT_NE(t.find("First failing range: layers 1..2 (Relu_b .. Mul_c"), std::string::npos) << t;
  EXPECT_NE(t.find("Placed by the compiler (no assignment): Relu_b->css"), std::string::npos) << t;
}

TEST(FullModelSection, AttachReplacesAnEarlierBlockBeforeThePerLayerTable) {
  FullModelRun run;
  run.range = {0, 0};
  run.layers = {{0, "Relu_a", "Relu", ""}};
  run.result.status = Status::kSuccess;
  run.passed = true;
  json rep = {{"ops", json::object()},
              {"final_report_text", "HEADER\n\nStatus Summary:\n  x\n\nPer-Layer Status:\n  rows\n"}};
  attach_full_model(&rep, run);
  attach_full_model(&rep, run);  // twice: still one block
  const std::string t = rep["final_report_text"];
  EXPECT_EQ(t.find("--- Full Model Comparison ---"), t.rfind("--- Full Model Comparison ---"));
  EXPECT_LT(t.find("--- Full Model Comparison ---"), t.find("Per-Layer Status:"));
  EXPECT_EQ(rep["full_model"]["passed"], true);
  EXPECT_TRUE(rep["ops"].is_object());
}

TEST(DebugIr, EveryOperatorGetsItsExecutorAttribute) {
  const std::string mlir =
      "module {\n"
      "    %0 = torch.operator \"onnx.Relu\"(%arg0) : (!t) -> !t\n"
      "    %1 = torch.operator \"onnx.Conv\"(%0, %w) {torch.onnx.group = 1 : si64} : (!t, !t) -> !t\n"
      "}\n";
  const std::string a = torq::coordinator::annotate_executors(mlir, {"nss", "host"});
  EXPECT_NE(a.find("\"onnx.Relu\"(%arg0) {torq-executor = \"nss\"} : (!t)"), std::string::npos) << a;
  EXPECT_NE(a.find("\"onnx.Conv\"(%0, %w) {torq-executor = \"host\", torch.onnx.group = 1 : si64}"),
            std::string::npos) << a;
}

TEST(Codec, AssignedRunFieldsRoundTripAndAreValidated) {
  JobSpec j;
  j.id = "x";
  j.model_hash = "h";
  j.first_node = 2;
  j.last_node = 4;
  j.assignment = {Executor::kNss, Executor::kCss, Executor::kHost};
  j.executor_targets = {"", "", ""};
  j.decide = {0, 1, 0};
  const std::string bytes = encode_job(j);
  const JobSpec k = decode_job(bytes.data(), bytes.size());
  EXPECT_EQ(k.decide, j.decide);
  EXPECT_EQ(k.assignment, j.assignment);
  ExecResult r;
  r.placed = {Executor::kCss, Executor::kHost};
  r.layer_ms = {0.25, 1.5};
  const std::string rb = encode_result(r);
  const ExecResult q = decode_result(rb.data(), rb.size());
  EXPECT_EQ(q.placed, r.placed);
  EXPECT_EQ(q.layer_ms, r.layer_ms);
  // The compiler's choice is part of the cache key.
  JobSpec d = j;
  d.decide = {0, 0, 0};
  EXPECT_NE(cache_key(j, "p", "e"), cache_key(d, "p", "e"));
  j.decide = {1};  // one flag for three layers
  EXPECT_THROW(decode_job(encode_job(j).data(), encode_job(j).size()), PipelineError);
}

TEST(Planner, FilterMatchesTheSeedsCaseNames) {
  std::vector<LayerInfo> layers = {{0, "Conv_a", "Conv", ""}, {1, "Relu_b", "Relu", ""}};
  PlanOptions po;
  po.case_prefix = "m";
  po.filter = "m_layer_Relu_1_css";
  Planner p("hash", layers, {}, po, {});
  auto j = p.next();
  ASSERT_TRUE(j);
  EXPECT_EQ(j->first_node, 1u);
  EXPECT_EQ(j->executor, Executor::kCss);
  EXPECT_FALSE(p.next());
}
