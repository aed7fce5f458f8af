// `torq-gen-config compare`: alignment by id and by op-type sequence (renamed
// exports, equivalent op types, gaps), agreement and confusion matrices on
// hand-written reports, and the real SL2610 reports compared with themselves.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/report/report.h"
#include "pipeline/report/report_compare.h"

using namespace torq::pipeline;
namespace fs = std::filesystem;

namespace {

// One layer of a hand-written report: id and executor -> status.
struct L {
  std::string id;
  std::vector<std::pair<std::string, std::string>> execs;
};

std::string report_text(const std::string& model, const std::vector<L>& layers) {
  std::string ops;
  for (size_t i = 0; i < layers.size(); ++i) {
    std::string ex;
    for (const auto& [name, status] : layers[i].execs) {
      ex += (ex.empty() ? "" : ",") + ("\"" + name + "\": {\"status\": \"" + status + "\"");
      if (status == "error") ex += ", \"failure_report\": {\"type\": \"compile\", \"summary\": \"boom " + name + "\"}";
      ex += "}";
    }
    ops += (i ? ",\n" : "") + ("\"" + layers[i].id + "\": {\"executors\": {" + ex + "}, \"_node_index\": " +
                               std::to_string(i) + "}");
  }
  return "{\"version\": \"1.1\", \"model_name\": \"" + model + "\", \"ops\": {" + ops + "}}";
}

ModelReport make(const std::string& model, const std::vector<L>& layers) {
  return report_from_json(report_text(model, layers), model + ".json");
}

using M = std::array<std::array<int, 2>, 2>;

const ExecutorCompare& exec(const CompareResult& r, Executor e) {
  for (const auto& x : r.executors)
    if (x.executor == e) return x;
  throw std::runtime_error("executor not compared");
}

L ok(const std::string& id) { return {id, {{"nss", "success"}, {"host", "success"}}}; }

}  // namespace

TEST(ReportCompare, IdenticalReportsAgreeFully) {
  const ModelReport a = make("m", {ok("Conv_x"), {"Relu_y", {{"nss", "error"}, {"host", "difference"}}},
                                   {"Add_z", {{"nss", "difference"}}}});
  const CompareResult r = compare_reports(a, a);
  EXPECT_EQ(r.method, AlignMethod::kById);
  EXPECT_EQ(r.pairs.size(), 3u);
  EXPECT_TRUE(r.a.only_here.empty());
  EXPECT_TRUE(r.b.only_here.empty());
  ASSERT_EQ(r.executors.size(), 2u);  // nss, host (no css in either)
  EXPECT_EQ(r.executors[0].executor, Executor::kNss);
  EXPECT_EQ(r.executors[0].total.total(), 3);
  EXPECT_EQ(r.executors[1].total.total(), 2);  // Add_z has no host result: not counted
  for (const auto& e : r.executors) {
    EXPECT_DOUBLE_EQ(e.agreement(), 1.0);
    EXPECT_TRUE(e.disagreements.empty());
  }
  EXPECT_EQ(exec(r, Executor::kNss).total.counts, (M{{{2, 0}, {0, 1}}}));
  EXPECT_NE(render_compare(r).find("agreement 100.0% (3/3"), std::string::npos);
  const auto j = compare_json(r);
  EXPECT_EQ(j["alignment"]["method"], "id");
  EXPECT_EQ(j["executors"]["nss"]["agreement"], 1.0);
  EXPECT_TRUE(j["executors"]["nss"]["disagreements"].empty());
}

TEST(ReportCompare, RenamedExportAlignsByOpSequence) {
  const ModelReport a = make("a", {ok("Conv_/conv1/Conv_output_0"), ok("Relu_/relu/Relu_output_0"),
                                   ok("Conv_/conv2/Conv_output_0"), ok("Add_/add/Add_output_0"),
                                   ok("GlobalAveragePool_/pool/GlobalAveragePool_output_0"), ok("Gemm_logits")});
  const ModelReport b = make("b", {ok("Conv_123"), ok("Relu_124"), ok("Conv_125"), ok("Add_126"),
                                   ok("ReduceMean_127"), ok("Flatten_128"), ok("MatMul_129")});
  const CompareResult r = compare_reports(a, b);
  EXPECT_EQ(r.method, AlignMethod::kByOpSequence);
  EXPECT_EQ(r.pairs, (std::vector<std::pair<int, int>>{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 6}}));
  EXPECT_TRUE(r.a.only_here.empty());
  EXPECT_EQ(r.b.only_here, std::vector<std::string>{"Flatten_128"});
  EXPECT_TRUE(r.mismatches.empty());  // GlobalAveragePool = ReduceMean, Gemm = MatMul
  for (const auto& e : r.executors) {
    EXPECT_EQ(e.total.total(), 6);
    EXPECT_DOUBLE_EQ(e.agreement(), 1.0);
  }
  const auto j = compare_json(r);
  EXPECT_EQ(j["alignment"]["method"], "op_sequence");
  EXPECT_EQ(j["alignment"]["aligned"], 6);
  EXPECT_EQ(j["alignment"]["only_in_b"], 1);
  EXPECT_NE(render_compare(r).find("1 only in B"), std::string::npos);
}

TEST(ReportCompare, MismatchedOpTypesStayAlignedAndAreCounted) {
  const ModelReport a = make("a", {ok("Conv_a"), ok("Relu_b"), ok("Add_c")});
  const ModelReport b = make("b", {ok("Conv_1"), ok("Sigmoid_2"), ok("Add_3")});
  const CompareResult r = compare_reports(a, b);
  EXPECT_EQ(r.pairs.size(), 3u);
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_EQ(r.mismatches[0].a_op, "Relu");
  EXPECT_EQ(r.mismatches[0].b_op, "Sigmoid");
}

TEST(ReportCompare, KnownConfusionMatrix) {
  // nss: Conv x3 (A/B: ok/ok, ok/err, err/err), Relu x2 (err/ok, ok/ok),
  // Add x1 (untested in B: not counted); css only in A: not compared.
  const ModelReport a = make("a", {{"Conv_1", {{"nss", "success"}, {"css", "success"}}},
                                   {"Conv_2", {{"nss", "difference"}}},
                                   {"Conv_3", {{"nss", "error"}}},
                                   {"Relu_4", {{"nss", "error"}}},
                                   {"Relu_5", {{"nss", "success"}}},
                                   {"Add_6", {{"nss", "success"}}}});
  const ModelReport b = make("b", {{"Conv_1", {{"nss", "difference"}}},
                                   {"Conv_2", {{"nss", "error"}}},
                                   {"Conv_3", {{"nss", "error"}}},
                                   {"Relu_4", {{"nss", "success"}}},
                                   {"Relu_5", {{"nss", "success"}}},
                                   {"Add_6", {}}});
  const CompareResult r = compare_reports(a, b);
  EXPECT_EQ(r.method, AlignMethod::kById);
  ASSERT_EQ(r.executors.size(), 1u);
  const ExecutorCompare& e = r.executors[0];
  EXPECT_EQ(e.executor, Executor::kNss);
  EXPECT_EQ(e.by_op_type.at("Conv").counts, (M{{{1, 1}, {0, 1}}}));
  EXPECT_EQ(e.by_op_type.at("Relu").counts, (M{{{1, 0}, {1, 0}}}));
  EXPECT_EQ(e.by_op_type.count("Add"), 0u);
  EXPECT_EQ(e.total.counts, (M{{{2, 1}, {1, 1}}}));
  EXPECT_DOUBLE_EQ(e.agreement(), 3.0 / 5.0);
  ASSERT_EQ(e.disagreements.size(), 2u);
  EXPECT_EQ(e.disagreements[0].a_id, "Conv_2");
  EXPECT_EQ(e.disagreements[0].b_status, Status::kError);
  EXPECT_EQ(e.disagreements[0].b_failure, "boom nss");
  EXPECT_EQ(e.disagreements[1].a_id, "Relu_4");
  EXPECT_EQ(e.disagreements[1].a_failure, "boom nss");
  const auto j = compare_json(r);
  EXPECT_EQ(j["executors"]["nss"]["confusion"]["by_op_type"]["Conv"]["a_runs_b_fails"], 1);
  EXPECT_EQ(j["executors"]["nss"]["compared"], 5);
  EXPECT_EQ(j["executors"]["nss"]["agreed"], 3);
  // Restricted to an executor absent from B: listed, nothing compared.
  const CompareResult css = compare_reports(a, b, {Executor::kCss, "", ""});
  ASSERT_EQ(css.executors.size(), 1u);
  EXPECT_TRUE(std::isnan(css.executors[0].agreement()));
  EXPECT_TRUE(compare_json(css)["executors"]["css"]["agreement"].is_null());
}

TEST(ReportCompare, IdAlignmentListsUnalignedLayers) {
  std::vector<L> la, lb;
  for (int i = 0; i < 10; ++i) la.push_back(ok("Conv_" + std::to_string(i)));
  lb = la;
  lb.back().id = "Conv_new";  // 9 of 10 ids in B: still by id
  const CompareResult r = compare_reports(make("a", la), make("b", lb));
  EXPECT_EQ(r.method, AlignMethod::kById);
  EXPECT_EQ(r.a.only_here, std::vector<std::string>{"Conv_9"});
  EXPECT_EQ(r.b.only_here, std::vector<std::string>{"Conv_new"});
}

TEST(ReportCompare, FailureSummariesAreOneShortLine) {
  std::string text = report_text("a", {{"Conv_1", {{"nss", "error"}}}});
  text.replace(text.find("boom nss"), 8, std::string(150, 'x') + "\\nsecond line");
  const ModelReport a = report_from_json(text, "a.json");
  const ModelReport b = make("b", {{"Conv_1", {{"nss", "success"}}}});
  const CompareResult r = compare_reports(a, b);
  ASSERT_EQ(r.executors[0].disagreements.size(), 1u);
  const std::string& f = r.executors[0].disagreements[0].a_failure;
  EXPECT_EQ(f.size(), 100u);
  EXPECT_EQ(f.find('\n'), std::string::npos);
}

TEST(ReportCompare, OpTypeEquivalences) {
  EXPECT_TRUE(op_types_equivalent("GlobalAveragePool", "ReduceMean"));
  EXPECT_TRUE(op_types_equivalent("MatMul", "Gemm"));
  EXPECT_TRUE(op_types_equivalent("Flatten", "Reshape"));
  EXPECT_TRUE(op_types_equivalent("Clip", "Relu6"));
  EXPECT_FALSE(op_types_equivalent("Relu", "Clip"));
  LayerReport l;
  l.info.id = "GlobalAveragePool_/pool/out";
  EXPECT_EQ(layer_op_type(l), "GlobalAveragePool");
}

#ifdef TORQ_SHARED_REFERENCE
TEST(ReportCompare, RealSl2610ReportsAgreeWithThemselves) {
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(TORQ_SHARED_REFERENCE)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("torq_gen_config_", 0) != 0 || name.find("_compiler.json") != std::string::npos ||
        entry.path().extension() != ".json")
      continue;
    SCOPED_TRACE(name);
    ++seen;
    const ModelReport r = read_report_file(entry.path().string());
    const CompareResult c = compare_reports(r, r);
    EXPECT_EQ(c.method, AlignMethod::kById);
    EXPECT_EQ(c.pairs.size(), r.layers.size());
    ASSERT_FALSE(c.executors.empty());
    for (const auto& e : c.executors) {
      EXPECT_GT(e.total.total(), 0);
      EXPECT_DOUBLE_EQ(e.agreement(), 1.0);
      EXPECT_TRUE(e.disagreements.empty());
    }
  }
  EXPECT_GT(seen, 0);
}
#endif  // TORQ_SHARED_REFERENCE
