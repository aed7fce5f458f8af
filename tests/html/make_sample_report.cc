// torq_html_sample: writes the matrix reports of a fixed sample run into a
// directory (report.html, junit.xml, summary.json) for
// tests/html/check_html_report.sh, which checks them in a headless browser
// and with Python's XML and JSON parsers. The sample covers every outcome,
// two model reports (success, difference, error and untested cells, a
// critical failure, a layer without recommendation), what changed since
// the previous run, the op-support matrix of the two reports (also written
// as ops.csv) and text that needs escaping (<&"' in an ID and a message).
//
// Usage: torq_html_sample <output-dir>   (exit 0, or 2 with a message)
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "pipeline/matrix/matrix_history.h"
#include "pipeline/matrix/matrix_report.h"
#include "pipeline/report/op_matrix.h"
#include "pipeline/report/report.h"

namespace tp = torq::pipeline;
namespace tm_ = torq::pipeline::matrix;

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: torq_html_sample <output-dir>\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  try {
    std::filesystem::create_directories(dir);
    const tm_::ModelEntry resnet{"resnet18", "/models/resnet18.onnx", "", {}};
    const tm_::ModelEntry squeeze{"squeezenet1.0", "/models/squeezenet1.0.onnx", "", {}};
    const tm_::ModelEntry odd{"odd<&\"'>", "/models/odd.onnx", "", {}};
    tm_::Variant fp32, bf16;
    bf16.name = "bf16";
    bf16.bf16 = true;
    tm_::Target sim, astra;
    astra.name = "astra";
    astra.board = "astra";

    auto make = [](const std::string& id, const tm_::ModelEntry* model, const tm_::Variant& v, const tm_::Target& t,
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
    };
    const std::vector<tm_::TestCase> cases = {
        make("resnet18-fp32-sim-discover", &resnet, fp32, sim, tm_::Mode::kDiscover,
             tm_::TestStatus::kExpectedPassing),
        make("resnet18-bf16-sim-discover", &resnet, bf16, sim, tm_::Mode::kDiscover,
             tm_::TestStatus::kExpectedPassing),
        make("squeezenet1.0-fp32-sim-discover", &squeeze, fp32, sim, tm_::Mode::kDiscover,
             tm_::TestStatus::kKnownFailureXfail),
        make("squeezenet1.0-bf16-astra-run", &squeeze, bf16, astra, tm_::Mode::kRun,
             tm_::TestStatus::kKnownFailureXfail),
        make("yolov8n-fp32-sim-discover", nullptr, fp32, sim, tm_::Mode::kDiscover, tm_::TestStatus::kUnspecified),
        make("odd<&\"'>-fp32-sim-run", &odd, fp32, sim, tm_::Mode::kRun, tm_::TestStatus::kNotSupportedSkip),
    };

    std::vector<tm_::TestResult> results(cases.size());
    for (size_t i = 0; i < cases.size(); ++i) results[i].test = &cases[i];
    {  // passed
      tm_::TestResult& r = results[0];
      r.outcome = tm_::Outcome::kPassed;
      r.bringup = tm_::Bringup::kPassed;
      r.run.ran = true;
      r.run.pcc = 0.9998;
      r.run.max_abs = 0.5;
      r.run.max_rel = 0.125;
      r.run.layers = 4;
      r.run.executor_distribution = {{"nss", 3}, {"host", 1}};
      r.run.wall_s = 12.5;
      r.run.report_file = "reports/resnet18-fp32-sim-discover/torq_gen_config_resnet18.json";
      r.since_previous = "unchanged";
    }
    {  // failed: PCC under the requirement, one critical failure
      tm_::TestResult& r = results[1];
      r.outcome = tm_::Outcome::kFailed;
      r.bringup = tm_::Bringup::kIncorrectResult;
      r.message = "pcc 0.95 < required 0.99 (layer Resize_up<1> & \"friends\")";
      r.run.ran = true;
      r.run.failed_step = "result";
      r.run.message = "critical failure: Resize_up<1>";
      r.run.pcc = 0.95;
      r.run.max_abs = 3.0;
      r.run.max_rel = 0.75;
      r.run.layers = 3;
      r.run.critical_failures = 1;
      r.run.executor_distribution = {{"nss", 1}, {"host", 1}};
      r.run.wall_s = 9.25;
      r.since_previous = "new failure; 1 layer changed";
    }
    {  // xfailed
      tm_::TestResult& r = results[2];
      r.outcome = tm_::Outcome::kXfailed;
      r.bringup = tm_::Bringup::kFailedCompilation;
      r.message = "known failure: Fire squeeze concat on css";
      r.run.ran = true;
      r.run.failed_step = "compile";
      r.run.message = "concat: unsupported axis";
      r.run.wall_s = 3.0;
    }
    {  // xpassed
      tm_::TestResult& r = results[3];
      r.outcome = tm_::Outcome::kXpassed;
      r.bringup = tm_::Bringup::kPassed;
      r.message = "expected to fail but passed";
      r.run.ran = true;
      r.run.pcc = 0.9991;
      r.run.layers = 26;
      r.run.executor_distribution = {{"nss", 20}, {"css", 6}};
      r.run.wall_s = 30.0;
    }
    {  // skipped placeholder
      tm_::TestResult& r = results[4];
      r.outcome = tm_::Outcome::kSkipped;
      r.bringup = tm_::Bringup::kNotStarted;
      r.message = "not yet exported";
    }
    {  // skipped, text needing escapes
      tm_::TestResult& r = results[5];
      r.outcome = tm_::Outcome::kSkipped;
      r.bringup = tm_::Bringup::kUnknown;
      r.message = "<script>alert(\"x\")</script> & 'q'";
    }

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

    const std::map<std::string, tp::ModelReport> reports = {{"resnet18-fp32-sim-discover", resnet_fp32()},
                                                            {"resnet18-bf16-sim-discover", resnet_bf16()}};
    std::vector<tp::history::TestRecord> records;
    for (const auto& [id, rep] : reports)
      for (const auto& r : results)
        if (r.test->id == id) records.push_back(tm_::test_record(r, &rep, op_keys(rep)));
    const tp::OpMatrix ops = tp::op_matrix(records);
    std::ofstream(dir / "report.html") << tm_::html_report(results, reports, info, &ops);
    std::ofstream(dir / "ops.csv") << tp::ops_csv(ops);
    std::ofstream(dir / "junit.xml") << tm_::junit_xml(results, info);
    std::ofstream(dir / "summary.json") << tm_::summary_json(results, info).dump(2) << "\n";
    std::cout << "wrote " << (dir / "report.html").string() << ", junit.xml, summary.json, ops.csv\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "torq_html_sample: " << e.what() << "\n";
    return 2;
  }
}
