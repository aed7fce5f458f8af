// Shared harness for the kernel-family unit tests (test_movement.cc,
// test_shape.cc, test_resize.cc, test_unary.cc, test_binary.cc,
// test_norm.cc, test_pool.cc, test_reduce.cc): builds ONNX nodes with
// attributes, runs one node through a kernel from a registry, and reads
// values and error kinds back. Header-only; everything is inline so each
// test file can use any subset.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/engine/dnnl_util.h"
#include "pipeline/base/error.h"
#include "worker/engine/kernel.h"

// For the tests that feed a kernel bf16 directly: only where oneDNN has
// native bf16. Elsewhere the session never does (it feeds kernels f32 and
// rounds their outputs: bf16 emulated), so there is nothing to test.
#define TORQ_REQUIRE_NATIVE_BF16()              \
  if (!::torq::engine::dnnl_bf16_supported()) \
  GTEST_SKIP() << "no native bf16 on this CPU (or under ONEDNN_MAX_CPU_ISA): kernels never get bf16 here"

namespace torq::engine::test {

// A node of type `op` with inputs in0.. and outputs out0...
inline onnx::NodeProto make_node(const std::string& op, size_t inputs, size_t outputs = 1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(op + "_node");
  for (size_t i = 0; i < inputs; ++i) n.add_input("in" + std::to_string(i));
  for (size_t i = 0; i < outputs; ++i) n.add_output("out" + std::to_string(i));
  return n;
}

// A node with the given input names; "" marks an omitted optional input.
inline onnx::NodeProto make_node(const std::string& op, const std::vector<std::string>& inputs,
                                 size_t outputs = 1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(op + "_node");
  for (const auto& i : inputs) n.add_input(i);
  for (size_t i = 0; i < outputs; ++i) n.add_output("out" + std::to_string(i));
  return n;
}

inline onnx::AttributeProto* add_attr(onnx::NodeProto& n, const std::string& name,
                                      onnx::AttributeProto::AttributeType type) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

inline void add_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
  add_attr(n, name, onnx::AttributeProto::INT)->set_i(v);
}

inline void add_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = add_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

inline void add_float(onnx::NodeProto& n, const std::string& name, float v) {
  add_attr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
}

inline void add_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  add_attr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}

// Runs one node through the kernel the registry picks for (op_type, opset).
// The registry is KernelRegistry::global() unless a family's register
// function is given, in which case a fresh registry with only that family
// is used. Undefined input tensors are passed as omitted (nullptr) inputs.
struct KernelRunner {
  using RegisterFn = void (*)(KernelRegistry&);

  explicit KernelRunner(RegisterFn family = nullptr, bool constant = false)
      : register_family(family), constant_inputs(constant) {}

  DnnlEnv env;
  Rounding rounding = Rounding::kNearestEven;
  RegisterFn register_family;
  bool constant_inputs;  // the input_constant flag given for every input

  // Every output of the node (one per output the node names).
  std::vector<Tensor> run_all(const onnx::NodeProto& proto, int opset,
                              const std::vector<Tensor>& inputs) {
    KernelRegistry local;
    if (register_family) register_family(local);
    const KernelRegistry& reg = register_family ? local : KernelRegistry::global();
    const KernelFactory* f = reg.find(proto.op_type(), opset);
    if (!f) throw std::runtime_error("no kernel for " + proto.op_type());
    NodeInfo info(proto, opset);
    std::unique_ptr<Kernel> k = (*f)(info);
    std::vector<const Tensor*> ptrs;
    for (const auto& t : inputs) ptrs.push_back(t.defined() ? &t : nullptr);
    std::vector<Tensor> outs(static_cast<size_t>(proto.output_size()));
    KernelContext ctx(ptrs, std::vector<bool>(inputs.size(), constant_inputs), &outs, &env,
                      rounding, 1);
    k->compute(ctx);
    return outs;
  }
  // The first output.
  Tensor run(const onnx::NodeProto& proto, int opset, const std::vector<Tensor>& inputs) {
    return run_all(proto, opset, inputs)[0];
  }
  // The first output of a node `op` with one input per tensor and no attributes.
  Tensor run(const std::string& op, int opset, const std::vector<Tensor>& inputs) {
    return run(make_node(op, inputs.size()), opset, inputs);
  }
};

template <class T>
std::vector<T> values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

inline std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_as_double(i);
  return v;
}

// A tensor of `v` with shape `s` (default: 1-D of v's size).
template <class T>
Tensor vec(const std::vector<T>& v, Shape s = {}) {
  if (s.empty()) s = {static_cast<int64_t>(v.size())};
  return Tensor::from_vector<T>(v, s);
}

// A 1-D int64 tensor.
inline Tensor ints(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
}

// The kind of the EngineError f throws (a test failure if it throws none).
inline ErrorKind error_kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const EngineError& e) {
    return e.kind();
  }
  ADD_FAILURE() << "expected an EngineError";
  return ErrorKind::kRuntime;
}

}  // namespace torq::engine::test
