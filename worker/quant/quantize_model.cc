#include "worker/quant/quantize_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "pipeline/base/file_bytes.h"
#include "pipeline/base/progress.h"
#include "pipeline/report/atomic_file.h"
#include "worker/engine/session.h"
#include "worker/quant/calibrate.h"

namespace torq::quant {
namespace {

pipeline::ConversionError tensor_error(const std::string& name, const engine::Tensor& ref, const engine::Tensor& got) {
  pipeline::ConversionError e;
  e.tensor = name;
  e.size = ref.numel();
  const float* a = ref.data<float>();
  const float* b = got.data<float>();
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < e.size; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    e.max_abs = std::max(e.max_abs, d);
    if (a[i] != 0) e.max_rel = std::max(e.max_rel, d / std::fabs(a[i]));
    sum += d;
    sq += d * d;
  }
  if (e.size) {
    e.mean_abs = sum / static_cast<double>(e.size);
    e.rmse = std::sqrt(sq / static_cast<double>(e.size));
  }
  return e;
}

double pcc(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  if (x.empty()) return 0;
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : (sxx == syy ? 1.0 : 0.0);
}

// Where the quantized model holds a tensor's quantized value: a float tensor
// (QDQ: its DequantizeLinear output) or an int8 tensor to dequantize.
struct Probe {
  std::string tensor, name;
  std::optional<QParams> dequantize;
};

std::vector<Probe> probes(const QuantizeReport& r) {
  std::vector<Probe> out;
  if (r.qoperator)
    for (const auto& [t, q] : r.qoperator->quantized) out.push_back({t, q.name, q.params});
  else
    for (const auto& [t, dq] : r.qdq.dequantized) out.push_back({t, dq, std::nullopt});
  return out;
}

// The probed value in fp32; nullopt when the run has no such value.
std::optional<engine::Tensor> probed(const std::map<std::string, engine::Tensor>& values, const Probe& p) {
  auto it = values.find(p.name);
  if (it == values.end()) return std::nullopt;
  const engine::Tensor& t = it->second;
  if (!p.dequantize) return t.dtype() == engine::DType::kF32 ? std::optional(t) : std::nullopt;
  if (t.dtype() != engine::DType::kI8) return std::nullopt;
  const QParams q = *p.dequantize;
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(t.data<int8_t>()[i] - q.zero_point) * q.scale;
  return engine::Tensor::from_vector<float>(v, t.shape());
}

// Both models on discovery's input (seed): per-tensor errors and the graph
// outputs' agreement.
void measure(const onnx::ModelProto& fp32, QuantizeReport* r, uint64_t seed, int threads) {
  engine::SessionOptions so;
  so.threads = threads;
  auto a = engine::Session::from_proto(fp32, so);
  auto b = engine::Session::from_proto(r->model(), so);
  const auto inputs = a->random_inputs(seed, -1.f, 1.f);
  auto va = a->run_all(inputs);
  auto vb = b->run_all(inputs);
  for (const auto& p : probes(*r)) {
    auto x = va.find(p.tensor);
    const auto y = probed(vb, p);
    if (x == va.end() || !y || x->second.dtype() != engine::DType::kF32 || x->second.numel() != y->numel()) continue;
    r->errors.push_back(tensor_error(p.tensor, x->second, *y));
  }
  std::sort(r->errors.begin(), r->errors.end(), [](const auto& p, const auto& q) { return p.rmse > q.rmse; });
  std::vector<double> xs, ys;
  for (const auto& o : a->outputs()) {
    const auto& x = va.at(o.name);
    const auto& y = vb.at(o.name);
    if (x.dtype() != engine::DType::kF32 || y.dtype() != engine::DType::kF32) continue;
    for (int64_t i = 0; i < x.numel(); ++i) {
      xs.push_back(x.data<float>()[i]);
      ys.push_back(y.data<float>()[i]);
      r->output_max_abs = std::max(r->output_max_abs, std::fabs(xs.back() - ys.back()));
    }
  }
  r->output_pcc = pcc(xs, ys);
}

}  // namespace

QuantizeReport quantize_model(const onnx::ModelProto& fp32, const QuantizeOptions& o) {
  if (o.num_calib < 1) throw std::invalid_argument("--num-calib must be at least 1 (got " + std::to_string(o.num_calib) + ")");
  if (o.format != "qdq" && o.format != "qoperator")
    throw std::invalid_argument("--quant-format must be qdq or qoperator (got '" + o.format + "')");
  std::string which;
  if (is_quantized(fp32, &which))
    throw std::invalid_argument("the model is already quantized (" + which + "): give the fp32 model");
  QuantizeReport r;
  if (o.threads < 0) throw std::invalid_argument("--threads must be 0 (every core) or more (got " + std::to_string(o.threads) + ")");
  const auto ranges = calibrate(fp32, o.num_calib, o.seed, o.threads);
  base::Progress::note("rewriting the graph as QDQ");
  r.qdq = quantize_qdq(fp32, ranges, QdqOptions{o.per_channel});
  if (o.format == "qoperator") {
    base::Progress::note("rewriting the graph as QOperator");
    r.qoperator = to_qoperator(r.qdq);
  }
  if (!o.measure) return r;
  base::Progress::note("measuring the quantized model against the fp32 one");
  measure(fp32, &r, o.seed, o.threads);
  return r;
}

namespace {

std::string default_output(const QuantizeOptions& o, const std::string& name) {
  return (std::filesystem::path(o.output_dir) / (name + "_quant.onnx")).string();
}

// "<what> N (A a, B b)": the total and the count per op type.
std::string by_op(const std::string& what, const std::map<std::string, int>& counts) {
  int total = 0;
  std::ostringstream list;
  for (const auto& [op, n] : counts) {
    list << (total ? ", " : "") << op << " " << n;
    total += n;
  }
  return what + " " + std::to_string(total) + (total ? " (" + list.str() + ")" : "");
}

void print_qoperator(const QOperatorResult& q, std::ostream& out) {
  out << "qoperator ops: " << by_op("integer", q.integer_ops) << "; " << by_op("on int8", q.on_int8) << "; "
      << by_op("clamps folded into the quantization before them", q.folded) << "; "
      << by_op("stayed QDQ", q.stayed_qdq) << "\n";
}

void print_errors(const QuantizeReport& r, const QuantizeOptions& o, std::ostream& out) {
  out << std::setprecision(6) << "graph outputs vs fp32 (seed " << o.seed << ", held out from calibration): PCC "
      << r.output_pcc << ", max abs diff " << r.output_max_abs << "\n";
  out << "quantization error per tensor (worst rmse first, " << r.errors.size() << " tensors):\n";
  for (size_t i = 0; i < r.errors.size() && i < 10; ++i) {
    const auto& e = r.errors[i];
    out << "  " << e.tensor << ": rmse " << e.rmse << ", mean abs " << e.mean_abs << ", max abs " << e.max_abs
        << " (" << e.size << " elements)\n";
  }
}

void print_report(const QuantizeReport& r, const QuantizeOptions& o, const std::string& path, std::ostream& out) {
  out << "quantized (static int8, " << o.format << ", " << (o.per_channel ? "per-channel" : "per-tensor")
      << " weights, " << o.num_calib << " calibration inputs, seed " << o.seed << "): " << r.qdq.weights
      << " weights, " << r.qdq.biases << " biases, " << r.qdq.activations << " activations\n";
  if (r.qoperator) print_qoperator(*r.qoperator, out);
  if (o.measure) print_errors(r, o, out);
  else out << "not measured against the fp32 model (--no-measure)\n";
  for (const auto& n : r.qdq.notes) out << "note: " << n << "\n";
  out << "wrote " << path << "\n";
}

}  // namespace

int quantize_command(const QuantizeOptions& o, std::ostream& out, std::ostream& err) {
  try {
    auto model = pipeline::ImportedModel::from_file(o.model);
    QuantizeReport r = quantize_model(model->proto(), o);
    const std::string path = o.output.empty() ? default_output(o, model->name()) : o.output;
    if (const std::string why = base::not_a_writable_file(path); !why.empty())
      throw std::runtime_error(path + ": cannot write: " + why);
    if (auto dir = std::filesystem::path(path).parent_path(); !dir.empty()) pipeline::prepare_output_dir(dir.string());
    // Published whole through <path>.tmp.<pid> (a kill leaves no half model
    // under the name; the next start in the directory sweeps the temporary).
    std::string bytes;
    if (!r.model().SerializeToString(&bytes)) throw std::runtime_error(path + ": cannot serialize the quantized model");
    pipeline::write_file_atomic(path, bytes);
    print_report(r, o, path, out);
    return 0;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace torq::quant
