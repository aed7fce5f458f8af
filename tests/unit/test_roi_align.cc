// RoiAlign (kernels/roi_align.cc) on a plane whose values are linear in y
// and x (4y + x), where a bilinear sample is exact: each bin is 4 * (mean
// sample y) + (mean sample x), worked out by hand below.
#include <gtest/gtest.h>

#include "tests/unit/kernel_harness.h"

namespace torq::engine::test {
namespace {

// [n, 1, 4, 4] planes, image b holding 4y + x + 100 b.
Tensor planes(int64_t n) {
  std::vector<float> v;
  for (int64_t b = 0; b < n; ++b)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) v.push_back(static_cast<float>(4 * y + x + 100 * b));
  return vec<float>(v, {n, 1, 4, 4});
}

onnx::NodeProto roi_align(const std::string& mode, const std::string& ctm) {
  onnx::NodeProto n = make_node("RoiAlign", 3);
  add_int(n, "output_height", 2);
  add_int(n, "output_width", 2);
  add_int(n, "sampling_ratio", 2);
  add_float(n, "spatial_scale", 1.0f);
  add_string(n, "mode", mode);
  if (!ctm.empty()) add_string(n, "coordinate_transformation_mode", ctm);
  return n;
}

TEST(RoiAlign, OutputHalfPixelAveragesTheBinSamples) {
  // Region [0, 3] on both axes, bins 1.5 wide, samples at 0.375, 1.125 |
  // 1.875, 2.625: bin means 0.75 and 2.25. Opset 10 has no mode attribute
  // and behaves as output_half_pixel.
  KernelRunner k;
  const Tensor y = k.run(roi_align("avg", ""), 10, {planes(1), vec<float>({0, 0, 3, 3}, {1, 4}), ints({0})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{3.75f, 5.25f, 9.75f, 11.25f}));
  const Tensor y16 = k.run(roi_align("avg", "output_half_pixel"), 16,
                           {planes(1), vec<float>({0, 0, 3, 3}, {1, 4}), ints({0})});
  EXPECT_EQ(values<float>(y16), values<float>(y));
}

TEST(RoiAlign, HalfPixelShiftsTheRegionAndClampsSamplesAtTheBorder) {
  // Region [-0.5, 2.5]: samples -0.125 (clamped to 0), 0.625 | 1.375, 2.125:
  // bin means 0.3125 and 1.75. Opset 16's default mode is half_pixel.
  KernelRunner k;
  const Tensor y = k.run(roi_align("avg", ""), 16, {planes(1), vec<float>({0, 0, 3, 3}, {1, 4}), ints({0})});
  EXPECT_EQ(values<float>(y), (std::vector<float>{1.5625f, 3.0f, 7.3125f, 8.75f}));
}

TEST(RoiAlign, EachRegionReadsItsOwnImage) {
  KernelRunner k;
  const Tensor y = k.run(roi_align("avg", "output_half_pixel"), 16,
                         {planes(2), vec<float>({0, 0, 3, 3, 0, 0, 3, 3}, {2, 4}), ints({1, 0})});
  EXPECT_EQ(y.shape(), (Shape{2, 1, 2, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{103.75f, 105.25f, 109.75f, 111.25f, 3.75f, 5.25f, 9.75f, 11.25f}));
}

TEST(RoiAlign, MaxTakesTheLargestWeightedCornerOfTheSamples) {
  // Region [0, 2] (bins 1 wide, samples at 0.25 and 0.75 of each): the
  // largest weighted corner of the last sample of bin (1, 1), at (1.75,
  // 1.75), is 0.75 * 0.75 * plane(2, 2) = 0.5625 * 10.
  KernelRunner k;
  const Tensor y = k.run(roi_align("max", "output_half_pixel"), 16,
                         {planes(1), vec<float>({0, 0, 2, 2}, {1, 4}), ints({0})});
  EXPECT_FLOAT_EQ(values<float>(y)[3], 0.5625f * 10);
}

TEST(RoiAlign, BadInputsAreClearErrors) {
  KernelRunner k;
  EXPECT_EQ(error_kind_of([&] {
              k.run(roi_align("avg", ""), 16, {planes(1), vec<float>({0, 0, 3, 3}, {1, 4}), ints({1})});
            }),
            ErrorKind::kInvalidModel);
  EXPECT_EQ(error_kind_of([&] { k.run(roi_align("median", ""), 16, {}); }), ErrorKind::kUnsupported);
  EXPECT_EQ(error_kind_of([&] { k.run(roi_align("avg", "align_corners"), 16, {}); }), ErrorKind::kUnsupported);
}

}  // namespace
}  // namespace torq::engine::test
