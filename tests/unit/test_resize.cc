// Unit tests of Resize and Upsample (resize.cc): nearest, linear and cubic
// against values from the ONNX reference, opset variants (Upsample-7
// attribute, Resize-11 sizes, tf_crop_and_resize) and unsupported cases.
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
  Runner() : KernelRunner(register_resize_kernels) {}
};

Tensor floats(const std::vector<float>& v) {
  return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "at " << i;
}

const Tensor kSquare = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});

TEST(Resize, LinearHalfPixelMatchesOnnxReference) {
  Runner r;
  auto n = make_node("Resize", {"x", "", "scales"});
  add_string(n, "mode", "linear");
  Tensor y = r.run(n, 13, {kSquare, Tensor(), floats({1, 1, 2, 2})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  expect_near(values<float>(y), {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f,
                                 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
}

TEST(Resize, LinearAlignCornersWithSizes) {
  Runner r;
  auto n = make_node("Resize", {"x", "", "", "sizes"});
  add_string(n, "mode", "linear");
  add_string(n, "coordinate_transformation_mode", "align_corners");
  Tensor y = r.run(n, 13, {kSquare, Tensor(), Tensor(), Tensor::from_vector<int64_t>({1, 1, 1, 3}, {4})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 3}));
  expect_near(values<float>(y), {1, 1.5f, 2});
}

TEST(Resize, NearestModesOnIntegers) {
  Runner r;
  Tensor x = Tensor::from_vector<int32_t>({10, 20, 30}, {3});
  auto floor_node = make_node("Resize", {"x", "", "", "sizes"});
  add_string(floor_node, "coordinate_transformation_mode", "asymmetric");
  add_string(floor_node, "nearest_mode", "floor");
  Tensor sizes = Tensor::from_vector<int64_t>({6}, {1});
  EXPECT_EQ(values<int32_t>(r.run(floor_node, 13, {x, Tensor(), Tensor(), sizes})),
            (std::vector<int32_t>{10, 10, 20, 20, 30, 30}));
  auto ceil_node = make_node("Resize", {"x", "", "", "sizes"});
  add_string(ceil_node, "coordinate_transformation_mode", "asymmetric");
  add_string(ceil_node, "nearest_mode", "ceil");
  EXPECT_EQ(values<int32_t>(r.run(ceil_node, 13, {x, Tensor(), Tensor(), sizes})),
            (std::vector<int32_t>{10, 20, 20, 30, 30, 30}));
}

TEST(Resize, CubicKeepsConstantsAndSamplesAtIntegerPositions) {
  Runner r;
  auto n = make_node("Resize", {"x", "", "scales"});
  add_string(n, "mode", "cubic");
  add_string(n, "coordinate_transformation_mode", "asymmetric");
  Tensor x = Tensor::from_vector<float>({1, 5, 2, 8}, {4});
  const auto y = values<float>(r.run(n, 13, {x, Tensor(), floats({2})}));
  ASSERT_EQ(y.size(), 8u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(y[2 * i], values<float>(x)[i], 1e-6);
  const auto c = values<float>(r.run(n, 13, {Tensor::from_vector<float>({3, 3, 3}, {3}), Tensor(), floats({1.5f})}));
  for (float v : c) EXPECT_NEAR(v, 3.0f, 1e-6);
}

TEST(Resize, TfCropAndResizeExtrapolates) {
  Runner r;
  auto n = make_node("Resize", {"x", "roi", "", "sizes"});
  add_string(n, "mode", "linear");
  add_string(n, "coordinate_transformation_mode", "tf_crop_and_resize");
  auto* a = n.add_attribute();
  a->set_name("extrapolation_value");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(-1.0f);
  Tensor x = Tensor::from_vector<float>({0, 10}, {2});
  // roi [0.5, 1.5] over 3 outputs: coordinates 0.5, 1.0, 1.5 (outside).
  Tensor y = r.run(n, 13, {x, floats({0.5f, 1.5f}), Tensor(), Tensor::from_vector<int64_t>({3}, {1})});
  expect_near(values<float>(y), {5, 10, -1});
}

TEST(Upsample, Opset7ScalesAttributeNearest) {
  Runner r;
  auto n = make_node("Upsample", {"x"});
  auto* a = n.add_attribute();
  a->set_name("scales");
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float s : {1.0f, 1.0f, 2.0f, 3.0f}) a->add_floats(s);
  Tensor y = r.run(n, 7, {kSquare});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                  3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

TEST(Resize, UnsupportedVariantsThrowUnsupported) {
  Runner r;
  auto up = make_node("Upsample", {"x", "scales"});
  EXPECT_EQ(error_kind_of([&] { r.run(up, 9, {kSquare, floats({1, 1, 1.5f, 1.5f})}); }),
            ErrorKind::kUnsupported);
  auto anti = make_node("Resize", {"x", "", "scales"});
  add_int(anti, "antialias", 1);
  EXPECT_EQ(error_kind_of([&] { r.run(anti, 13, {kSquare, Tensor(), floats({1, 1, 2, 2})}); }),
            ErrorKind::kUnsupported);
  auto excl = make_node("Resize", {"x", "", "scales"});
  add_int(excl, "exclude_outside", 1);
  EXPECT_EQ(error_kind_of([&] { r.run(excl, 13, {kSquare, Tensor(), floats({1, 1, 2, 2})}); }),
            ErrorKind::kUnsupported);
  auto lin_int = make_node("Resize", {"x", "", "scales"});
  add_string(lin_int, "mode", "linear");
  EXPECT_EQ(error_kind_of([&] {
              r.run(lin_int, 13, {Tensor::from_vector<int32_t>({1, 2}, {2}), Tensor(), floats({2})});
            }),
            ErrorKind::kUnsupported);
}

}  // namespace
}  // namespace torq::engine
