// ReportStreamWriter (issue 32): the report and compiler JSON written one
// layer at a time are byte for byte the files write_report_files() writes
// for the same report: the real tool's SL2610 reports (kept extras,
// placeholders, critical failures, a top-level tolerance), a report with
// NaN/inf metrics and multi-line messages, one without layers, and a layer
// that shares another's location.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "pipeline/report/report.h"
#include "pipeline/report/report_stream.h"

using namespace torq::pipeline;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "torq_report_streamXXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The layers in report order (_node_index, unindexed last), as the writer takes them.
std::vector<LayerReport> report_order(const ModelReport& r) {
  std::vector<LayerReport> layers = r.layers;
  std::stable_sort(layers.begin(), layers.end(), [](const LayerReport& a, const LayerReport& b) {
    const int64_t ia = a.info.index < 0 ? INT64_MAX : a.info.index;
    const int64_t ib = b.info.index < 0 ? INT64_MAX : b.info.index;
    return ia < ib;
  });
  return layers;
}

// Writes `r` both ways and compares the bytes of both files and the summary.
void expect_same_files(const ModelReport& r) {
  const fs::path dir = temp_dir();
  write_report_files(r, (dir / "whole").string());
  ModelReport head = r;
  head.layers.clear();
  ReportStreamWriter w(head, (dir / "streamed").string());
  for (const LayerReport& l : report_order(r)) w.add(l);
  const ReportSummary s = w.finish();
  const ReportSummary expected = summarize(r);
  EXPECT_EQ(s.total_layers, expected.total_layers);
  EXPECT_EQ(s.critical_failures, expected.critical_failures);
  EXPECT_EQ(s.recommended_none, expected.recommended_none);
  for (const std::string& name : {report_path("", r.model_name), compiler_path("", r.model_name)}) {
    SCOPED_TRACE(name);
    const std::string whole = slurp(dir / "whole" / name), streamed = slurp(dir / "streamed" / name);
    ASSERT_GT(whole.size(), 10u);
    if (whole != streamed) {
      size_t at = 0;
      while (at < whole.size() && at < streamed.size() && whole[at] == streamed[at]) ++at;
      ADD_FAILURE() << "first difference at byte " << at << ": whole '" << whole.substr(at > 40 ? at - 40 : 0, 80)
                    << "' streamed '" << streamed.substr(at > 40 ? at - 40 : 0, 80) << "'";
    }
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir / "streamed")) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 2u);
  fs::remove_all(dir);
}

ExecResult exec(Executor e, Status s) {
  ExecResult r;
  r.executor = e;
  r.status = s;
  return r;
}

ModelReport awkward_report() {
  ModelReport m;
  m.model_name = "awkward \"name\"";
  m.default_tolerance = {0.01, 0.02, 0.001};
  LayerReport a;
  a.info = {0, "Conv_\"quoted\"\\id", "Conv", "4:10"};
  ExecResult css = exec(Executor::kCss, Status::kDifference);
  css.max_abs = std::numeric_limits<double>::infinity();
  css.pcc = std::numeric_limits<double>::quiet_NaN();
  css.runtime_ms = 2.0;
  ExecResult host = exec(Executor::kHost, Status::kError);
  host.error_class = "FAILED_COMPILATION";
  host.error_message = "line one\nline \"two\"\t\xff";  // invalid UTF-8 is replaced, as dump() does
  a.results = {{Executor::kCss, css}, {Executor::kHost, host}};
  a.recommended = Executor::kCss;
  m.layers.push_back(a);
  LayerReport b;  // the same location: the later recommendation wins, in the first one's place
  b.info = {1, "Relu_b\xfe", "Relu", "4:10"};  // an ONNX output name need not be UTF-8: replaced in both
  b.results[Executor::kNss] = exec(Executor::kNss, Status::kSuccess);
  b.recommended = Executor::kNss;
  m.layers.push_back(b);
  LayerReport c;  // every executor failed: a critical failure
  c.info = {2, "Softmax_c", "Softmax", ""};
  c.mlir_placeholder = "Softmax";
  c.results[Executor::kNss] = exec(Executor::kNss, Status::kError);
  m.layers.push_back(c);
  LayerReport d;  // no _node_index: last
  d.info = {-1, "Identity_d", "Identity", ""};
  m.layers.push_back(d);
  m.extra = {{"tolerance", R"({"fp_max_tol": 0.2})"}, {"note", "\"kept\""}};
  return m;
}

}  // namespace

TEST(ReportStream, SameBytesAsTheWholeReport) {
  expect_same_files(awkward_report());
  ModelReport empty;
  empty.model_name = "empty";
  expect_same_files(empty);
}

#ifdef TORQ_SHARED_REFERENCE
TEST(ReportStream, SameBytesForTheRealSl2610Reports) {
  size_t seen = 0;
  for (const auto& e : fs::directory_iterator(TORQ_SHARED_REFERENCE)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("torq_gen_config_", 0) != 0 || name.find("_compiler.json") != std::string::npos ||
        e.path().extension() != ".json")
      continue;
    SCOPED_TRACE(name);
    expect_same_files(read_report_file(e.path().string()));
    ++seen;
  }
  EXPECT_GE(seen, 5u);
}
#endif

TEST(ReportStream, LayersOutOfOrderAreRefused) {
  ModelReport head;
  head.model_name = "m";
  ReportStreamWriter w(head, "");
  LayerReport l;
  l.info = {3, "A", "Relu", ""};
  w.add(l);
  l.info = {2, "B", "Relu", ""};
  EXPECT_THROW(w.add(l), std::logic_error);
  l.info = {-1, "C", "Relu", ""};
  w.add(l);
  l.info = {4, "D", "Relu", ""};
  EXPECT_THROW(w.add(l), std::logic_error);
}

TEST(ReportStream, WithoutADirectoryOnlySummarizesAndAnAbandonedWriterLeavesNothing) {
  const fs::path dir = temp_dir();
  const ModelReport r = awkward_report();
  {
    ReportStreamWriter w(r, "");
    for (const LayerReport& l : report_order(r)) w.add(l);
    const ReportSummary s = w.finish();
    EXPECT_EQ(s.total_layers, 4);
    EXPECT_EQ(s.critical_failures, std::vector<std::string>{"Softmax_c"});
  }
  {
    ModelReport head = r;
    head.layers.clear();
    ReportStreamWriter w(head, (dir / "out").string());
    w.add(report_order(r)[0]);
  }  // never finished: no report, no temporary file
  EXPECT_TRUE(fs::is_empty(dir / "out"));
  fs::remove_all(dir);
}
