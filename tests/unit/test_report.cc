// Report JSON v1.1: round trip, null recommendations, compiler JSON, error
// messages for bad files, seed-tool compatibility, atomic writes, and the
// `view` renderings.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "pipeline/report/report.h"
#include "pipeline/report/view.h"

using namespace torq::pipeline;
namespace fs = std::filesystem;

namespace {

ExecResult exec(Executor e, Status s) {
  ExecResult r;
  r.executor = e;
  r.status = s;
  return r;
}

// Four layers covering every field the report stores.
ModelReport sample_report() {
  ModelReport m;
  m.model_name = "tiny";
  m.default_tolerance = {0.01, 0.02, 0.001};

  LayerReport conv;
  conv.info = {0, "Conv_c1", "Conv", "4:10"};
  ExecResult nss = exec(Executor::kNss, Status::kSuccess);
  nss.job_id = "job-1";
  nss.max_abs = 0.25;
  nss.max_rel = 0.0078125;
  nss.pcc = 0.9999;
  nss.tolerance_used = {0.01, 0.02, 0.001};
  nss.runtime_ms = 0.125;
  nss.timing_runs = 3;
  nss.host_ms = 12.5;
  nss.worker_id = "w1";
  nss.toolchain = "sim-0.1";
  nss.attempts = 2;
  nss.cached = true;
  nss.outputs.push_back({"c1", 0.25, 0.01, 0.02, 0.0078125, 0.9999, 0, 1024, 0});
  ExecResult css = exec(Executor::kCss, Status::kDifference);
  css.max_abs = std::numeric_limits<double>::infinity();
  css.max_rel = 1.5;
  css.pcc = std::numeric_limits<double>::quiet_NaN();
  css.runtime_ms = 2.0;
  css.timing_runs = 1;
  ExecResult host = exec(Executor::kHost, Status::kError);
  host.error_class = "FAILED_COMPILATION";
  host.error_message = "conv: unsupported dilation\nsecond line";
  conv.results = {{Executor::kNss, nss}, {Executor::kCss, css}, {Executor::kHost, host}};
  conv.recommended = Executor::kNss;
  conv.tolerance = Tolerance{0.05, 0.06, 0};
  m.layers.push_back(conv);

  LayerReport relu;
  relu.info = {1, "Relu_r", "Relu", ""};
  ExecResult e1 = exec(Executor::kNss, Status::kError);
  e1.error_class = "unsupported";
  e1.error_message = "bf16 Relu not supported on nss";
  e1.dedup_of = "Relu_q";
  ExecResult e2 = exec(Executor::kHost, Status::kError);
  e2.error_class = "timeout";
  e2.error_message = "timed out after 60000 ms";
  relu.results = {{Executor::kNss, e1}, {Executor::kHost, e2}};
  relu.dedup_of = "Relu_q";
  m.layers.push_back(relu);

  LayerReport reshape;
  reshape.info = {2, "Reshape_y", "Reshape", "9:10"};  // located, but no recommendation
  m.layers.push_back(reshape);

  LayerReport add;
  add.info = {3, "Add_z", "Add", ""};  // recommended, but no location
  add.results[Executor::kHost] = exec(Executor::kHost, Status::kSuccess);
  add.recommended = Executor::kHost;
  m.layers.push_back(add);
  return m;
}

bool same_double(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expect_same(const ExecResult& a, const ExecResult& b, const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(a.job_id, b.job_id);
  EXPECT_EQ(a.executor, b.executor);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.error_class, b.error_class);
  EXPECT_EQ(a.error_message, b.error_message);
  EXPECT_TRUE(same_double(a.max_abs, b.max_abs)) << a.max_abs << " vs " << b.max_abs;
  EXPECT_TRUE(same_double(a.max_rel, b.max_rel));
  EXPECT_TRUE(same_double(a.pcc, b.pcc)) << a.pcc << " vs " << b.pcc;
  EXPECT_EQ(a.tolerance_used, b.tolerance_used);
  EXPECT_EQ(a.runtime_ms, b.runtime_ms);
  EXPECT_EQ(a.timing_runs, b.timing_runs);
  EXPECT_EQ(a.host_ms, b.host_ms);
  EXPECT_EQ(a.worker_id, b.worker_id);
  EXPECT_EQ(a.toolchain, b.toolchain);
  EXPECT_EQ(a.attempts, b.attempts);
  EXPECT_EQ(a.cached, b.cached);
  EXPECT_EQ(a.dedup_of, b.dedup_of);
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const OutputDiff &x = a.outputs[i], &y = b.outputs[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.max_abs, y.max_abs);
    EXPECT_EQ(x.mean_abs, y.mean_abs);
    EXPECT_EQ(x.rmse, y.rmse);
    EXPECT_EQ(x.max_rel, y.max_rel);
    EXPECT_EQ(x.pcc, y.pcc);
    EXPECT_EQ(x.over_tol, y.over_tol);
    EXPECT_EQ(x.size, y.size);
    EXPECT_EQ(x.nan_mismatch, y.nan_mismatch);
  }
}

std::string error_of(const std::string& text) {
  try {
    report_from_json(text, "x.json");
  } catch (const PipelineError& e) {
    return e.what();
  }
  return "(no error)";
}

fs::path temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "torq_report_testXXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(ReportJson, RoundTripPreservesEveryField) {
  const ModelReport m = sample_report();
  const ModelReport back = report_from_json(report_to_json(m).dump(2), "x.json");
  EXPECT_EQ(back.model_name, m.model_name);
  EXPECT_EQ(back.default_tolerance, m.default_tolerance);
  ASSERT_EQ(back.layers.size(), m.layers.size());
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const LayerReport &a = m.layers[i], &b = back.layers[i];
    SCOPED_TRACE(a.info.id);
    EXPECT_EQ(b.info.index, a.info.index);
    EXPECT_EQ(b.info.id, a.info.id);
    EXPECT_EQ(b.info.op_type, a.info.op_type);
    EXPECT_EQ(b.info.mlir_location, a.info.mlir_location);
    EXPECT_EQ(b.recommended, a.recommended);
    EXPECT_EQ(b.dedup_of, a.dedup_of);
    EXPECT_EQ(b.tolerance, a.tolerance);
    ASSERT_EQ(b.results.size(), a.results.size());
    for (const auto& [e, r] : a.results) {
      ASSERT_TRUE(b.results.count(e));
      expect_same(b.results.at(e), r, executor_name(e));
    }
  }
}

TEST(ReportJson, LayoutMatchesVersion11) {
  const auto j = report_to_json(sample_report());
  EXPECT_EQ(j["version"], "1.1");
  EXPECT_EQ(j["model_name"], "tiny");
  EXPECT_EQ(j["default_tolerance"]["fp_max_tol"], 0.02);
  // ops keyed in _node_index order
  std::vector<std::string> keys;
  for (const auto& [k, v] : j["ops"].items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"Conv_c1", "Relu_r", "Reshape_y", "Add_z"}));
  const auto& conv = j["ops"]["Conv_c1"];
  EXPECT_EQ(conv["_node_index"], 0);
  EXPECT_EQ(conv["mlir_location"], "4:10");
  EXPECT_EQ(conv["recommended_executor"], "nss");
  EXPECT_EQ(conv["tolerance"]["fp_avg_tol"], 0.05);
  EXPECT_EQ(conv["executors"]["nss"]["status"], "success");
  EXPECT_EQ(conv["executors"]["nss"]["max_diff"]["max_rel_diff"], 0.0078125);
  EXPECT_EQ(conv["executors"]["nss"]["timing"]["runtime_ms"], 0.125);
  EXPECT_EQ(conv["executors"]["nss"]["timing"]["runs"], 3);
  EXPECT_FALSE(conv["executors"]["nss"].contains("failure_report"));
  EXPECT_EQ(conv["executors"]["css"]["max_diff"]["max_abs_diff"], "inf");
  EXPECT_TRUE(conv["executors"]["css"]["pcc"].is_null());
  EXPECT_EQ(conv["executors"]["host"]["failure_report"]["type"], "FAILED_COMPILATION");
  EXPECT_FALSE(conv["executors"]["host"].contains("timing"));
  EXPECT_FALSE(j["ops"]["Reshape_y"].contains("tolerance"));
  EXPECT_TRUE(j["ops"]["Relu_r"]["mlir_location"].is_null());
  EXPECT_EQ(j["ops"]["Relu_r"]["dedup_of"], "Relu_q");

  const auto& summary = j["discovery_report"]["summary"];
  EXPECT_EQ(summary["total_layers"], 4);
  EXPECT_EQ(summary["status_counts"]["nss"]["success"], 1);
  EXPECT_EQ(summary["status_counts"]["nss"]["error"], 1);
  EXPECT_EQ(summary["status_counts"]["host"]["error"], 2);
  EXPECT_EQ(summary["status_counts"]["host"]["success"], 1);
  EXPECT_EQ(summary["executor_counts"]["nss"], 1);
  EXPECT_EQ(summary["executor_counts"]["host"], 1);
  EXPECT_EQ(summary["executor_counts"]["none"], 2);
  EXPECT_EQ(summary["timing_summary"]["css"]["total_runtime_ms"], 2.0);
  EXPECT_EQ(summary["timing_summary"]["nss"]["layers_timed"], 1);
  EXPECT_FALSE(summary["timing_summary"].contains("host"));
  const auto& critical = j["discovery_report"]["critical_failures"];
  ASSERT_EQ(critical.size(), 1u);
  EXPECT_EQ(critical[0]["layer_id"], "Relu_r");
  EXPECT_EQ(critical[0]["node_index"], 1);
  EXPECT_EQ(critical[0]["error_details"]["host"]["report"]["type"], "timeout");
  EXPECT_EQ(j["has_critical_failures"], true);
  const std::string text = j["final_report_text"];
  EXPECT_NE(text.find("Model: tiny\nTotal layers tested: 4\n"), std::string::npos);
  EXPECT_NE(text.find("CRITICAL: 1 layer(s) with ALL executors ERRORS\n\n  - Relu_r (node: 1)\n"), std::string::npos);
  EXPECT_NE(text.find("Per-Layer Status:"), std::string::npos);
}

TEST(ReportJson, NullRecommendationIsJsonNull) {
  const std::string text = report_to_json(sample_report()).dump(2);
  EXPECT_NE(text.find("\"recommended_executor\": null"), std::string::npos);
  EXPECT_EQ(text.find("\"null\""), std::string::npos);
}

TEST(CompilerJson, OnlyLocatedAndRecommendedLayers) {
  const auto c = compiler_json(sample_report());
  EXPECT_EQ(c.dump(), R"({"model_name":"tiny","op_assignments":{"4:10":{"executor":"nss"}}})");
}

TEST(ReportFromJson, GarbageIsNotJson) {
  EXPECT_EQ(
      error_of("hello"),
      "x.json: not valid JSON: line 1, column 1: syntax error while parsing value - invalid literal; last read: 'h'");
  EXPECT_EQ(error_of(""), "x.json: empty file, expected a torq-gen-config report JSON");
}

TEST(ReportFromJson, TruncatedFileSaysSo) {
  const std::string text = report_to_json(sample_report()).dump(2);
  // Cut anywhere (mid-key, mid-string, mid-number, between values): always
  // reported as truncation with its position.
  for (size_t len : {size_t{1}, size_t{40}, size_t{41}, text.size() / 2, text.size() - 3}) {
    const std::string err = error_of(text.substr(0, len));
    EXPECT_EQ(err.rfind("x.json: truncated JSON (line ", 0), 0u) << len << ": " << err;
  }
  EXPECT_EQ(error_of(R"({"ops": {)"),
            "x.json: truncated JSON (line 1, column 10: syntax error while parsing object key - unexpected end of "
            "input; expected string literal)");
}

TEST(ReportFromJson, ForeignJsonIsRejectedPrecisely) {
  EXPECT_EQ(error_of(R"({"name": "resnet"})"), "x.json: not a torq-gen-config report: no 'ops' object");
  EXPECT_EQ(error_of("[1, 2]"),
            "x.json: not a torq-gen-config report: the top level is array, expected an object with 'ops'");
  EXPECT_EQ(error_of(R"({"op_assignments": {"4:10": {"executor": "nss"}}})"),
            "x.json: this is a compiler JSON (op_assignments), not a torq-gen-config report (ops)");
  EXPECT_EQ(error_of(R"({"ops": []})"), "x.json: ops: expected an object, got array");
  EXPECT_EQ(error_of(R"({"version": "2.0", "ops": {}})"),
            "x.json: version: unsupported report version '2.0' (this tool reads 1.x)");
}

TEST(ReportFromJson, UnknownExecutorAndStatusNames) {
  EXPECT_EQ(error_of(R"({"ops": {"Conv_1": {"executors": {"npu": {"status": "success"}}}}})"),
            "x.json: ops.Conv_1.executors.npu: unknown executor 'npu' (expected nss, css or host)");
  EXPECT_EQ(error_of(R"({"ops": {"Conv_1": {"executors": {"nss": {"status": "ok"}}}}})"),
            "x.json: ops.Conv_1.executors.nss.status: unknown status 'ok' (expected success, difference or error)");
  EXPECT_EQ(error_of(R"({"ops": {"Conv_1": {"executors": {"nss": {}}}}})"),
            "x.json: ops.Conv_1.executors.nss: missing 'status'");
  EXPECT_EQ(error_of(R"({"ops": {"Conv_1": {"recommended_executor": "gpu"}}})"),
            "x.json: ops.Conv_1.recommended_executor: unknown executor 'gpu' (expected nss, css, host or null)");
}

TEST(ReportFromJson, WrongTypesNameTheField) {
  EXPECT_EQ(error_of(R"({"ops": {"Conv_1": {"_node_index": "3"}}})"),
            "x.json: ops.Conv_1._node_index: expected an integer, got string");
  EXPECT_EQ(
      error_of(R"({"ops": {"Conv_1": {"executors": {"nss": {"status": "success", "timing": {"runtime_ms": true}}}}}})"),
      "x.json: ops.Conv_1.executors.nss.timing.runtime_ms: expected a number, got boolean");
  EXPECT_EQ(error_of(R"({"ops": {"Conv_1": 7}})"), "x.json: ops.Conv_1: expected an object, got number");
}

TEST(ReportFromJson, ReadsSeedToolReports) {
  // Shape written by the seed tool: flat summary, critical-failure records,
  // the string "null", a bare op type as location, an op-level
  // tolerance_used from `edit`, no op_type, out-of-order ops.
  const std::string seed = R"({
    "version": "1.1",
    "default_tolerance": {"fp_avg_tol": 0.01, "fp_max_tol": 0.01},
    "ops": {
      "Tanh_/Tanh_output_0": {
        "executors": {
          "nss": {"status": "difference", "tolerance_used": {"fp_avg_tol": 0.01, "fp_max_tol": 0.01},
                  "max_diff": {"max_rel_diff": 0.5, "max_abs_diff": 0.25},
                  "failure_report": {"type": "accuracy_failure", "summary": "Max relative difference: 0.5"}},
          "css": {"status": "success", "tolerance_used": {"fp_avg_tol": 0.01, "fp_max_tol": 0.01},
                  "timing": {"runtime_ms": 15.2, "total_ms": 150.5}}
        },
        "_node_index": 1, "_orig_index": 1, "mlir_location": "Tanh",
        "recommended_executor": "null", "mac_count": 0,
        "tolerance_used": {"fp_max_tol": 0.2}
      },
      "Conv_/conv/Conv_output_0": {
        "executors": {"nss": {"status": "error", "tolerance_used": {"fp_avg_tol": 0.01, "fp_max_tol": 0.01},
                              "failure_report": {"type": "error", "summary": "RuntimeError: Test execution failed"}}},
        "_node_index": 0, "mlir_location": "10:10", "recommended_executor": null
      }
    },
    "discovery_report": {"summary": {"total_layers": 2, "status_counts": {"success": 1, "difference": 1, "error": 1},
                                     "executor_counts": {"nss": 0, "css": 1, "host": 0}},
                         "critical_failures": [{"layer_id": "Conv_/conv/Conv_output_0", "node_index": 0}]},
    "has_critical_failures": true,
    "final_report_text": "FINAL EXECUTOR DISCOVERY REPORT"
  })";
  const ModelReport m = report_from_json(seed, "out/torq_gen_config_encoder.json");
  EXPECT_EQ(m.model_name, "encoder");  // from the file name when absent
  ASSERT_EQ(m.layers.size(), 2u);
  const LayerReport& conv = m.layers[0];
  EXPECT_EQ(conv.info.id, "Conv_/conv/Conv_output_0");
  EXPECT_EQ(conv.info.op_type, "Conv");
  EXPECT_EQ(conv.info.mlir_location, "10:10");
  EXPECT_EQ(conv.results.at(Executor::kNss).error_class, "error");
  EXPECT_EQ(conv.results.at(Executor::kNss).error_message, "RuntimeError: Test execution failed");
  const LayerReport& tanh = m.layers[1];
  EXPECT_EQ(tanh.info.index, 1);
  EXPECT_EQ(tanh.info.op_type, "Tanh");
  EXPECT_EQ(tanh.info.mlir_location, "");
  EXPECT_EQ(tanh.recommended, std::nullopt);
  ASSERT_TRUE(tanh.tolerance.has_value());
  EXPECT_EQ(tanh.tolerance->fp_avg_tol, 0.01);
  EXPECT_EQ(tanh.tolerance->fp_max_tol, 0.2);
  EXPECT_EQ(tanh.results.at(Executor::kNss).max_rel, 0.5);
  EXPECT_EQ(tanh.results.at(Executor::kNss).error_class, "");
  EXPECT_EQ(tanh.results.at(Executor::kCss).runtime_ms, 15.2);
  EXPECT_EQ(tanh.results.at(Executor::kCss).timing_runs, 0u);
  EXPECT_TRUE(std::isnan(tanh.results.at(Executor::kCss).pcc));  // not recorded by the seed: unknown
  EXPECT_TRUE(std::isnan(tanh.results.at(Executor::kCss).max_abs));
  // Re-written, the layout stays readable by the seed (no null _node_index).
  ModelReport no_index = m;
  no_index.layers[0].info.index = -1;
  EXPECT_FALSE(report_to_json(no_index)["ops"]["Conv_/conv/Conv_output_0"].contains("_node_index"));
}

TEST(ReportFiles, WritesBothFilesAtomically) {
  const fs::path dir = temp_dir() / "out";  // created on demand
  const ModelReport m = sample_report();
  write_report_files(m, dir.string());
  EXPECT_EQ(report_path(dir.string(), "tiny"), (dir / "torq_gen_config_tiny.json").string());
  EXPECT_EQ(compiler_path("", "tiny"), "torq_gen_config_tiny_compiler.json");
  const ModelReport back = read_report_file(report_path(dir.string(), "tiny"));
  EXPECT_EQ(back.layers.size(), 4u);
  const auto compiler = nlohmann::json::parse(slurp(compiler_path(dir.string(), "tiny")));
  EXPECT_EQ(compiler["op_assignments"]["4:10"]["executor"], "nss");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 2u);
  // Rewriting replaces the file.
  ModelReport renamed = m;
  renamed.layers.resize(1);
  write_report_files(renamed, dir.string());
  EXPECT_EQ(read_report_file(report_path(dir.string(), "tiny")).layers.size(), 1u);
  fs::remove_all(dir.parent_path());
}

TEST(ReportFiles, UnwritableDirectoryNamesThePath) {
  const fs::path dir = temp_dir();
  std::ofstream(dir / "plain_file") << "x";
  const std::string bad = (dir / "plain_file" / "sub").string();
  try {
    write_report_files(sample_report(), bad);
    FAIL() << "expected PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_EQ(std::string(e.what()),
              "output directory " + bad + ": " + (dir / "plain_file").string() + " is a regular file, not a directory");
  }
  try {
    write_json_atomic((dir / "missing" / "r.json").string(), nlohmann::ordered_json::object());
    FAIL() << "expected PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind((dir / "missing" / "r.json").string() + ": cannot create a temporary file", 0), 0u)
        << e.what();
  }
  EXPECT_THROW(read_report_file((dir / "nope.json").string()), PipelineError);
  fs::remove_all(dir);
}

TEST(View, SummaryShowsCountsTimingCriticalAndTable) {
  const std::string s = render_summary(sample_report());
  EXPECT_NE(s.find("MODEL: tiny\n"), std::string::npos);
  EXPECT_NE(s.find("  NSS: success 1, difference 0, error 1\n"), std::string::npos);
  EXPECT_NE(s.find("  none: 2\n"), std::string::npos);
  EXPECT_NE(s.find("  CSS: total 2.000ms over 1 layer(s)"), std::string::npos);
  EXPECT_NE(s.find("CRITICAL FAILURES (all executors error): 1\n  - Relu_r (node: 1)\n"), std::string::npos);
  EXPECT_NE(s.find("success 0.125ms"), std::string::npos);
  EXPECT_NE(s.find("  fp_max_tol: 0.02\n"), std::string::npos);
}

TEST(View, StatusTableColumns) {
  const ModelReport m = sample_report();
  const std::string t = render_status_table({&m.layers[0], &m.layers[2]});
  // Columns are at least 12 wide and grow to fit "difference 2.000ms".
  EXPECT_EQ(t,
            "Per-Layer Status:\n"
            "  Layer      NSS                 CSS                 HOST                Recommended\n" +
                std::string(9 + 19 * 3 + 25, '-') +
                "\n"
                "  Conv_c1    success 0.125ms     difference 2.000ms  error               nss\n"
                "  Reshape_y  -                   -                   -                   -\n");
}

TEST(View, LayerDetailAndNoMatch) {
  const ModelReport m = sample_report();
  const std::string d = render_layer(m, "conv_c1");
  EXPECT_NE(d.find("LAYER: Conv_c1\n"), std::string::npos);
  EXPECT_NE(d.find("MLIR Location: 4:10\n"), std::string::npos);
  EXPECT_NE(d.find("Tolerance Override: fp_avg_tol=0.05, fp_max_tol=0.06\n"), std::string::npos);
  EXPECT_NE(d.find("  [NSS]: success (0.125ms, 3 runs)\n"), std::string::npos);
  EXPECT_NE(d.find("    Type: FAILED_COMPILATION\n    Summary: conv: unsupported dilation\nsecond line\n"),
            std::string::npos);
  EXPECT_NE(d.find("    PCC: nan\n"), std::string::npos);
  EXPECT_NE(d.find("    Cached: yes"), std::string::npos);
  const std::string r = render_layer(m, "Relu_r");
  EXPECT_NE(r.find("  [CSS]: not tested\n"), std::string::npos);
  EXPECT_NE(r.find("Recommended Executor: none\n"), std::string::npos);
  try {
    render_layer(m, "Gemm");
    FAIL() << "expected PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_STREQ(e.what(), "no layer matches 'Gemm' (available: Conv_c1, Relu_r, Reshape_y, Add_z)");
  }
}

TEST(View, CompilerSortedByLineThenColumn) {
  const auto c = nlohmann::json::parse(
      R"({"model_name": "m", "op_assignments": {"10:10": {"executor": "css"}, "4:10": {"executor": "nss"}, "4:2": {"executor": "nss"}}})");
  EXPECT_EQ(render_compiler(c),
            "============================================================\n"
            "MODEL: m  (compiler format)\n"
            "============================================================\n"
            "\nTotal assignments: 3\n"
            "\nExecutor distribution:\n  NSS: 2\n  CSS: 1\n"
            "\nAssignments:\n  4:2 -> nss\n  4:10 -> nss\n  10:10 -> css\n");
  EXPECT_THROW(render_compiler(nlohmann::json::parse(R"({"ops": {}})")), PipelineError);
}
