// Unit tests of the shape kernels (shape.cc, shape_const.cc): Reshape,
// Flatten, Squeeze/Unsqueeze opset variants, Shape start/end, Size,
// Constant, ConstantOfShape, Range, Dropout, Cast/CastLike and unsupported
// variants.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

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

struct Runner : KernelRunner {
  Runner() : KernelRunner(register_shape_kernels) {}
};

TEST(Reshape, ZeroCopiesDimUnlessAllowZero) {
  Runner r;
  Tensor x = Tensor::zeros(DType::kF32, {2, 3, 4});
  EXPECT_EQ(r.run(make_node("Reshape", 2), 13, {x, ints({0, -1})}).shape(), (Shape{2, 12}));
  auto allow = make_node("Reshape", 2);
  add_int(allow, "allowzero", 1);
  Tensor empty = Tensor::zeros(DType::kF32, {0, 3});
  EXPECT_EQ(r.run(allow, 14, {empty, ints({3, 0})}).shape(), (Shape{3, 0}));
  // Before opset 14 the attribute does not exist.
  EXPECT_EQ(error_kind_of([&] { r.run(allow, 13, {x, ints({0, -1})}); }), ErrorKind::kUnsupported);
}

TEST(Flatten, NegativeAxis) {
  Runner r;
  auto n = make_node("Flatten", 1);
  add_int(n, "axis", -1);
  EXPECT_EQ(r.run(n, 13, {Tensor::zeros(DType::kI8, {2, 3, 4})}).shape(), (Shape{6, 4}));
  auto zero = make_node("Flatten", 1);
  add_int(zero, "axis", 0);
  EXPECT_EQ(r.run(zero, 13, {Tensor::zeros(DType::kI8, {2, 3})}).shape(), (Shape{1, 6}));
}

TEST(SqueezeUnsqueeze, AttributeBefore13InputFrom13) {
  Runner r;
  Tensor x = Tensor::zeros(DType::kF32, {1, 3, 1});
  auto sq11 = make_node("Squeeze", 1);
  add_ints(sq11, "axes", {-1});
  EXPECT_EQ(r.run(sq11, 11, {x}).shape(), (Shape{1, 3}));
  EXPECT_EQ(r.run(make_node("Squeeze", 1), 13, {x}).shape(), (Shape{3}));
  EXPECT_EQ(r.run(make_node("Squeeze", 2), 13, {x, ints({0})}).shape(), (Shape{3, 1}));
  auto un11 = make_node("Unsqueeze", 1);
  add_ints(un11, "axes", {0, 4});
  EXPECT_EQ(r.run(un11, 11, {x}).shape(), (Shape{1, 1, 3, 1, 1}));
  EXPECT_EQ(r.run(make_node("Unsqueeze", 2), 13, {x, ints({-1, 1})}).shape(), (Shape{1, 1, 3, 1, 1}));
  EXPECT_EQ(error_kind_of([&] { r.run(make_node("Squeeze", 2), 13, {x, ints({1})}); }),
            ErrorKind::kInvalidModel);
}

TEST(ShapeSize, StartEndAndCount) {
  Runner r;
  Tensor x = Tensor::zeros(DType::kBool, {2, 3, 4, 5});
  auto n = make_node("Shape", 1);
  add_int(n, "start", -3);
  add_int(n, "end", -1);
  EXPECT_EQ(values<int64_t>(r.run(n, 15, {x})), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values<int64_t>(r.run(make_node("Shape", 1), 13, {x})), (std::vector<int64_t>{2, 3, 4, 5}));
  Tensor s = r.run(make_node("Size", 1), 13, {x});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(values<int64_t>(s)[0], 120);
}

TEST(Constant, ValueIntsAndConstantOfShape) {
  Runner r;
  auto c = make_node("Constant", 0);
  add_ints(c, "value_ints", {4, 5});
  EXPECT_EQ(values<int64_t>(r.run(c, 13, {})), (std::vector<int64_t>{4, 5}));

  auto cos = make_node("ConstantOfShape", 1);
  auto* a = cos.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT32);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_int32_data(7);
  Tensor out = r.run(cos, 13, {ints({2, 2})});
  EXPECT_EQ(out.dtype(), DType::kI32);
  EXPECT_EQ(values<int32_t>(out), (std::vector<int32_t>{7, 7, 7, 7}));
  Tensor def = r.run(make_node("ConstantOfShape", 1), 13, {ints({})});
  EXPECT_EQ(def.dtype(), DType::kF32);
  EXPECT_EQ(def.rank(), 0);
  EXPECT_EQ(values<float>(def)[0], 0.0f);
}

TEST(Range, IntegerAndFloat) {
  Runner r;
  Tensor o = r.run(make_node("Range", 3), 13,
                   {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(6), Tensor::scalar<int32_t>(-3)});
  EXPECT_EQ(values<int32_t>(o), (std::vector<int32_t>{10, 7}));
  Tensor f = r.run(make_node("Range", 3), 13,
                   {Tensor::scalar<float>(1), Tensor::scalar<float>(5), Tensor::scalar<float>(1.5f)});
  EXPECT_EQ(values<float>(f), (std::vector<float>{1, 2.5f, 4}));
}

TEST(Dropout, InferenceIsIdentityWithTrueMask) {
  Runner r;
  Tensor x = Tensor::from_vector<float>({1, 2}, {2});
  auto outs = r.run_all(make_node("Dropout", 1, 2), 13, {x});
  EXPECT_EQ(values<float>(outs[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(values<bool>(outs[1]), (std::vector<bool>{true, true}));
  // Training with ratio 0 keeps everything.
  outs = r.run_all(make_node("Dropout", 3, 2), 13,
                   {x, Tensor::scalar<float>(0.0f), Tensor::scalar<bool>(true)});
  EXPECT_EQ(values<float>(outs[0]), (std::vector<float>{1, 2}));
  // Before opset 10 the mask has the input type.
  outs = r.run_all(make_node("Dropout", 1, 2), 9, {x});
  EXPECT_EQ(values<float>(outs[1]), (std::vector<float>{1, 1}));
}

TEST(Cast, Bf16RespectsRoundingAndCastLikeTakesTargetType) {
  Runner r;
  auto n = make_node("Cast", 1);
  add_int(n, "to", onnx::TensorProto::BFLOAT16);
  const float v = 1.0f + 0.00390625f + 0.001953125f;
  Tensor x = Tensor::from_vector<float>({v}, {1});
  EXPECT_EQ(bf16_to_f32(r.run(n, 13, {x}).bf16()[0]), 1.0078125f);
  r.rounding = Rounding::kTruncate;
  EXPECT_EQ(bf16_to_f32(r.run(n, 13, {x}).bf16()[0]), 1.0f);
  Tensor b = cast_tensor(x, DType::kBF16, Rounding::kTruncate);
  auto back = make_node("Cast", 1);
  add_int(back, "to", onnx::TensorProto::FLOAT);
  EXPECT_EQ(values<float>(r.run(back, 13, {b}))[0], 1.0f);
  Tensor like = r.run(make_node("CastLike", 2), 15, {Tensor::from_vector<float>({2.7f}, {1}),
                                                    Tensor::zeros(DType::kI64, {0})});
  EXPECT_EQ(values<int64_t>(like), (std::vector<int64_t>{2}));
}

TEST(Shape, UnsupportedVariantsThrowUnsupported) {
  Runner r;
  auto str = make_node("Cast", 1);
  add_int(str, "to", onnx::TensorProto::STRING);
  EXPECT_EQ(error_kind_of([&] { r.run(str, 13, {Tensor::zeros(DType::kF32, {1})}); }),
            ErrorKind::kUnsupported);
  auto cs = make_node("Constant", 0);
  auto* a = cs.add_attribute();
  a->set_name("value_string");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("hello");
  EXPECT_EQ(error_kind_of([&] { r.run(cs, 13, {}); }), ErrorKind::kUnsupported);
  EXPECT_EQ(error_kind_of([&] {
              r.run_all(make_node("Dropout", 3, 1), 13,
                        {Tensor::zeros(DType::kF32, {2}), Tensor::scalar<float>(0.5f),
                         Tensor::scalar<bool>(true)});
            }),
            ErrorKind::kUnsupported);
}

}  // namespace
}  // namespace torq::engine
