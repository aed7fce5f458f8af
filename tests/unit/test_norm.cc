// Unit tests of the normalisation and softmax kernels (norm.cc,
// norm_impl.cc, softmax.cc): BatchNormalization on plain, blocked and bf16
// inputs, LRN's ONNX window for odd and even sizes, InstanceNormalization,
// LayerNormalization with its Mean / InvStdDev outputs, Softmax's opset-13
// axis change, LogSoftmax, Hardmax and unsupported variants.
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

struct Runner : KernelRunner {
  Runner() : KernelRunner(nullptr, /*constant=*/true) {}
};

Tensor pattern(Shape s, float scale = 0.1f) {
  Tensor t(DType::kF32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = scale * static_cast<float>((i * 29) % 53) - 2.f;
  return t;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

Tensor f64(const Tensor& t) { return cast_tensor(t, DType::kF64, Rounding::kNearestEven); }

TEST(Norm, BatchNormValues) {
  Runner r;
  auto n = make_node("BatchNormalization", 5);
  add_float(n, "epsilon", 0.f);
  Tensor x = Tensor::from_vector<float>({1, 3, 4, 6}, {1, 2, 1, 2});
  auto s = Tensor::from_vector<float>({1, 2}, {2}), b = Tensor::from_vector<float>({0, 1}, {2});
  auto m = Tensor::from_vector<float>({1, 2}, {2}), v = Tensor::from_vector<float>({4, 1}, {2});
  auto y = r.run_all(n, 15, {x, s, b, m, v});
  expect_near(doubles(y[0]), {0, 1, 5, 9}, 1e-6);
}

TEST(Norm, BatchNormBlockedAndBf16) {
  Runner r;
  auto n = make_node("BatchNormalization", 5);
  const int64_t c = 32;
  Tensor x = pattern({2, c, 3, 3});
  Tensor s = pattern({c}, 0.05f), b = pattern({c}, 0.02f), m = pattern({c}, 0.03f);
  Tensor v(DType::kF32, {c});
  for (int64_t i = 0; i < c; ++i) v.data<float>()[i] = 0.5f + 0.1f * static_cast<float>(i);
  const auto ref = doubles(r.run_all(n, 9, {f64(x), f64(s), f64(b), f64(m), f64(v)})[0]);
  expect_near(doubles(r.run_all(n, 9, {x, s, b, m, v})[0]), ref, 1e-5);
  const dnnl::memory::desc md(to_dims(x.shape()), dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::nChw16c);
  const Tensor yb = r.run_all(n, 9, {reorder_to(x, md, DType::kF32, r.env), s, b, m, v})[0];
  EXPECT_FALSE(yb.is_plain());
  expect_near(doubles(to_plain(yb, r.env)), ref, 1e-5);
  // bf16 in, nearest-even: bf16 out within bf16 precision of the reference.
  TORQ_REQUIRE_NATIVE_BF16();
  Tensor xh = cast_tensor(x, DType::kBF16, Rounding::kNearestEven);
  auto bf = [](const Tensor& t) { return cast_tensor(t, DType::kBF16, Rounding::kNearestEven); };
  const auto ref_h = doubles(r.run_all(n, 9, {f64(xh), f64(bf(s)), f64(bf(b)), f64(bf(m)), f64(bf(v))})[0]);
  const Tensor yh = r.run_all(n, 9, {xh, bf(s), bf(b), bf(m), bf(v)})[0];
  ASSERT_EQ(yh.dtype(), DType::kBF16);
  const auto got = doubles(yh);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], ref_h[i], 1e-2 * std::fabs(ref_h[i]) + 1e-6) << i;
  r.rounding = Rounding::kTruncate;
  const Tensor yt = r.run_all(n, 9, {xh, bf(s), bf(b), bf(m), bf(v)})[0];
  ASSERT_EQ(yt.dtype(), DType::kF32);
  expect_near(doubles(yt), ref_h, 1e-5);
}

TEST(Norm, BatchNormUnsupportedVariants) {
  Runner r;
  auto n7 = make_node("BatchNormalization", 5);
  add_int(n7, "spatial", 0);
  EXPECT_EQ(error_kind_of([&] { r.run_all(n7, 7, {}); }), ErrorKind::kUnsupported);
  auto n15 = make_node("BatchNormalization", 5);
  add_int(n15, "training_mode", 1);
  EXPECT_EQ(error_kind_of([&] { r.run_all(n15, 15, {}); }), ErrorKind::kUnsupported);
}

// ONNX LRN: window [c - floor((size-1)/2), c + ceil((size-1)/2)].
std::vector<double> lrn_ref(const Tensor& x, int64_t size, double alpha, double beta,
                            double bias) {
  const int64_t c = x.dim(1), hw = x.dim(2) * x.dim(3);
  std::vector<double> out(static_cast<size_t>(x.numel()));
  for (int64_t n = 0; n < x.dim(0); ++n)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < hw; ++i) {
        double sum = 0;
        for (int64_t k = ch - (size - 1) / 2; k <= ch + size / 2; ++k) {
          if (k < 0 || k >= c) continue;
          const double v = x.get_as_double((n * c + k) * hw + i);
          sum += v * v;
        }
        const int64_t o = (n * c + ch) * hw + i;
        out[static_cast<size_t>(o)] =
            x.get_as_double(o) / std::pow(bias + alpha / static_cast<double>(size) * sum, beta);
      }
  return out;
}

TEST(Norm, LrnOddAndEvenSizes) {
  Runner r;
  Tensor x = pattern({1, 16, 2, 3}, 0.5f);
  for (int64_t size : {3, 4, 5}) {
    SCOPED_TRACE(size);
    auto n = make_node("LRN", 1);
    add_int(n, "size", size);
    add_float(n, "alpha", 0.01f);
    add_float(n, "beta", 0.6f);
    add_float(n, "bias", 1.5f);
    const auto want = lrn_ref(x, size, 0.01f, 0.6f, 1.5f);
    const auto got = doubles(r.run_all(n, 13, {x})[0]);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 * std::fabs(want[i]) + 1e-6) << i;
    const dnnl::memory::desc md(to_dims(x.shape()), dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::nChw16c);
    const Tensor yb = r.run_all(n, 13, {reorder_to(x, md, DType::kF32, r.env)})[0];
    const auto gotb = doubles(to_plain(yb, r.env));
    for (size_t i = 0; i < gotb.size(); ++i)
      ASSERT_NEAR(gotb[i], want[i], 1e-4 * std::fabs(want[i]) + 1e-6) << i;
  }
}

TEST(Norm, InstanceNormValues) {
  Runner r;
  auto n = make_node("InstanceNormalization", 3);
  add_float(n, "epsilon", 0.f);
  Tensor x = Tensor::from_vector<float>({1, 3, 4, 8}, {1, 2, 2});
  auto y = r.run_all(n, 6, {x, Tensor::from_vector<float>({1, 2}, {2}),
                        Tensor::from_vector<float>({0, 5}, {2})});
  expect_near(doubles(y[0]), {-1, 1, 3, 7}, 1e-6);
}

TEST(Norm, LayerNormStatsAndBroadcastScale) {
  Runner r;
  auto n = make_node("LayerNormalization", 3, 3);
  add_int(n, "axis", 1);
  add_float(n, "epsilon", 0.f);
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 2, 2, 2, 6}, {2, 2, 2});
  Tensor scale = Tensor::from_vector<float>({1, 2}, {1, 2});  // broadcast over dim 1
  Tensor bias = Tensor::from_vector<float>({0.5f}, {1});
  for (bool use_f64 : {false, true}) {
    SCOPED_TRACE(use_f64);
    auto y = r.run_all(n, 17, {use_f64 ? f64(x) : x, scale, bias});
    EXPECT_EQ(y[1].shape(), (Shape{2, 1, 1}));
    EXPECT_EQ(y[1].dtype(), DType::kF32);
    expect_near(doubles(y[1]), {2.5, 3}, 1e-6);
    const double inv0 = 1 / std::sqrt(1.25), inv1 = 1 / std::sqrt(3.0);
    expect_near(doubles(y[2]), {inv0, inv1}, 1e-5);
    expect_near(doubles(y[0]),
                {-1.5 * inv0 + 0.5, -0.5 * inv0 * 2 + 0.5, 0.5 * inv0 + 0.5, 1.5 * inv0 * 2 + 0.5,
                 -1 * inv1 + 0.5, -1 * inv1 * 2 + 0.5, -1 * inv1 + 0.5, 3 * inv1 * 2 + 0.5},
                1e-5);
  }
  auto bad = make_node("LayerNormalization", 2);
  add_int(bad, "stash_type", 11);
  EXPECT_EQ(error_kind_of([&] { r.run_all(bad, 17, {}); }), ErrorKind::kUnsupported);
}

TEST(Softmax, Opset13IsPerAxisOpset11Flattens) {
  Runner r;
  Tensor x = pattern({2, 3, 4});
  auto n = make_node("Softmax", 1);
  add_int(n, "axis", 1);
  const auto y13 = doubles(r.run_all(n, 13, {x})[0]);
  const auto y11 = doubles(r.run_all(n, 11, {x})[0]);
  for (int64_t b = 0; b < 2; ++b) {
    double flat = 0;
    for (int64_t k = 0; k < 12; ++k) flat += y11[static_cast<size_t>(b * 12 + k)];
    EXPECT_NEAR(flat, 1, 1e-6);
    for (int64_t w = 0; w < 4; ++w) {
      double col = 0;
      for (int64_t h = 0; h < 3; ++h) col += y13[static_cast<size_t>(b * 12 + h * 4 + w)];
      EXPECT_NEAR(col, 1, 1e-6);
    }
  }
  // f64 takes the plain path; it must agree with oneDNN's f32.
  expect_near(doubles(r.run_all(n, 13, {f64(x)})[0]), y13, 1e-6);
}

TEST(Softmax, LogSoftmaxLargeValues) {
  Runner r;
  Tensor x = Tensor::from_vector<float>({1000, 1001, 1002, -1000}, {1, 4});
  const auto y = doubles(r.run_all(make_node("LogSoftmax", 1), 13, {x})[0]);
  const double lse = 1002 + std::log(std::exp(-2.0) + std::exp(-1.0) + 1);
  expect_near(y, {1000 - lse, 1001 - lse, 1002 - lse, -1000 - lse}, 1e-3);
}

TEST(Softmax, HardmaxFirstMaximum) {
  Runner r;
  Tensor x = Tensor::from_vector<float>({3, 7, 7, 1, 0, 0, -1, -2}, {2, 4});
  expect_near(doubles(r.run_all(make_node("Hardmax", 1), 13, {x})[0]), {0, 1, 0, 0, 1, 0, 0, 0}, 0);
  EXPECT_EQ(error_kind_of([&] {
              r.run_all(make_node("Softmax", 1), 13, {Tensor::from_vector<int32_t>({1, 2}, {2})});
            }),
            ErrorKind::kUnsupported);
}

}  // namespace
}  // namespace torq::engine
