// bf16 and fp16 conversions: the rounding modes the bf16 numerics rely on.
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/base/dtype.h"
#include "worker/engine/tensor.h"

using namespace torq::engine;

TEST(Bf16, TruncationDropsLowBits) {
  // 1 + 2^-8 + 2^-9 is between bf16 neighbours 1 and 1 + 2^-7.
  const float v = 1.0f + 0.00390625f + 0.001953125f;
  EXPECT_EQ(round_to_bf16(v, Rounding::kTruncate), 1.0f);
  EXPECT_EQ(round_to_bf16(v, Rounding::kNearestEven), 1.0078125f);
}

TEST(Bf16, NearestEvenBreaksTiesToEven) {
  // Exactly half-way between 1 and 1 + 2^-7: ties to the even mantissa (1).
  EXPECT_EQ(round_to_bf16(1.0f + 0.00390625f, Rounding::kNearestEven), 1.0f);
  // Half-way between 1 + 2^-7 (odd) and 1 + 2^-6: rounds up to even.
  EXPECT_EQ(round_to_bf16(1.0078125f + 0.00390625f, Rounding::kNearestEven), 1.015625f);
}

TEST(Bf16, NaNStaysNaNAndInfStaysInf) {
  EXPECT_TRUE(std::isnan(round_to_bf16(NAN, Rounding::kNearestEven)));
  EXPECT_TRUE(std::isnan(round_to_bf16(NAN, Rounding::kTruncate)));
  EXPECT_EQ(round_to_bf16(INFINITY, Rounding::kNearestEven), INFINITY);
  EXPECT_EQ(round_to_bf16(-INFINITY, Rounding::kTruncate), -INFINITY);
}

TEST(Fp16, RoundTripsRepresentableValues) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f})
    EXPECT_EQ(f16_to_f32(f32_to_f16(v)), v) << v;
  EXPECT_EQ(f16_to_f32(f32_to_f16(1e6f)), INFINITY);
}

TEST(Cast, FloatToIntTruncatesTowardZeroAndSaturates) {
  Tensor t = Tensor::from_vector<float>({-1.7f, 2.9f, 1e20f, NAN}, {4});
  Tensor i = cast_tensor(t, DType::kI32, Rounding::kNearestEven);
  EXPECT_EQ(i.data<int32_t>()[0], -1);
  EXPECT_EQ(i.data<int32_t>()[1], 2);
  EXPECT_EQ(i.data<int32_t>()[2], INT32_MAX);
  EXPECT_EQ(i.data<int32_t>()[3], 0);
}

TEST(Cast, Bf16TensorUsesTheRequestedRounding) {
  Tensor t = Tensor::from_vector<float>({1.0f + 0.00390625f + 0.001953125f}, {1});
  EXPECT_EQ(to_f32(cast_tensor(t, DType::kBF16, Rounding::kTruncate)).data<float>()[0], 1.0f);
  EXPECT_EQ(to_f32(cast_tensor(t, DType::kBF16, Rounding::kNearestEven)).data<float>()[0], 1.0078125f);
}
