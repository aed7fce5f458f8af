// Recommendation (priority, by timing with fallback), critical failures, and
// the `edit` rules: layer patterns, executor null, tolerance overrides.
#include <gtest/gtest.h>

#include "pipeline/report/edit.h"
#include "pipeline/plan/recommend.h"

using namespace torq::pipeline;

namespace {

ExecResult result(Executor e, Status s, double runtime_ms = -1) {
  ExecResult r;
  r.executor = e;
  r.status = s;
  r.runtime_ms = runtime_ms;
  if (s == Status::kError) r.error_class = "unsupported";
  return r;
}

LayerReport layer(std::vector<ExecResult> results) {
  LayerReport l;
  l.info.id = "Conv_x";
  for (ExecResult& r : results) l.results[r.executor] = r;
  return l;
}

ModelReport model_with(const std::vector<std::string>& ids) {
  ModelReport m;
  m.model_name = "m";
  m.default_tolerance = {0.02, 0.03, 0};
  for (size_t i = 0; i < ids.size(); ++i) {
    LayerReport l;
    l.info.index = static_cast<int>(i);
    l.info.id = ids[i];
    l.info.op_type = ids[i].substr(0, ids[i].find('_'));
    l.recommended = Executor::kNss;
    m.layers.push_back(l);
  }
  return m;
}

}  // namespace

TEST(Recommend, FirstSuccessInPriorityOrder) {
  auto l = layer({result(Executor::kNss, Status::kDifference), result(Executor::kCss, Status::kSuccess),
                  result(Executor::kHost, Status::kSuccess)});
  EXPECT_EQ(recommend(l, false), Executor::kCss);
}

TEST(Recommend, FirstDifferenceWhenNoSuccess) {
  auto l = layer({result(Executor::kNss, Status::kError), result(Executor::kCss, Status::kDifference),
                  result(Executor::kHost, Status::kDifference)});
  EXPECT_EQ(recommend(l, false), Executor::kCss);
}

TEST(Recommend, NoneWhenAllErrorOrUntested) {
  EXPECT_EQ(recommend(layer({result(Executor::kNss, Status::kError), result(Executor::kHost, Status::kError)}), false),
            std::nullopt);
  EXPECT_EQ(recommend(layer({}), false), std::nullopt);
  EXPECT_EQ(recommend(layer({}), true), std::nullopt);
}

TEST(Recommend, ByTimingPicksFastestSuccess) {
  auto l = layer({result(Executor::kNss, Status::kSuccess, 2.0), result(Executor::kCss, Status::kSuccess, 0.5),
                  result(Executor::kHost, Status::kDifference, 0.1)});
  EXPECT_EQ(recommend(l, true), Executor::kCss);
  EXPECT_EQ(recommend(l, false), Executor::kNss);
}

TEST(Recommend, ByTimingTiesGoToPriority) {
  auto l = layer({result(Executor::kNss, Status::kSuccess, 1.0), result(Executor::kHost, Status::kSuccess, 1.0)});
  EXPECT_EQ(recommend(l, true), Executor::kNss);
}

TEST(Recommend, ByTimingFastestDifferenceWhenNoSuccess) {
  auto l = layer({result(Executor::kNss, Status::kDifference, 3.0), result(Executor::kCss, Status::kError, 0.1),
                  result(Executor::kHost, Status::kDifference, 1.5)});
  EXPECT_EQ(recommend(l, true), Executor::kHost);
}

TEST(Recommend, ByTimingFallsBackToPriorityWhenTimingMissing) {
  // The seed returned none here; DESIGN §4 falls back to priority order.
  auto l = layer({result(Executor::kNss, Status::kError), result(Executor::kCss, Status::kSuccess, -1),
                  result(Executor::kHost, Status::kSuccess, 0.2)});
  EXPECT_EQ(recommend(l, true), Executor::kCss);
  auto d = layer({result(Executor::kNss, Status::kDifference), result(Executor::kHost, Status::kDifference)});
  EXPECT_EQ(recommend(d, true), Executor::kNss);
}

TEST(Recommend, MapKeyDecidesTheExecutor) {
  LayerReport l;
  l.results[Executor::kCss] = result(Executor::kHost, Status::kSuccess);  // stale executor field
  EXPECT_EQ(recommend(l, false), Executor::kCss);
}

TEST(CriticalFailure, EveryTestedExecutorError) {
  EXPECT_TRUE(is_critical_failure(layer({result(Executor::kNss, Status::kError)})));
  EXPECT_TRUE(is_critical_failure(layer({result(Executor::kNss, Status::kError), result(Executor::kCss, Status::kError),
                                         result(Executor::kHost, Status::kError)})));
  EXPECT_FALSE(is_critical_failure(
      layer({result(Executor::kNss, Status::kError), result(Executor::kHost, Status::kDifference)})));
  EXPECT_FALSE(is_critical_failure(layer({})));
}

TEST(EditMatch, AllSelectsEveryLayerInOrder) {
  auto m = model_with({"Conv_a", "Relu_b", "Conv_c"});
  EXPECT_EQ(match_layers(m, "ALL"), (std::vector<std::string>{"Conv_a", "Relu_b", "Conv_c"}));
  EXPECT_EQ(match_layers(m, "all"), (std::vector<std::string>{"Conv_a", "Relu_b", "Conv_c"}));
}

TEST(EditMatch, ExactBeatsSubstring) {
  auto m = model_with({"Conv_1", "Conv_10", "Conv_11"});
  EXPECT_EQ(match_layers(m, "Conv_1"), (std::vector<std::string>{"Conv_1"}));
  EXPECT_EQ(match_layers(m, "onv_1"), (std::vector<std::string>{"Conv_1", "Conv_10", "Conv_11"}));
}

TEST(EditMatch, CaseInsensitiveExactAndSubstring) {
  auto m = model_with({"Conv_1", "conv_1x", "Relu_2"});
  EXPECT_EQ(match_layers(m, "CONV_1"), (std::vector<std::string>{"Conv_1"}));
  EXPECT_EQ(match_layers(m, "RELU"), (std::vector<std::string>{"Relu_2"}));
}

TEST(EditMatch, FnmatchGlob) {
  auto m = model_with({"Conv_a", "Relu_b", "Conv_c", "MaxPool_d"});
  EXPECT_EQ(match_layers(m, "Conv_*"), (std::vector<std::string>{"Conv_a", "Conv_c"}));
  EXPECT_EQ(match_layers(m, "*_?"), (std::vector<std::string>{"Conv_a", "Relu_b", "Conv_c", "MaxPool_d"}));
  EXPECT_EQ(match_layers(m, "conv_[ab]"), (std::vector<std::string>{"Conv_a"}));
  EXPECT_TRUE(match_layers(m, "Gemm*").empty());
  EXPECT_TRUE(match_layers(m, "").empty());
}

TEST(Edit, NoMatchThrowsAndLeavesReportUnchanged) {
  auto m = model_with({"Conv_a"});
  EditRequest req;
  req.pattern = "Gemm";
  req.executor = std::optional<Executor>(Executor::kHost);
  try {
    apply_edit(m, req);
    FAIL() << "expected PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("no layer matches 'Gemm'; closest layer ids: ", 0), 0u) << e.what();
  }
  EXPECT_EQ(m.layers[0].recommended, Executor::kNss);
}

TEST(Edit, SetsExecutorOnMatchedLayers) {
  auto m = model_with({"Conv_a", "Relu_b", "Conv_c"});
  EditRequest req;
  req.pattern = "Conv_*";
  req.executor = std::optional<Executor>(Executor::kCss);
  EXPECT_EQ(apply_edit(m, req), (std::vector<std::string>{"Conv_a", "Conv_c"}));
  EXPECT_EQ(m.layers[0].recommended, Executor::kCss);
  EXPECT_EQ(m.layers[1].recommended, Executor::kNss);
  EXPECT_EQ(m.layers[2].recommended, Executor::kCss);
}

TEST(Edit, ExecutorNullClearsRecommendation) {
  auto m = model_with({"Conv_a", "Relu_b"});
  EditRequest req;
  req.pattern = "Relu_b";
  req.executor = std::optional<Executor>();  // set, to null
  EXPECT_EQ(apply_edit(m, req), (std::vector<std::string>{"Relu_b"}));
  EXPECT_EQ(m.layers[1].recommended, std::nullopt);
  EXPECT_EQ(m.layers[0].recommended, Executor::kNss);
}

TEST(Edit, ToleranceKeepsTheOtherValueFromEffectiveTolerance) {
  auto m = model_with({"Conv_a", "Relu_b"});
  EditRequest req;
  req.pattern = "Conv_a";
  req.tol_max = 0.5;
  apply_edit(m, req);
  ASSERT_TRUE(m.layers[0].tolerance.has_value());
  EXPECT_EQ(m.layers[0].tolerance->fp_avg_tol, 0.02);  // model default
  EXPECT_EQ(m.layers[0].tolerance->fp_max_tol, 0.5);
  EXPECT_FALSE(m.layers[1].tolerance.has_value());
  EXPECT_EQ(m.layers[0].recommended, Executor::kNss);  // executor untouched

  EditRequest again;
  again.pattern = "Conv_a";
  again.tol_avg = 0.1;
  apply_edit(m, again);
  EXPECT_EQ(m.layers[0].tolerance->fp_avg_tol, 0.1);
  EXPECT_EQ(m.layers[0].tolerance->fp_max_tol, 0.5);  // the earlier override
}

TEST(Edit, RejectsEmptyAndBadRequests) {
  auto m = model_with({"Conv_a"});
  EditRequest nothing;
  nothing.pattern = "Conv_a";
  EXPECT_THROW(apply_edit(m, nothing), PipelineError);
  EditRequest negative;
  negative.pattern = "Conv_a";
  negative.tol_avg = -1;
  EXPECT_THROW(apply_edit(m, negative), PipelineError);
  EXPECT_FALSE(m.layers[0].tolerance.has_value());
}

TEST(EditList, FiltersCaseInsensitivelyAndCounts) {
  auto m = model_with({"Conv_a", "Relu_b", "Conv_c"});
  const std::string all = render_list(m, "");
  EXPECT_NE(all.find("Relu_b"), std::string::npos);
  EXPECT_NE(all.find("Total: 3 layer(s)\n"), std::string::npos);
  const std::string conv = render_list(m, "conv");
  EXPECT_EQ(conv.find("Relu_b"), std::string::npos);
  EXPECT_NE(conv.find("Total: 2 layer(s) (filtered from 3)\n"), std::string::npos);
  EXPECT_EQ(render_list(m, "gemm"), "No layers match 'gemm'.\nAvailable layers: Conv_a, Relu_b, Conv_c\n");
}
