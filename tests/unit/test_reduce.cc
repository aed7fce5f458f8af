// Unit tests of the reduction kernels (reduce.cc, reduce_impl.cc): values
// of every Reduce* op over single, multiple, negative and default axes,
// keepdims, ReduceSum-13's axes input and noop_with_empty_axes, integer
// dtypes, ArgMax / ArgMin with select_last_index, and unsupported variants.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/kernel_harness.h"
#include "worker/engine/dnnl_util.h"
#include "pipeline/base/error.h"
#include "worker/engine/kernel.h"

namespace torq::engine {
namespace {

using namespace test;

using Runner = KernelRunner;

void expect_near(const std::vector<double>& got, const std::vector<double>& want,
                 double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// x = [[1, -2, 3], [4, 5, -6]]
Tensor sample() { return Tensor::from_vector<float>({1, -2, 3, 4, 5, -6}, {2, 3}); }

TEST(Reduce, EveryOpAlongLastAxis) {
  Runner r;
  struct Case {
    const char* op;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {"ReduceSum", {2, 3}},
      {"ReduceMean", {2.0 / 3, 1}},
      {"ReduceMax", {3, 5}},
      {"ReduceMin", {-2, -6}},
      {"ReduceProd", {-6, -120}},
      {"ReduceL1", {6, 15}},
      {"ReduceL2", {std::sqrt(14.0), std::sqrt(77.0)}},
      {"ReduceSumSquare", {14, 77}},
      {"ReduceLogSumExp",
       {std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(3.0)),
        std::log(std::exp(4.0) + std::exp(5.0) + std::exp(-6.0))}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    auto n = make_node(c.op, 1);
    add_ints(n, "axes", {-1});
    add_int(n, "keepdims", 0);
    const Tensor y = r.run(n, 11, {sample()});
    EXPECT_EQ(y.shape(), (Shape{2}));
    expect_near(doubles(y), c.want);
  }
  auto n = make_node("ReduceLogSum", 1);  // default: all axes, keepdims
  const Tensor y = r.run(n, 11, {Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2})});
  EXPECT_EQ(y.shape(), (Shape{1, 1}));
  expect_near(doubles(y), {std::log(10.0)});
}

TEST(Reduce, MultipleAxesKeepDims) {
  Runner r;
  Tensor x(DType::kF32, {2, 3, 4});
  for (int64_t i = 0; i < 24; ++i) x.data<float>()[i] = static_cast<float>(i);
  auto n = make_node("ReduceMean", 1);
  add_ints(n, "axes", {0, 2});
  const Tensor y = r.run(n, 13, {x});
  EXPECT_EQ(y.shape(), (Shape{1, 3, 1}));
  expect_near(doubles(y), {(0 + 1 + 2 + 3 + 12 + 13 + 14 + 15) / 8.0, 11.5, 15.5});
}

TEST(Reduce, ReduceSum13AxesInputAndNoop) {
  Runner r;
  auto n = make_node("ReduceSum", 2);
  add_int(n, "keepdims", 0);
  expect_near(doubles(r.run(n, 13, {sample(), Tensor::from_vector<int64_t>({0}, {1})})),
              {5, 3, -3});
  // Empty axes: all axes, unless noop_with_empty_axes.
  const Tensor none(DType::kI64, {0});
  expect_near(doubles(r.run(n, 13, {sample(), none})), {5});
  auto noop = make_node("ReduceSum", 2);
  add_int(noop, "noop_with_empty_axes", 1);
  const Tensor y = r.run(noop, 13, {sample(), none});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  expect_near(doubles(y), {1, -2, 3, 4, 5, -6});
}

TEST(Reduce, IntegerDtypesStayExact) {
  Runner r;
  Tensor x = Tensor::from_vector<int64_t>({3000000000LL, 3000000000LL, -7, 2}, {2, 2});
  auto n = make_node("ReduceSum", 1);
  add_ints(n, "axes", {1});
  Tensor y = r.run(n, 11, {x});
  ASSERT_EQ(y.dtype(), DType::kI64);
  EXPECT_EQ(y.data<int64_t>()[0], 6000000000LL);
  EXPECT_EQ(y.data<int64_t>()[1], -5);
  auto mean = make_node("ReduceMean", 1);
  add_ints(mean, "axes", {1});
  Tensor xi = Tensor::from_vector<int32_t>({-7, 2, 5, 6}, {2, 2});
  y = r.run(mean, 11, {xi});
  ASSERT_EQ(y.dtype(), DType::kI32);
  EXPECT_EQ(y.data<int32_t>()[0], -2);  // -5 / 2 truncates toward zero
  EXPECT_EQ(y.data<int32_t>()[1], 5);
  auto l2 = make_node("ReduceL2", 1);
  EXPECT_EQ(error_kind_of([&] { r.run(l2, 13, {xi}); }), ErrorKind::kUnsupported);
}

TEST(Reduce, ArgMaxArgMinSelectLastIndex) {
  Runner r;
  Tensor x = Tensor::from_vector<float>({2, 7, 7, 1, 1, 0}, {2, 3});
  for (int64_t last : {0, 1}) {
    auto amax = make_node("ArgMax", 1);
    add_int(amax, "axis", 1);
    add_int(amax, "select_last_index", last);
    const Tensor y = r.run(amax, 13, {x});
    ASSERT_EQ(y.dtype(), DType::kI64);
    EXPECT_EQ(y.shape(), (Shape{2, 1}));
    EXPECT_EQ(y.data<int64_t>()[0], last ? 2 : 1);
    EXPECT_EQ(y.data<int64_t>()[1], last ? 1 : 0);
    auto amin = make_node("ArgMin", 1);
    add_int(amin, "keepdims", 0);
    add_int(amin, "select_last_index", last);
    const Tensor z = r.run(amin, 12, {x});
    EXPECT_EQ(z.shape(), (Shape{3}));
    EXPECT_EQ(std::vector<int64_t>(z.data<int64_t>(), z.data<int64_t>() + 3),
              (std::vector<int64_t>{1, 1, 1}));
  }
  auto old = make_node("ArgMax", 1);
  add_int(old, "select_last_index", 1);  // not defined before opset 12
  EXPECT_EQ(error_kind_of([&] { r.run(old, 11, {x}); }), ErrorKind::kUnsupported);
}

TEST(Reduce, DuplicateAxesAreInvalid) {
  Runner r;
  auto n = make_node("ReduceMax", 1);
  add_ints(n, "axes", {1, -1});
  EXPECT_EQ(error_kind_of([&] { r.run(n, 13, {sample()}); }), ErrorKind::kInvalidModel);
}

}  // namespace
}  // namespace torq::engine
