// torq_html_sample: writes the matrix reports of a fixed sample run into a
// directory for tests/html/check_html_report.sh, which checks them in a
// headless browser and with Python's XML and JSON parsers:
//   report.html, reports/<test-id>/grid.html   the report and the grid pages
//                                               of the two tests with a model
//                                               report, its trend of 3 runs
//   first-run/report.html                       the same run as a spec's first
//   junit.xml, summary.json, ops.csv
//   expected.json                               what the checker asserts, worked
//                                               out here from the sample's data,
//                                               not from the HTML
// The sample covers every outcome, three variants, two tests of one model
// and variant (their heatmap cell is the mean), a test without layers and
// combinations without a test, every kind of change since the previous
// run, two model reports (success, difference, error and untested cells, a
// critical failure, a layer without recommendation), the op-support matrix
// of the two reports and text that needs escaping (<&"' in an ID and a
// message), with a long ID and a long message for the table's width.
//
// Usage: torq_html_sample <output-dir>   (exit 0, or 2 with a message)
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/matrix/matrix_history.h"
#include "pipeline/matrix/matrix_report.h"
#include "pipeline/report/op_matrix.h"
#include "pipeline/report/report.h"

namespace tp = torq::pipeline;
namespace tm_ = torq::pipeline::matrix;
using nlohmann::json;

namespace {

tp::ExecResult result(tp::Executor e, tp::Status s, double pcc, double max_abs, double runtime_ms) {
  tp::ExecResult r;
  r.executor = e;
  r.status = s;
  r.pcc = pcc;
  r.max_abs = max_abs;
  r.max_rel = max_abs / 4;
  r.runtime_ms = runtime_ms;
  r.timing_runs = runtime_ms >= 0 ? 3 : 0;
  r.host_ms = 40;
  r.worker_id = "w1";
  r.toolchain = "sim-0.1";
  return r;
}

tp::ExecResult error(tp::Executor e, const std::string& cls, const std::string& message) {
  tp::ExecResult r = result(e, tp::Status::kError, NAN, NAN, -1);
  r.error_class = cls;
  r.error_message = message;
  r.worker_id = "w2";
  return r;
}

tp::LayerReport layer(int index, const std::string& op, const std::string& output,
                      std::vector<tp::ExecResult> results, std::optional<tp::Executor> recommended) {
  tp::LayerReport l;
  l.info = {index, op + "_" + output, op, std::to_string(10 + index) + ":5"};
  for (tp::ExecResult& r : results) l.results[r.executor] = r;
  l.recommended = recommended;
  return l;
}

using tp::Executor;
using tp::Status;

// The op key of each sample layer (the real ones come from the ONNX graph).
std::vector<std::string> op_keys(const tp::ModelReport& m) {
  const std::map<std::string, std::string> by_type = {
      {"Conv", "Conv(kernel_shape=[3,3]) f32[1,3,8,8], f32[8,3,3,3]"}, {"Relu", "Relu() f32[1,8,8,8]"},
      {"MaxPool", "MaxPool(kernel_shape=[2,2]) f32[1,8,8,8]"}, {"Gemm", "Gemm(transB=1) f32[1,8], f32[4,8]"},
      {"Add", "Add() f32[1,8,8,8], f32[1,8,8,8]"}, {"Resize", "Resize(mode='cubic') f32[1,8,4,4], -, f32[4]"}};
  std::vector<std::string> keys;
  for (const auto& l : m.layers) keys.push_back(by_type.at(l.info.op_type));
  return keys;
}

// resnet18 fp32: four layers, every executor tried, all recommended.
tp::ModelReport resnet_fp32() {
  tp::ModelReport m;
  m.model_name = "resnet18";
  m.layers.push_back(layer(0, "Conv", "c1",
                           {result(Executor::kNss, Status::kSuccess, 0.9999, 0.25, 0.125),
                            result(Executor::kCss, Status::kSuccess, 0.99995, 0.01, 2.5),
                            result(Executor::kHost, Status::kSuccess, 1.0, 0, 9.0)},
                           Executor::kNss));
  m.layers.push_back(layer(1, "Relu", "r1",
                           {result(Executor::kNss, Status::kSuccess, 1.0, 0, 0.01),
                            result(Executor::kCss, Status::kSuccess, 1.0, 0, 0.2),
                            result(Executor::kHost, Status::kSuccess, 1.0, 0, 0.5)},
                           Executor::kNss));
  m.layers.push_back(layer(2, "MaxPool", "p1",
                           {error(Executor::kNss, "UNSUPPORTED_OP", "bf16 MaxPool not supported on nss"),
                            result(Executor::kCss, Status::kDifference, 0.97, 1.5, 0.3),
                            result(Executor::kHost, Status::kSuccess, 1.0, 0, 0.4)},
                           Executor::kHost));
  m.layers.push_back(layer(3, "Gemm", "fc",
                           {result(Executor::kNss, Status::kSuccess, 0.9998, 0.5, 0.05),
                            result(Executor::kCss, Status::kSuccess, 0.9999, 0.02, 1.1),
                            result(Executor::kHost, Status::kSuccess, 1.0, 0, 2.0)},
                           Executor::kNss));
  return m;
}

// resnet18 bf16: a css cell never tried and a critical failure (every
// executor errors, no recommendation).
tp::ModelReport resnet_bf16() {
  tp::ModelReport m;
  m.model_name = "resnet18";
  m.layers.push_back(layer(0, "Conv", "c1",
                           {result(Executor::kNss, Status::kSuccess, 0.999, 0.5, 0.125),
                            result(Executor::kCss, Status::kSuccess, 0.999, 0.4, 2.5),
                            result(Executor::kHost, Status::kSuccess, 1.0, 0, 9.0)},
                           Executor::kNss));
  m.layers.push_back(layer(1, "Add", "a1",
                           {result(Executor::kNss, Status::kDifference, 0.95, 3.0, 0.02),
                            result(Executor::kHost, Status::kSuccess, 1.0, 0, 0.3)},
                           Executor::kHost));
  m.layers.push_back(layer(2, "Resize", "up<1>",
                           {error(Executor::kNss, "FAILED_COMPILATION", "resize: mode \"cubic\" <unsupported> & more"),
                            error(Executor::kCss, "FAILED_COMPILATION", "resize: cubic"),
                            error(Executor::kHost, "FAILED_RUNTIME", "timeout after 120000 ms")},
                           std::nullopt));
  return m;
}


// ------------------------------------------------------------ the sample run

// The models, variants and targets the tests point at (outliving them).
struct World {
  tm_::ModelEntry resnet{"resnet18", "/models/resnet18.onnx", "", {}};
  tm_::ModelEntry squeeze{"squeezenet1.0", "/models/squeezenet1.0.onnx", "", {}};
  tm_::ModelEntry odd{"odd<&\"'>", "/models/odd.onnx", "", {}};
  tm_::Variant fp32, bf16, int8;
  tm_::Target sim, astra;
  World() {
    bf16.name = "bf16";
    bf16.bf16 = true;
    int8.name = "int8";
    int8.int8 = true;
    astra.name = "astra";
    astra.board = "astra";
  }
};

tm_::TestCase make(const std::string& id, const tm_::ModelEntry* model, const tm_::Variant& v, const tm_::Target& t,
                   tm_::Mode mode, tm_::TestStatus status) {
  tm_::TestCase c;
  c.id = id;
  c.model = model;
  c.variant = v;
  c.target = t;
  c.mode = mode;
  c.config.status = status;
  c.placeholder = model == nullptr;
  return c;
}

std::vector<tm_::TestCase> sample_cases(const World& w) {
  using tm_::Mode;
  using tm_::TestStatus;
  return {
      make("resnet18-fp32-sim-discover", &w.resnet, w.fp32, w.sim, Mode::kDiscover, TestStatus::kExpectedPassing),
      make("resnet18-bf16-sim-discover", &w.resnet, w.bf16, w.sim, Mode::kDiscover, TestStatus::kExpectedPassing),
      make("squeezenet1.0-fp32-sim-discover", &w.squeeze, w.fp32, w.sim, Mode::kDiscover,
           TestStatus::kKnownFailureXfail),
      make("squeezenet1.0-bf16-astra-run", &w.squeeze, w.bf16, w.astra, Mode::kRun, TestStatus::kKnownFailureXfail),
      make("yolov8n-fp32-sim-discover", nullptr, w.fp32, w.sim, Mode::kDiscover, TestStatus::kUnspecified),
      make("odd<&\"'>-fp32-sim-run", &w.odd, w.fp32, w.sim, Mode::kRun, TestStatus::kNotSupportedSkip),
      make("resnet18-fp32-astra-run", &w.resnet, w.fp32, w.astra, Mode::kRun, TestStatus::kExpectedPassing),
      make("resnet18-int8-sim-subgraph-Conv_layer1.0.conv1-Relu_layer4.1.relu_2", &w.resnet, w.int8, w.sim,
           Mode::kSubgraph, TestStatus::kUnspecified),
  };
}

// A run that ran, with its layers by recommended executor.
void ran(tm_::TestResult* r, double pcc, std::map<std::string, int> dist, double wall_s) {
  r->run.ran = true;
  r->run.pcc = pcc;
  r->run.executor_distribution = std::move(dist);
  for (const auto& [e, n] : r->run.executor_distribution) r->run.layers += n;
  r->run.wall_s = wall_s;
}

void set_outcome(tm_::TestResult* r, tm_::Outcome o, tm_::Bringup b, const std::string& since) {
  r->outcome = o;
  r->bringup = b;
  r->since_previous = since;
}

std::vector<tm_::TestResult> sample_results(const std::vector<tm_::TestCase>& cases) {
  using tm_::Bringup;
  using tm_::Outcome;
  std::vector<tm_::TestResult> results(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) results[i].test = &cases[i];
  tm_::TestResult* r = results.data();
  set_outcome(&r[0], Outcome::kPassed, Bringup::kPassed, "unchanged");
  ran(&r[0], 0.9998, {{"nss", 3}, {"host", 1}}, 12.5);
  r[0].run.max_abs = 0.5;
  r[0].run.max_rel = 0.125;
  r[0].run.report_file = "reports/resnet18-fp32-sim-discover/torq_gen_config_resnet18.json";
  // Failed: PCC under the requirement, one critical failure.
  set_outcome(&r[1], Outcome::kFailed, Bringup::kIncorrectResult, "new failure; 1 layer changed");
  ran(&r[1], 0.95, {{"nss", 1}, {"host", 1}, {"none", 1}}, 9.25);
  r[1].message = "pcc 0.95 < required 0.99 (layer Resize_up<1> & \"friends\")";
  r[1].run.failed_step = "result";
  r[1].run.message = "critical failure: Resize_up<1>";
  r[1].run.max_abs = 3.0;
  r[1].run.max_rel = 0.75;
  r[1].run.critical_failures = 1;
  // Xfailed at compile: it ran, without layers.
  set_outcome(&r[2], Outcome::kXfailed, Bringup::kFailedCompilation, "");
  ran(&r[2], -1, {}, 3.0);
  r[2].message = "known failure: Fire squeeze concat on css";
  r[2].run.failed_step = "compile";
  r[2].run.message = "concat: unsupported axis";
  set_outcome(&r[3], Outcome::kXpassed, Bringup::kPassed, "xfailed -> xpassed");
  ran(&r[3], 0.9991, {{"nss", 20}, {"css", 6}}, 30.0);
  r[3].message = "expected to fail but passed";
  set_outcome(&r[4], Outcome::kSkipped, Bringup::kNotStarted, "new test");
  r[4].message = "not yet exported";
  set_outcome(&r[5], Outcome::kSkipped, Bringup::kUnknown, "");
  r[5].message = "<script>alert(\"x\")</script> & 'q'";
  set_outcome(&r[6], Outcome::kPassed, Bringup::kPassed, "pcc drift -0.0021; 2 layers changed");
  ran(&r[6], 0.9979, {{"css", 2}, {"host", 2}}, 14.0);
  set_outcome(&r[7], Outcome::kPassed, Bringup::kPassed, "fixed");
  ran(&r[7], 0.9993, {{"nss", 2}}, 2.5);
  r[7].message = "a long message that has to wrap inside its column rather than widen the table: " +
                 std::string(120, 'x');
  return results;
}

// The kind of change the report should highlight on each row, by hand
// from the since_previous texts above (matrix_report.h: new failures,
// fixes, other outcome changes, drift or changed layers, new tests).
const std::map<std::string, std::string> kChangeOf = {
    {"resnet18-bf16-sim-discover", "new-failure"},
    {"squeezenet1.0-bf16-astra-run", "outcome"},
    {"yolov8n-fp32-sim-discover", "new-test"},
    {"resnet18-fp32-astra-run", "drift"},
    {"resnet18-int8-sim-subgraph-Conv_layer1.0.conv1-Relu_layer4.1.relu_2", "fixed"},
};

// The model part of each sample ID (a placeholder has no model entry).
std::string model_of(const tm_::TestCase& t) { return t.model ? t.model->name : "yolov8n"; }

int layers_of(const tm_::TestResult& r) {
  int n = 0;
  for (const auto& [e, k] : r.run.executor_distribution) n += k;
  return n;
}

double nss_share(const tm_::TestResult& r) {
  const auto it = r.run.executor_distribution.find("nss");
  return it == r.run.executor_distribution.end() ? 0.0 : static_cast<double>(it->second) / layers_of(r);
}

// This run after two earlier ones: its trend has three points.
std::vector<tm_::RunInfo::TrendPoint> sample_trend(const std::vector<tm_::TestResult>& results) {
  tm_::RunInfo::TrendPoint now{3, "2024-05-01T12:00:00Z", 0, 0, static_cast<int>(results.size()), 0};
  double shares = 0;
  int with_layers = 0;
  for (const auto& r : results) {
    now.passed += r.outcome == tm_::Outcome::kPassed;
    now.failed += r.outcome == tm_::Outcome::kFailed;
    if (layers_of(r) > 0) shares += nss_share(r), ++with_layers;
  }
  now.nss_coverage = shares / with_layers;
  return {{1, "2024-04-29T12:00:00Z", 2, 3, 6, 0.41}, {2, "2024-04-30T12:00:00Z", 3, 2, 7, -1}, now};
}

tm_::RunInfo sample_info(const std::vector<tm_::TestResult>& results) {
  tm_::RunInfo info;
  info.spec = "tests/matrix/sample.yaml";
  info.run_id = "20240501-120000-sample";
  info.started_utc = "2024-05-01T12:00:00Z";
  info.wall_s = 61.5;
  info.jobs = 96;
  info.fleet_jobs = 80;
  info.cache_hits = 16;
  info.jobs_per_s = 1.56;
  info.preset = "nightly";
  info.m = "not slow";
  info.deselected = 4;
  info.trend = sample_trend(results);
  return info;
}

// ------------------------------------------------------------ expectations

void add_once(std::vector<std::string>* v, const std::string& s) {
  if (std::find(v->begin(), v->end(), s) == v->end()) v->push_back(s);
}

// Every model × variant: no test, tests without layers, or the mean of
// the tests' nss shares.
json expected_heatmap(const std::vector<tm_::TestResult>& results, const std::vector<std::string>& models,
                      const std::vector<std::string>& variants) {
  json cells = json::array();
  for (const auto& m : models)
    for (const auto& v : variants) {
      int tests = 0, with_layers = 0;
      double sum = 0;
      for (const auto& r : results)
        if (model_of(*r.test) == m && r.test->variant.name == v) {
          ++tests;
          if (layers_of(r) > 0) sum += nss_share(r), ++with_layers;
        }
      const std::string state = tests == 0 ? "absent" : with_layers == 0 ? "no-layers" : "coverage";
      cells.push_back({{"model", m}, {"variant", v}, {"state", state}, {"tests", tests},
                       {"coverage", with_layers ? json(sum / with_layers) : json(nullptr)}});
    }
  return cells;
}

json expected_bars(const std::vector<tm_::TestResult>& results, const std::vector<std::string>& models) {
  json bars = json::array();
  for (const auto& m : models) {
    json layers = json::object();
    int total = 0;
    for (const auto& r : results)
      if (model_of(*r.test) == m)
        for (const auto& [e, n] : r.run.executor_distribution) {
          layers[e] = layers.value(e, 0) + n;
          total += n;
        }
    bars.push_back({{"model", m}, {"layers", layers}, {"total", total}});
  }
  return bars;
}

// A grid page has a cell per layer and executor tested in any layer.
json expected_grid(const std::string& id, const tp::ModelReport& rep) {
  std::set<tp::Executor> executors;
  for (const auto& l : rep.layers)
    for (const auto& [e, x] : l.results) executors.insert(e);
  return {{"id", id}, {"path", tm_::grid_page_path(id)}, {"layers", rep.layers.size()},
          {"cells", rep.layers.size() * executors.size()}};
}

json expected(const std::vector<tm_::TestResult>& results, const tm_::RunInfo& info,
              const std::map<std::string, tp::ModelReport>& reports, const tp::OpMatrix& ops) {
  std::vector<std::string> models, variants, ids;
  for (const auto& r : results) {
    ids.push_back(r.test->id);
    add_once(&models, model_of(*r.test));
    add_once(&variants, r.test->variant.name);
  }
  json trend = json::array();
  for (const auto& p : info.trend)
    trend.push_back({{"seq", p.seq}, {"passed", p.passed}, {"total", p.total},
                     {"coverage", p.nss_coverage < 0 ? json(nullptr) : json(p.nss_coverage)}});
  json grids = json::array();
  for (const auto& r : results)
    if (const auto it = reports.find(r.test->id); it != reports.end())
      grids.push_back(expected_grid(it->first, it->second));
  return {{"ids", ids}, {"models", models}, {"variants", variants},
          {"heatmap", expected_heatmap(results, models, variants)}, {"bars", expected_bars(results, models)},
          {"trend", trend}, {"changes", kChangeOf}, {"grid_pages", grids},
          {"op_rows", ops.rows.size()}, {"op_executors", ops.executors.size()}, {"max_scroll_width", 1400}};
}

// ------------------------------------------------------------ writing

void write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw std::runtime_error(path.string() + ": cannot write");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: torq_html_sample <output-dir>\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  try {
    const World world;
    const std::vector<tm_::TestCase> cases = sample_cases(world);
    const std::vector<tm_::TestResult> results = sample_results(cases);
    tm_::RunInfo info = sample_info(results);
    const std::map<std::string, tp::ModelReport> reports = {{"resnet18-fp32-sim-discover", resnet_fp32()},
                                                            {"resnet18-bf16-sim-discover", resnet_bf16()}};
    std::vector<tp::history::TestRecord> records;
    std::set<std::string> pages;
    for (const auto& r : results)
      if (const auto it = reports.find(r.test->id); it != reports.end()) {
        records.push_back(tm_::test_record(r, &it->second, op_keys(it->second)));
        write(dir / tm_::grid_page_path(r.test->id), tm_::grid_page(r, it->second));
        pages.insert(r.test->id);
      }
    const tp::OpMatrix ops = tp::op_matrix(records);
    write(dir / "report.html", tm_::html_report(results, pages, info, &ops));
    write(dir / "ops.csv", tp::ops_csv(ops));
    write(dir / tm_::kOpsPage, tm_::ops_page(ops, info));
    write(dir / "junit.xml", tm_::junit_xml(results, info));
    write(dir / "summary.json", tm_::summary_json(results, info).dump(2) + "\n");
    write(dir / "expected.json", expected(results, info, reports, ops).dump(2) + "\n");
    info.trend.erase(info.trend.begin(), info.trend.end() - 1);  // the spec's first run
    write(dir / "first-run" / "report.html", tm_::html_report(results, {}, info, &ops));
    std::cout << "wrote " << (dir / "report.html").string() << " (" << std::filesystem::file_size(dir / "report.html")
              << " bytes), " << pages.size() << " grid pages, first-run/report.html, junit.xml, summary.json, ops.csv, "
              << "expected.json\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "torq_html_sample: " << e.what() << "\n";
    return 2;
  }
}
