#include "worker/engine/quant_ops.h"

#include <map>

namespace torq::engine {

namespace {

struct Entry {
  const char* float_op;
  std::vector<size_t> inputs, scales;
};

// Input positions from the ONNX and com.microsoft operator specifications.
// QLinearConcat's (X, scale, zero point) triples are added by arity below.
const std::map<std::string, Entry>& table() {
  static const std::map<std::string, Entry> t = {
      {"QLinearConv", {"Conv", {0, 3, 8}, {1, 4, 6}}},
      {"ConvInteger", {"Conv", {0, 1}, {}}},
      {"QLinearMatMul", {"MatMul", {0, 3}, {1, 4, 6}}},
      {"MatMulInteger", {"MatMul", {0, 1}, {}}},
      {"QLinearAdd", {"Add", {0, 3}, {1, 4, 6}}},
      {"QLinearMul", {"Mul", {0, 3}, {1, 4, 6}}},
      {"QLinearSigmoid", {"Sigmoid", {0}, {1, 3}}},
      {"QLinearLeakyRelu", {"LeakyRelu", {0}, {1, 3}}},
      {"QLinearAveragePool", {"AveragePool", {0}, {1, 3}}},
      {"QLinearGlobalAveragePool", {"GlobalAveragePool", {0}, {1, 3}}},
      {"QLinearConcat", {"Concat", {}, {0}}},
  };
  return t;
}

std::vector<size_t> within(const std::vector<size_t>& positions, size_t num_inputs) {
  std::vector<size_t> out;
  for (size_t p : positions)
    if (p < num_inputs) out.push_back(p);
  return out;
}

}  // namespace

std::optional<QOperatorForm> qoperator_form(const std::string& op_type, size_t num_inputs) {
  auto it = table().find(op_type);
  if (it == table().end()) return std::nullopt;
  QOperatorForm f{it->second.float_op, within(it->second.inputs, num_inputs)};
  if (op_type == "QLinearConcat")  // Y_scale, Y_zero_point, then (X, X_scale, X_zero_point)...
    for (size_t i = 2; i < num_inputs; i += 3) f.inputs.push_back(i);
  return f;
}

bool is_accumulator_input(const std::string& float_op, size_t i) {
  return i == 2 && (float_op == "Conv" || float_op == "ConvTranspose" || float_op == "Gemm");
}

std::vector<size_t> scale_inputs(const std::string& op_type, size_t num_inputs) {
  if (op_type == "QuantizeLinear" || op_type == "DequantizeLinear") return within({1}, num_inputs);
  auto it = table().find(op_type);
  if (it == table().end()) return {};
  std::vector<size_t> s = within(it->second.scales, num_inputs);
  if (op_type == "QLinearConcat")
    for (size_t i = 3; i < num_inputs; i += 3) s.push_back(i);
  return s;
}

}  // namespace torq::engine
