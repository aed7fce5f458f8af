// Session::Steps: run_all taken a node at a time. Every value it returns
// must be bit-identical to run_all's (dtype, shape, bytes), each name once;
// a failing node ends the run with EngineError, keeps the values before it
// and leaves done() true. The run frees its own copy of a value after the
// value's last consumer, as run() does.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "pipeline/base/error.h"
#include "worker/engine/session.h"
#include "worker/engine/tensor.h"
#include "worker/sim/demo_model.h"

using namespace torq::engine;

namespace {

bool same(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape() || !a.is_plain() || !b.is_plain()) return false;
  return std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

void expect_steps_equal_run_all(const onnx::ModelProto& m, SessionOptions so) {
  auto s = Session::from_proto(m, so);
  const auto in = s->random_inputs(3);
  const auto all = s->run_all(in);
  auto steps = s->start_steps(in);
  std::map<std::string, Tensor> got;
  size_t calls = 0;
  while (!steps->done()) {
    for (auto& [name, t] : steps->step()) EXPECT_TRUE(got.emplace(name, t).second) << name << " returned twice";
    ASSERT_LT(++calls, 10000u);
  }
  ASSERT_EQ(got.size(), all.size());
  for (const auto& [name, t] : all) {
    auto g = got.find(name);
    ASSERT_NE(g, got.end()) << name;
    EXPECT_TRUE(same(g->second, t)) << name;
  }
  EXPECT_GT(calls, 10u);  // a node per call, not the whole run at once
}

}  // namespace

TEST(SessionSteps, EveryValueEqualsRunAllInFp32AndBf16) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(torq::sim::build_demo_model()));
  SessionOptions so;
  expect_steps_equal_run_all(m, so);
  so.numerics = Numerics::kBF16;
  expect_steps_equal_run_all(m, so);
}

TEST(SessionSteps, TheRunFreesItsCopyOfAValueAfterItsLastConsumer) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(torq::sim::build_demo_model()));
  auto s = Session::from_proto(m, SessionOptions{});
  std::set<std::string> outputs;
  for (const auto& o : m.graph().output()) outputs.insert(o.name());
  auto steps = s->start_steps(s->random_inputs(3));
  std::map<std::string, Tensor> got;
  while (!steps->done())
    for (auto& [name, t] : steps->step()) got.emplace(name, t);
  std::map<const void*, long> held;  // buffer -> values in `got` on it (a Flatten shares its input's)
  for (const auto& [name, t] : got) ++held[t.raw()];
  int intermediates = 0;
  for (const auto& [name, t] : got) {
    if (s->is_constant(name) || outputs.count(name)) continue;
    ++intermediates;
    // Only `got` holds it: the run (still alive) released its copy, or
    // never kept one beside the plain copy it returned.
    EXPECT_EQ(t.use_count(), held[t.raw()]) << name;
  }
  EXPECT_GT(intermediates, 5);
}

TEST(SessionSteps, AFailingNodeEndsTheRunAndKeepsTheValuesBefore) {
  // x -> Relu -> r -> Reshape(r, shape = [7]) fails (4 elements), y never comes.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int d : {2, 2}) x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  auto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(1);
  shape->add_int64_data(7);
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("x");
  relu->add_output("r");
  auto* rs = g->add_node();
  rs->set_op_type("Reshape");
  rs->add_input("r");
  rs->add_input("shape");
  rs->add_output("y");
  g->add_output()->set_name("y");
  auto s = Session::from_proto(m);
  auto steps = s->start_steps({Tensor(DType::kF32, {2, 2})});
  std::map<std::string, Tensor> got;
  bool threw = false;
  while (!steps->done()) try {
      for (auto& [name, t] : steps->step()) got.emplace(name, t);
    } catch (const EngineError&) {
      threw = true;
    }
  EXPECT_TRUE(threw);
  EXPECT_EQ(got.count("x"), 1u);
  EXPECT_EQ(got.count("r"), 1u);
  EXPECT_EQ(got.count("y"), 0u);
  std::string error;
  const auto all = s->run_all({Tensor(DType::kF32, {2, 2})}, &error);
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(all.count("r"), 1u);
}
