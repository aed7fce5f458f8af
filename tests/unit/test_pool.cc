// Unit tests of the pooling kernels (pool.cc, pool_impl.cc): values of
// MaxPool / AveragePool / global pooling, the oneDNN path on blocked and
// bf16 inputs against the plain reference, MaxPool Indices, ceil_mode with
// count_include_pad, int8 data and unsupported variants.
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

// A pooling node with input x and `outputs` outputs.
onnx::NodeProto node(const std::string& op, size_t outputs = 1) {
  return make_node(op, 1, outputs);
}

Tensor iota(Shape s, float scale = 1.f) {
  Tensor t(DType::kF32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = scale * static_cast<float>((i * 37) % 101) - 20.f;
  return t;
}

std::vector<float> floats(const Tensor& t) {
  Tensor f = to_f32(t);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

// The tensor in oneDNN's 16-channel blocked layout.
Tensor blocked16(const Tensor& t, DnnlEnv& env) {
  const dnnl::memory::desc md(to_dims(t.shape()), dnnl_dtype(t.dtype()),
                              dnnl::memory::format_tag::nChw16c);
  return reorder_to(t, md, t.dtype(), env);
}

TEST(Pool, MaxPool2dWithPadsAndStrides) {
  Runner r;
  auto n = node("MaxPool");
  add_ints(n, "kernel_shape", {2, 2});
  add_ints(n, "strides", {2, 2});
  add_ints(n, "pads", {1, 1, 0, 0});
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  auto y = r.run_all(n, 12, {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(floats(y[0]), (std::vector<float>{1, 3, 7, 9}));
}

TEST(Pool, AveragePoolCeilModeCountIncludePadUsesPaddedExtent) {
  // 1-D, in 4, k 3, s 2, pads 1/1, ceil: 3 windows [-1,1], [1,3], [3,5];
  // the last reaches one past the end padding, so it divides by 2 (its
  // extent inside [-1, 5)), not by 3.
  Runner r;
  auto n = node("AveragePool");
  add_ints(n, "kernel_shape", {3});
  add_ints(n, "strides", {2});
  add_ints(n, "pads", {1, 1});
  add_int(n, "ceil_mode", 1);
  add_int(n, "count_include_pad", 1);
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 4});
  auto y = r.run_all(n, 11, {x});
  ASSERT_EQ(y[0].shape(), (Shape{1, 1, 3}));
  const auto v = floats(y[0]);
  EXPECT_FLOAT_EQ(v[0], 3.f / 3);
  EXPECT_FLOAT_EQ(v[1], 9.f / 3);
  EXPECT_FLOAT_EQ(v[2], 4.f / 2);
}

TEST(Pool, AveragePoolExcludesPadding) {
  Runner r;
  auto n = node("AveragePool");
  add_ints(n, "kernel_shape", {3, 3});
  add_ints(n, "pads", {1, 1, 1, 1});
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  auto y = r.run_all(n, 11, {x});
  EXPECT_EQ(floats(y[0]), (std::vector<float>{2.5f, 2.5f, 2.5f, 2.5f}));
}

TEST(Pool, MaxPoolIndicesRowAndColumnMajor) {
  Runner r;
  for (int64_t order : {0, 1}) {
    auto n = node("MaxPool", 2);
    add_ints(n, "kernel_shape", {2, 2});
    add_ints(n, "strides", {2, 2});
    add_int(n, "storage_order", order);
    Tensor x = Tensor::from_vector<float>({0, 1, 5, 0,  //
                                           2, 0, 0, 0,  //
                                           0, 0, 0, 0,  //
                                           0, 7, 0, 3},
                                          {1, 1, 4, 4});
    auto y = r.run_all(n, 12, {x});
    EXPECT_EQ(floats(y[0]), (std::vector<float>{2, 5, 7, 3}));
    ASSERT_EQ(y[1].dtype(), DType::kI64);
    const int64_t* idx = y[1].data<int64_t>();
    // (row, col) of the maxima: (1,0) (0,2) (3,1) (3,3)
    const std::vector<int64_t> want = order == 0 ? std::vector<int64_t>{4, 2, 13, 15}
                                                 : std::vector<int64_t>{1, 8, 7, 15};
    EXPECT_EQ(std::vector<int64_t>(idx, idx + 4), want);
  }
}

TEST(Pool, BlockedInputMatchesPlainAndReference) {
  // f32 runs on oneDNN (plain and blocked); f64 runs the plain reference.
  Runner r;
  Tensor x = iota({2, 32, 10, 10}, 0.25f);
  Tensor x64 = cast_tensor(x, DType::kF64, Rounding::kNearestEven);
  Tensor xb = blocked16(x, r.env);
  ASSERT_FALSE(xb.is_plain());
  std::vector<onnx::NodeProto> nodes;
  {
    auto n = node("MaxPool");
    add_ints(n, "kernel_shape", {3, 3});
    add_ints(n, "strides", {2, 2});
    add_ints(n, "pads", {1, 1, 1, 1});
    nodes.push_back(n);
  }
  {
    auto n = node("AveragePool");
    add_ints(n, "kernel_shape", {3, 3});
    add_ints(n, "strides", {2, 2});
    add_int(n, "ceil_mode", 1);
    nodes.push_back(n);
  }
  nodes.push_back(node("GlobalAveragePool"));
  nodes.push_back(node("GlobalMaxPool"));
  for (const auto& n : nodes) {
    SCOPED_TRACE(n.op_type());
    const Tensor plain = r.run_all(n, 12, {x})[0];
    const Tensor blk = r.run_all(n, 12, {xb})[0];
    const Tensor ref = r.run_all(n, 12, {x64})[0];
    ASSERT_EQ(blk.shape(), plain.shape());
    EXPECT_FALSE(blk.is_plain());  // pooled in the producer's layout
    ASSERT_EQ(ref.shape(), plain.shape());
    ASSERT_EQ(ref.dtype(), DType::kF64);
    const auto a = floats(plain), b = floats(to_plain(blk, r.env));
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_NEAR(a[i], b[i], 1e-5f) << i;
      ASSERT_NEAR(a[i], ref.data<double>()[i], 1e-5) << i;
    }
  }
}

TEST(Pool, GlobalAveragePoolValues) {
  Runner r;
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 2, 2});
  auto y = r.run_all(node("GlobalAveragePool"), 13, {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(floats(y[0]), (std::vector<float>{2.5f, 25.f}));
}

TEST(Pool, Bf16RoundingPolicy) {
  TORQ_REQUIRE_NATIVE_BF16();
  Runner r;
  auto n = node("AveragePool");
  add_ints(n, "kernel_shape", {1, 3});
  // Mean of 1, 1, 1+2^-7 (all bf16): 1 + 2^-7/3, which bf16 rounds to 1.
  Tensor x(DType::kBF16, {1, 1, 1, 3});
  x.bf16()[0] = x.bf16()[1] = f32_to_bf16(1.f, Rounding::kNearestEven);
  x.bf16()[2] = f32_to_bf16(1.f + 1.f / 128, Rounding::kNearestEven);
  r.rounding = Rounding::kNearestEven;
  auto y = r.run_all(n, 11, {x});
  ASSERT_EQ(y[0].dtype(), DType::kBF16);
  EXPECT_EQ(floats(y[0])[0], 1.f);
  r.rounding = Rounding::kTruncate;  // f32 out; the session truncates
  y = r.run_all(n, 11, {x});
  ASSERT_EQ(y[0].dtype(), DType::kF32);
  EXPECT_NEAR(floats(y[0])[0], 1.f + 1.f / 384, 1e-6f);
}

TEST(Pool, Int8MaxPoolAndDilations) {
  Runner r;
  auto n = node("MaxPool");
  add_ints(n, "kernel_shape", {2});
  add_ints(n, "dilations", {2});
  Tensor x = Tensor::from_vector<int8_t>({-5, 3, -1, 7, -8}, {1, 1, 5});
  auto y = r.run_all(n, 12, {x});
  ASSERT_EQ(y[0].dtype(), DType::kI8);
  const int8_t* v = y[0].data<int8_t>();
  EXPECT_EQ(std::vector<int8_t>(v, v + 3), (std::vector<int8_t>{-1, 7, -1}));
}

TEST(Pool, SameUpperPadding) {
  Runner r;
  auto n = node("MaxPool");
  add_ints(n, "kernel_shape", {2});
  n.add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("auto_pad");
    a.set_type(onnx::AttributeProto::STRING);
    a.set_s("SAME_UPPER");
    return a;
  }());
  Tensor x = Tensor::from_vector<float>({1, 5, 2}, {1, 1, 3});
  auto y = r.run_all(n, 11, {x});
  EXPECT_EQ(floats(y[0]), (std::vector<float>{5, 5, 2}));
}

TEST(Pool, UnsupportedVariants) {
  Runner r;
  {  // a window entirely in the padding
    auto n = node("MaxPool");
    add_ints(n, "kernel_shape", {2});
    add_ints(n, "pads", {2, 0});
    Tensor x = iota({1, 1, 4});
    EXPECT_EQ(error_kind_of([&] { r.run_all(n, 11, {x}); }), ErrorKind::kUnsupported);
  }
  {  // dilations before opset 10
    auto n = node("MaxPool");
    add_ints(n, "kernel_shape", {2});
    add_ints(n, "dilations", {2});
    EXPECT_EQ(error_kind_of([&] { r.run_all(n, 9, {iota({1, 1, 4})}); }), ErrorKind::kUnsupported);
  }
  {  // an unknown attribute
    auto n = node("AveragePool");
    add_ints(n, "kernel_shape", {2});
    add_int(n, "frobnicate", 1);
    EXPECT_EQ(error_kind_of([&] { r.run_all(n, 11, {iota({1, 1, 4})}); }), ErrorKind::kUnsupported);
  }
}

}  // namespace
}  // namespace torq::engine
