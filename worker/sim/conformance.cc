#include "worker/sim/conformance.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "pipeline/base/error.h"
#include "worker/engine/session.h"
#include "worker/engine/tensor_io.h"

namespace fs = std::filesystem;
using namespace torq::engine;

namespace torq::sim {

std::vector<std::string> find_cases(const std::vector<std::string>& roots) {
  std::vector<std::string> out;
  for (const auto& root : roots) {
    if (!fs::exists(root)) throw EngineError(ErrorKind::kInvalidInput, root + ": no such directory");
    if (fs::exists(fs::path(root) / "model.onnx")) {
      out.push_back(root);
      continue;
    }
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.is_regular_file() && e.path().filename() == "model.onnx")
        out.push_back(e.path().parent_path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

static std::vector<std::string> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> files;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p.string());
  }
  return files;
}

// Reinterprets a uint16 tensor as bfloat16 bit patterns (no conversion).
static Tensor as_bf16_bits(const Tensor& t) {
  if (t.dtype() != DType::kU16) return t;
  Tensor out(DType::kBF16, t.shape());
  std::memcpy(out.raw(), t.raw(), t.nbytes());
  return out;
}

// Compares like np.testing.assert_allclose; returns "" when equal enough,
// else a description. max_err receives the largest |actual - expected|.
static std::string compare(const Tensor& actual, const Tensor& expected, double rtol, double atol,
                           double* max_err) {
  if (actual.dtype() != expected.dtype())
    return std::string("dtype ") + dtype_name(actual.dtype()) + ", expected " + dtype_name(expected.dtype());
  if (actual.shape() != expected.shape())
    return "shape " + shape_str(actual.shape()) + ", expected " + shape_str(expected.shape());
  int64_t bad = 0, first_bad = -1;
  double worst = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.get_as_double(i), e = expected.get_as_double(i);
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e)) { ++bad; if (first_bad < 0) first_bad = i; }
      continue;
    }
    if (std::isinf(a) || std::isinf(e)) {
      if (a != e) { ++bad; if (first_bad < 0) first_bad = i; }
      continue;
    }
    const double d = std::fabs(a - e);
    worst = std::max(worst, d);
    if (d > atol + rtol * std::fabs(e)) { ++bad; if (first_bad < 0) first_bad = i; }
  }
  *max_err = std::max(*max_err, worst);
  if (!bad) return "";
  std::ostringstream os;
  os << bad << " of " << actual.numel() << " elements differ, max abs err " << worst << " (first at "
     << first_bad << ": got " << actual.get_as_double(first_bad) << ", expected "
     << expected.get_as_double(first_bad) << ")";
  return os.str();
}

CaseResult run_case(const std::string& dir, const ConformanceOptions& opts) {
  CaseResult r;
  r.name = fs::path(dir).filename().string();
  try {
    SessionOptions so;
    so.threads = opts.threads;
    so.rounding = opts.rounding;
    so.check_input_shapes = false;  // as the ONNX backend runner
    so.profile = std::make_shared<ExecutorProfile>(ExecutorProfile::resolve(opts.profile));
    auto session = Session::from_file((fs::path(dir) / "model.onnx").string(), so);
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
        sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) throw EngineError(ErrorKind::kInvalidInput, "no test_data_set_* directory");
    double max_err = 0;
    for (const auto& set : sets) {
      std::vector<Tensor> inputs;
      for (const auto& f : numbered(set, "input_")) {
        Tensor t = read_tensor_file(f);
        // ONNX 1.12's test generator stores bfloat16 data as uint16 bit patterns.
        const size_t i = inputs.size();
        if (i < session->inputs().size() && session->inputs()[i].dtype == DType::kBF16) t = as_bf16_bits(t);
        inputs.push_back(t);
      }
      std::vector<Tensor> expected;
      for (const auto& f : numbered(set, "output_")) expected.push_back(read_tensor_file(f));
      std::vector<Tensor> outputs = session->run(inputs);
      if (outputs.size() != expected.size()) {
        r.outcome = CaseOutcome::kFail;
        r.detail = set.filename().string() + ": " + std::to_string(outputs.size()) + " outputs, expected " +
                   std::to_string(expected.size());
        return r;
      }
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i].dtype() == DType::kBF16) expected[i] = as_bf16_bits(expected[i]);
        std::string why = compare(outputs[i], expected[i], opts.rtol, opts.atol, &max_err);
        if (!why.empty()) {
          r.outcome = CaseOutcome::kFail;
          r.detail = set.filename().string() + " output " + std::to_string(i) + ": " + why;
          return r;
        }
      }
    }
    std::ostringstream os;
    os << "max abs err " << max_err;
    r.detail = os.str();
  } catch (const EngineError& e) {
    r.outcome = e.kind() == ErrorKind::kUnsupported ? CaseOutcome::kUnsupported : CaseOutcome::kFail;
    r.detail = std::string(error_kind_name(e.kind())) + ": " + e.what();
  } catch (const std::exception& e) {
    r.outcome = CaseOutcome::kFail;
    r.detail = std::string("exception: ") + e.what();
  }
  return r;
}

int run_conformance(const std::vector<std::string>& roots, const ConformanceOptions& opts,
                    std::ostream& out) {
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& dir : find_cases(roots)) {
    const std::string name = fs::path(dir).filename().string();
    if (!opts.filters.empty() &&
        std::none_of(opts.filters.begin(), opts.filters.end(),
                     [&](const std::string& f) { return name.find(f) != std::string::npos; }))
      continue;
    CaseResult r = run_case(dir, opts);
    const char* tag = r.outcome == CaseOutcome::kPass ? "PASS" : r.outcome == CaseOutcome::kFail ? "FAIL" : "UNSUPPORTED";
    out << tag << " " << fs::path(dir).parent_path().filename().string() << "/" << r.name << ": " << r.detail << "\n";
    out.flush();
    if (r.outcome == CaseOutcome::kPass) ++passed;
    else if (r.outcome == CaseOutcome::kFail) ++failed;
    else ++skipped;
  }
  out << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed;
}

}  // namespace torq::sim
