// Seed compatibility of report files: keys this tool does not know survive
// a read and a write (top level, op, executor result), the seed's quirks
// (placeholder locations, the string "null", absent executors, long
// failure summaries) are accepted, and the real torq-gen-config's SL2610
// reports (../shared/reference/sl2610, when present) round-trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "pipeline/report/report.h"
#include "pipeline/report/view.h"

using namespace torq::pipeline;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

// A seed-style report with unknown keys at every level.
const char* kWithExtras = R"({
  "version": "1.1",
  "default_tolerance": {"fp_avg_tol": 0.01, "fp_max_tol": 0.01},
  "ops": {
    "Conv_c": {
      "executors": {
        "nss": {"status": "difference", "tolerance_used": {"fp_avg_tol": 0.01, "fp_max_tol": 0.01},
                "failure_report": {"type": "accuracy_failure", "summary": "Max relative difference: 0.5"},
                "vendor_note": [1, 2]},
        "host": {"status": "error", "tolerance_used": {"fp_avg_tol": 0.01, "fp_max_tol": 0.01},
                 "failure_report": {"type": "error", "summary": "boom"}, "max_diff": {"max_rel_diff": 1}}
      },
      "_node_index": 0, "_orig_index": 7, "mac_count": 10838016,
      "mlir_location": "20:11", "recommended_executor": "nss"
    }
  },
  "model_name": "m",
  "discovery_report": {"summary": {"total_layers": 1}},
  "has_critical_failures": false,
  "final_report_text": "old text",
  "tolerance": {"max_relative_diff": 0.9971681237220764, "max_absolute_diff": 0.1875},
  "full_model": {"status": "success", "runtime_ms": 1.5},
  "subgraph": {"from": "Conv_c", "to": "Conv_c"}
})";

std::vector<std::string> keys_of(const ojson& j) {
  std::vector<std::string> out;
  for (const auto& [k, v] : j.items()) out.push_back(k);
  return out;
}

// A report with one op whose fields are given as JSON text.
std::string one_op(const std::string& op_fields) {
  return R"({"model_name": "m", "ops": {"Conv_c": {)" + op_fields + "}}}";
}

}  // namespace

TEST(ReportCompat, UnknownTopLevelKeysAreKeptInOrderAfterTheKnownOnes) {
  const ModelReport r = report_from_json(kWithExtras, "x.json");
  ASSERT_EQ(r.extra.size(), 3u);
  EXPECT_EQ(r.extra[0].first, "tolerance");
  EXPECT_EQ(r.extra[1].first, "full_model");
  EXPECT_EQ(r.extra[2].first, "subgraph");
  const ojson in = ojson::parse(kWithExtras);
  const ojson out = report_to_json(r);
  EXPECT_EQ(keys_of(out), (std::vector<std::string>{"version", "model_name", "default_tolerance", "ops",
                                                    "discovery_report", "has_critical_failures", "final_report_text",
                                                    "tolerance", "full_model", "subgraph"}));
  for (const char* k : {"tolerance", "full_model", "subgraph"}) EXPECT_EQ(out[k], in[k]) << k;
  EXPECT_EQ(out["tolerance"]["max_relative_diff"].get<double>(), 0.9971681237220764);  // exact
  // Written again, nothing changes.
  EXPECT_EQ(report_to_json(report_from_json(out.dump(2), "x.json")), out);
}

TEST(ReportCompat, CompilerJsonCarriesTheTopLevelTolerance) {
  const ModelReport r = report_from_json(kWithExtras, "x.json");
  const ojson c = compiler_json(r);
  EXPECT_EQ(keys_of(c), (std::vector<std::string>{"model_name", "op_assignments", "tolerance"}));
  EXPECT_EQ(c["tolerance"], ojson::parse(kWithExtras)["tolerance"]);
  EXPECT_EQ(c["op_assignments"]["20:11"]["executor"], "nss");
  ModelReport none = r;
  none.extra.clear();
  EXPECT_FALSE(compiler_json(none).contains("tolerance"));
  EXPECT_FALSE(compiler_json(none).contains("full_model"));  // only tolerance goes to the compiler
}

TEST(ReportCompat, UnknownOpAndResultKeysAreKept) {
  const ModelReport r = report_from_json(kWithExtras, "x.json");
  const LayerReport& l = r.layers.at(0);
  EXPECT_EQ(l.extra, (ExtraFields{{"_orig_index", "7"}, {"mac_count", "10838016"}}));
  // A difference's failure_report is not read (only an error's is), so it is kept.
  EXPECT_EQ(l.result_extra.at(Executor::kNss),
            (ExtraFields{{"failure_report", R"({"type":"accuracy_failure","summary":"Max relative difference: 0.5"})"},
                         {"vendor_note", "[1,2]"}}));
  EXPECT_EQ(l.result_extra.at(Executor::kHost), (ExtraFields{{"max_diff", R"({"max_rel_diff":1})"}}));
  const ojson in = ojson::parse(kWithExtras)["ops"]["Conv_c"];
  const ojson out = report_to_json(r)["ops"]["Conv_c"];
  EXPECT_EQ(out["_orig_index"], 7);
  EXPECT_EQ(out["mac_count"], 10838016);
  EXPECT_EQ(out["executors"]["nss"]["failure_report"], in["executors"]["nss"]["failure_report"]);
  EXPECT_EQ(out["executors"]["nss"]["vendor_note"], in["executors"]["nss"]["vendor_note"]);
  EXPECT_EQ(out["executors"]["host"]["failure_report"], in["executors"]["host"]["failure_report"]);
  EXPECT_EQ(out["executors"]["host"]["max_diff"], in["executors"]["host"]["max_diff"]);
  const std::vector<std::string> keys = keys_of(out);
  EXPECT_EQ(std::vector<std::string>(keys.end() - 2, keys.end()),
            (std::vector<std::string>{"_orig_index", "mac_count"}));
}

TEST(ReportCompat, AKeptKeyNeverDuplicatesOrOverridesAKnownOne) {
  ModelReport r = report_from_json(kWithExtras, "x.json");
  r.extra.emplace_back("model_name", R"("impostor")");
  r.layers[0].extra.emplace_back("recommended_executor", R"("css")");
  r.layers[0].result_extra[Executor::kNss].emplace_back("status", R"("success")");
  // The layer becomes an error: its kept failure_report yields to the real one.
  ExecResult& nss = r.layers[0].results.at(Executor::kNss);
  nss.status = Status::kError;
  nss.error_class = "timeout";
  nss.error_message = "timed out";
  const std::string text = report_to_json(r).dump(2);
  const ojson out = ojson::parse(text);
  EXPECT_EQ(out["model_name"], "m");
  EXPECT_EQ(out["ops"]["Conv_c"]["recommended_executor"], "nss");
  EXPECT_EQ(out["ops"]["Conv_c"]["executors"]["nss"]["status"], "error");
  EXPECT_EQ(out["ops"]["Conv_c"]["executors"]["nss"]["failure_report"]["type"], "timeout");
  size_t names = 0;
  for (size_t p = text.find("\"model_name\""); p != std::string::npos; p = text.find("\"model_name\"", p + 1)) ++names;
  EXPECT_EQ(names, 1u);
}

TEST(ReportCompat, PlaceholderLocationIsNoLocationButWrittenBackUnchanged) {
  for (const std::string placeholder : {"Conv", "onnx.Conv", "loc(unknown)", "12"}) {
    SCOPED_TRACE(placeholder);
    const ModelReport r = report_from_json(
        one_op(R"("executors": {"nss": {"status": "error", "failure_report": {"type": "e", "summary": "s"}}},
                  "_node_index": 0, "recommended_executor": "nss", "mlir_location": ")" +
               placeholder + "\""),
        "x.json");
    const LayerReport& l = r.layers.at(0);
    EXPECT_EQ(l.info.mlir_location, "");
    EXPECT_EQ(l.mlir_placeholder, placeholder);
    EXPECT_TRUE(compiler_json(r)["op_assignments"].empty());  // no assignment for an unknown location
    const ojson out = report_to_json(r);
    EXPECT_EQ(out["ops"]["Conv_c"]["mlir_location"], placeholder);
    EXPECT_EQ(out["discovery_report"]["critical_failures"][0]["mlir_location"], placeholder);
    EXPECT_NE(render_layer(r, "Conv_c").find("MLIR Location: N/A (placeholder '" + placeholder + "')\n"),
              std::string::npos);
    // A real location, once known, wins.
    ModelReport located = r;
    located.layers[0].info.mlir_location = "5:3";
    EXPECT_EQ(report_to_json(located)["ops"]["Conv_c"]["mlir_location"], "5:3");
    EXPECT_EQ(compiler_json(located)["op_assignments"]["5:3"]["executor"], "nss");
  }
}

TEST(ReportCompat, StringNullRecommendationReadsAsNullAndIsWrittenAsJsonNull) {
  const ModelReport r =
      report_from_json(one_op(R"("mlir_location": "3:4", "recommended_executor": "null")"), "x.json");
  EXPECT_EQ(r.layers.at(0).recommended, std::nullopt);
  EXPECT_TRUE(r.layers.at(0).extra.empty());
  const std::string text = report_to_json(r).dump();
  EXPECT_NE(text.find(R"("recommended_executor":null)"), std::string::npos);
  EXPECT_EQ(text.find(R"("null")"), std::string::npos);
  EXPECT_TRUE(compiler_json(r)["op_assignments"].empty());
}

TEST(ReportCompat, AbsentExecutorsAreFine) {
  const std::vector<std::string> cases = {
      R"("_node_index": 0)", R"("executors": {})", R"("executors": null)",
      R"("executors": {"host": {"status": "success"}}, "recommended_executor": "host")"};
  for (const std::string& fields : cases) {
    SCOPED_TRACE(fields);
    const ModelReport r = report_from_json(one_op(fields), "x.json");
    ASSERT_EQ(r.layers.size(), 1u);
    EXPECT_FALSE(r.layers[0].results.count(Executor::kNss));
    EXPECT_FALSE(r.layers[0].results.count(Executor::kCss));
    const ojson out = report_to_json(r);
    EXPECT_FALSE(out["ops"]["Conv_c"]["executors"].contains("nss"));
    EXPECT_EQ(report_from_json(out.dump(), "x.json").layers.at(0).results.size(), r.layers[0].results.size());
    EXPECT_NO_THROW(render_summary(r));
    EXPECT_NO_THROW(render_layer(r, "Conv_c"));
  }
}

TEST(ReportCompat, FailureSummaryOfAnyLengthIsKeptWhole) {
  std::string summary = "Fixture/setup failed: kwargs = {'chip_config': \\u00e9\\n";
  while (summary.size() < 300000) summary += "VersionedUncachedData(data={'chip_name': 'sl2610-v1'}) ";
  summary += "END";
  const ModelReport r = report_from_json(
      one_op(R"("executors": {"nss": {"status": "error", "failure_report": {"type": "error", "summary": ")" + summary +
             R"("}}})"),
      "x.json");
  const std::string& msg = r.layers.at(0).results.at(Executor::kNss).error_message;
  EXPECT_EQ(msg.size(), summary.size() - 5);  // the escapes: \u00e9 (6 chars) is 2 bytes, \n (2) is 1
  EXPECT_EQ(msg.substr(msg.size() - 3), "END");
  const ojson out = report_to_json(r);
  EXPECT_EQ(out["ops"]["Conv_c"]["executors"]["nss"]["failure_report"]["summary"], msg);
  EXPECT_NE(render_layer(r, "Conv_c").find(msg), std::string::npos);
}

TEST(ReportCompat, CompilerPathForAReportFile) {
  EXPECT_EQ(compiler_path_for("d/torq_gen_config_m_quant.json"), "d/torq_gen_config_m_quant_compiler.json");
  EXPECT_EQ(compiler_path_for("torq_gen_config_m.json"), "torq_gen_config_m_compiler.json");
  EXPECT_EQ(compiler_path_for("a.b/r.json"), "a.b/r_compiler.json");
}

// ---- the real tool's reports, measured on SL2610 (../shared/reference) ----
#ifdef TORQ_SHARED_REFERENCE

namespace {

ojson read_ojson(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ojson::parse(ss.str());
}

std::vector<fs::path> reference_reports() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(TORQ_SHARED_REFERENCE)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("torq_gen_config_", 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == ".json" &&
        name.find("_compiler.json") == std::string::npos)
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every op of `in` is in `out` with the same statuses, failure reports,
// recommendation, location, _node_index and unknown keys.
void expect_ops_kept(const ojson& in, const ojson& out) {
  ASSERT_EQ(keys_of(out), keys_of(in));  // same ids, same (_node_index) order
  for (const auto& [id, op] : in.items()) {
    SCOPED_TRACE(id);
    const ojson& o = out[id];
    for (const auto& [key, value] : op.items()) {
      if (key == "executors") continue;
      ASSERT_TRUE(o.contains(key)) << key;
      if (key == "recommended_executor" && value == "null") {
        EXPECT_TRUE(o[key].is_null());
        continue;
      }
      EXPECT_EQ(o[key], value) << key;
    }
    const ojson& ex = op.contains("executors") ? op["executors"] : ojson::object();
    EXPECT_EQ(keys_of(o["executors"]).size(), ex.size());
    for (const auto& [name, res] : ex.items()) {
      ASSERT_TRUE(o["executors"].contains(name)) << name;
      EXPECT_EQ(o["executors"][name]["status"], res["status"]) << name;
      if (res.contains("failure_report")) {
        EXPECT_EQ(o["executors"][name]["failure_report"], res["failure_report"]);
      }
      EXPECT_EQ(o["executors"][name]["tolerance_used"]["fp_max_tol"], res["tolerance_used"]["fp_max_tol"]);
    }
  }
}

}  // namespace

TEST(ReportCompatReference, RealSl2610ReportsRoundTripAndGiveTheirCompilerJson) {
  const std::vector<fs::path> reports = reference_reports();
  ASSERT_FALSE(reports.empty()) << "no torq_gen_config_*.json in " << TORQ_SHARED_REFERENCE;
  const std::set<std::string> regenerated = {"discovery_report", "final_report_text", "has_critical_failures"};
  for (const fs::path& path : reports) {
    SCOPED_TRACE(path.string());
    const ojson in = read_ojson(path);
    const ModelReport r = read_report_file(path.string());
    const ojson out = report_to_json(r);
    for (const auto& [key, value] : in.items()) {
      ASSERT_TRUE(out.contains(key)) << key;
      if (regenerated.count(key)) continue;
      if (key == "ops") {
        expect_ops_kept(value, out["ops"]);
      } else if (key == "default_tolerance") {
        EXPECT_EQ(out[key]["fp_avg_tol"], value["fp_avg_tol"]);
        EXPECT_EQ(out[key]["fp_max_tol"], value["fp_max_tol"]);
      } else {
        EXPECT_EQ(out[key], value) << key;
      }
    }
    EXPECT_EQ(out["has_critical_failures"], in["has_critical_failures"]);
    const ojson real = read_ojson(compiler_path_for(path.string()));
    const ojson mine = compiler_json(r);
    EXPECT_EQ(mine["model_name"], real["model_name"]);
    EXPECT_EQ(mine["op_assignments"], real["op_assignments"]);  // same entries in the same order
    EXPECT_EQ(mine.contains("tolerance"), real.contains("tolerance"));
    if (real.contains("tolerance")) {
      EXPECT_EQ(mine["tolerance"], real["tolerance"]);
    }
    // Our own output reads back to the same output.
    EXPECT_EQ(report_to_json(report_from_json(out.dump(2), path.string())), out);
  }
}

#endif  // TORQ_SHARED_REFERENCE
