// Einsum against products and sums written out by hand: torch's equation
// style (capital labels, spaces), the implicit output, "..." broadcast, a
// diagonal, and bad equations as clear errors.
#include <gtest/gtest.h>

#include "tests/unit/kernel_harness.h"

namespace torq::engine {
namespace {

using namespace test;

Tensor einsum(KernelRunner& r, const std::string& eq, std::vector<Tensor> in) {
  auto n = make_node("Einsum", in.size());
  add_string(n, "equation", eq);
  return r.run(n, 17, in);
}

// t[i] = start + i * step, shaped `s`.
Tensor ramp(Shape s, float start = 1, float step = 0.5f) {
  Tensor t(DType::kF32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

TEST(Einsum, TorchStyleBatchedAttentionScoresAreTheProductsSummedOverD) {
  KernelRunner r;
  // maxvit's equation: B G H I D, B G H J D -> B G H I J.
  Tensor q = ramp({1, 2, 2, 3, 4}), k = ramp({1, 2, 2, 5, 4}, -2, 0.25f);
  Tensor out = einsum(r, "B G H I D, B G H J D -> B G H I J", {q, k});
  ASSERT_EQ(out.shape(), (Shape{1, 2, 2, 3, 5}));
  const float* a = q.data<float>();
  const float* b = k.data<float>();
  for (int64_t gh = 0; gh < 4; ++gh)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        double s = 0;
        for (int64_t d = 0; d < 4; ++d) s += double(a[(gh * 3 + i) * 4 + d]) * b[(gh * 5 + j) * 4 + d];
        EXPECT_FLOAT_EQ(out.data<float>()[(gh * 3 + i) * 5 + j], static_cast<float>(s)) << gh << " " << i << " " << j;
      }
}

TEST(Einsum, ImplicitOutputEllipsisBroadcastAndDiagonal) {
  KernelRunner r;
  // Implicit "ij,jk": the labels seen once (i, k) in order: a matrix product.
  Tensor x = ramp({2, 3}), y = ramp({3, 2}, 0, 1);
  EXPECT_EQ(values<float>(einsum(r, "ij,jk", {x, y})),
            (std::vector<float>{1 * 0 + 1.5f * 2 + 2 * 4, 1 * 1 + 1.5f * 3 + 2 * 5, 2.5f * 0 + 3 * 2 + 3.5f * 4,
                                2.5f * 1 + 3 * 3 + 3.5f * 5}));
  // "...": [2,1,3] x [3] broadcast; the output keeps the "..." dims.
  Tensor b = ramp({2, 1, 3}), v = ramp({3}, 1, 0);
  Tensor bv = einsum(r, "...j,j->...", {b, v});
  EXPECT_EQ(bv.shape(), (Shape{2, 1}));
  EXPECT_EQ(values<float>(bv), (std::vector<float>{1 + 1.5f + 2, 2.5f + 3 + 3.5f}));
  // A repeated label is the diagonal; implicit "ii" is the trace.
  Tensor m = ramp({3, 3}, 0, 1);
  EXPECT_EQ(values<float>(einsum(r, "ii->i", {m})), (std::vector<float>{0, 4, 8}));
  EXPECT_EQ(values<float>(einsum(r, "ii", {m})), (std::vector<float>{12}));
}

TEST(Einsum, BadEquationsAreInvalidModelErrors) {
  KernelRunner r;
  Tensor x = ramp({2, 3});
  EXPECT_EQ(error_kind_of([&] { einsum(r, "ijk->i", {x}); }), ErrorKind::kInvalidModel);  // rank 2, 3 labels
  EXPECT_EQ(error_kind_of([&] { einsum(r, "ij,jk->ik", {x, ramp({4, 2})}); }), ErrorKind::kInvalidModel);
  EXPECT_EQ(error_kind_of([&] { einsum(r, "i1->i", {ramp({2})}); }), ErrorKind::kInvalidModel);
  EXPECT_EQ(error_kind_of([&] { einsum(r, "ij->z", {x}); }), ErrorKind::kInvalidModel);
}

}  // namespace
}  // namespace torq::engine
