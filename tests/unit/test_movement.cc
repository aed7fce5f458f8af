// Unit tests of the data-movement kernels (movement*.cc): Concat (plain and
// oneDNN-blocked inputs), Split, Slice, Gather, GatherElements, Transpose,
// Expand, Tile, Pad, DepthToSpace, SpaceToDepth and unsupported variants.
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
  Runner() : KernelRunner(register_movement_kernels) {}
};

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return v;
}

TEST(Concat, PlainInt64AlongAxis1) {
  Runner r;
  auto n = make_node("Concat", 2);
  add_int(n, "axis", -1);
  Tensor a = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  Tensor b = Tensor::from_vector<int64_t>({5, 6}, {2, 1});
  Tensor out = r.run(n, 13, {a, b});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>(out), (std::vector<int64_t>{1, 2, 5, 3, 4, 6}));
}

TEST(Concat, BlockedFloatInputsUseOneDnnAndKeepValues) {
  Runner r;
  auto n = make_node("Concat", 2);
  add_int(n, "axis", 1);
  Tensor a = Tensor::from_vector<float>(iota(1 * 16 * 2 * 2), {1, 16, 2, 2});
  Tensor b = Tensor::from_vector<float>(iota(1 * 3 * 2 * 2), {1, 3, 2, 2});
  const dnnl::memory::desc blocked({1, 16, 2, 2}, dnnl::memory::data_type::f32,
                                   dnnl::memory::format_tag::nChw16c);
  Tensor ab = reorder_to(a, blocked, DType::kF32, r.env);
  ASSERT_FALSE(ab.is_plain());
  Tensor out = to_plain(r.run(n, 13, {ab, b}), r.env);
  EXPECT_EQ(out.shape(), (Shape{1, 19, 2, 2}));
  const auto v = values<float>(out);
  for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(v[static_cast<size_t>(i)], static_cast<float>(i));
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(v[static_cast<size_t>(64 + i)], static_cast<float>(i));
}

TEST(Concat, ChannelBlockedInputsStayBlocked) {
  Runner r;
  auto n = make_node("Concat", 2);
  add_int(n, "axis", 1);
  auto blocked = [&](const Tensor& t) {
    const dnnl::memory::desc md(to_dims(t.shape()), dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::nChw16c);
    return reorder_to(t, md, DType::kF32, r.env);
  };
  Tensor a = Tensor::from_vector<float>(iota(2 * 16 * 3), {2, 16, 3, 1});
  Tensor b = Tensor::from_vector<float>(iota(2 * 32 * 3), {2, 32, 3, 1});
  Tensor out = r.run(n, 13, {blocked(a), blocked(b)});
  EXPECT_FALSE(out.is_plain());
  const auto v = values<float>(to_plain(out, r.env));
  ASSERT_EQ(v.size(), 2u * 48 * 3);
  for (int64_t item = 0; item < 2; ++item) {
    for (int64_t i = 0; i < 48; ++i) {
      const float want = i < 16 ? static_cast<float>(item * 48 + i * 3 + 1)
                                : static_cast<float>(item * 96 + (i - 16) * 3 + 1);
      EXPECT_EQ(v[static_cast<size_t>(item * 144 + i * 3 + 1)], want) << item << "," << i;
    }
  }
}

TEST(Split, AttributeBeforeOpset13AndInputFrom13) {
  Runner r;
  Tensor x = Tensor::from_vector<float>(iota(6), {6});
  auto old_node = make_node("Split", 1, 2);
  add_ints(old_node, "split", {2, 4});
  auto outs = r.run_all(old_node, 11, {x});
  EXPECT_EQ(values<float>(outs[0]), (std::vector<float>{0, 1}));
  EXPECT_EQ(values<float>(outs[1]), (std::vector<float>{2, 3, 4, 5}));

  auto new_node = make_node("Split", 2, 3);
  outs = r.run_all(new_node, 13, {x, ints({1, 0, 5})});
  EXPECT_EQ(outs[1].shape(), (Shape{0}));
  EXPECT_EQ(values<float>(outs[2]), (std::vector<float>{1, 2, 3, 4, 5}));

  outs = r.run_all(make_node("Split", 1, 3), 13, {x});
  EXPECT_EQ(values<float>(outs[2]), (std::vector<float>{4, 5}));
}

TEST(Slice, NegativeStepsAndClamping) {
  Runner r;
  Tensor x = Tensor::from_vector<float>(iota(12), {3, 4});
  // Rows from the end backwards past the start, columns 1.. with out-of-range end.
  Tensor out = r.run(make_node("Slice", 5), 13,
                     {x, ints({-1, 1}), ints({-100, 1000}), ints({0, 1}), ints({-2, 2})});
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{9, 11, 1, 3}));

  auto old_node = make_node("Slice", 1);
  add_ints(old_node, "starts", {1});
  add_ints(old_node, "ends", {1000});
  add_ints(old_node, "axes", {1});
  out = r.run(old_node, 9, {x});
  EXPECT_EQ(out.shape(), (Shape{3, 3}));
  EXPECT_EQ(values<float>(out)[0], 1.0f);
}

// Trailing axes copied whole merge into the last sliced one (contiguous
// runs); against element-by-element indexing, with and without a merge.
TEST(Slice, WholeTrailingAxesAreCopiedAsRuns) {
  Runner r;
  const Shape xs{2, 6, 3, 4};
  Tensor x = Tensor::from_vector<float>(iota(144), xs);
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const std::vector<Case> cases{{{2}, {5}, {1}, {1}},          // channel split: planes of 12
                                {{1, 0}, {6, 2}, {1, 2}, {2, 1}},  // step 2 on C, rows 0..1
                                {{1}, {3}, {3}, {1}},          // innermost axis only
                                {{1, 1}, {2, 6}, {0, 1}, {1, 1}}};  // batch 1, C from 1: one run
  for (const auto& c : cases) {
    Tensor out = r.run(make_node("Slice", 5), 13, {x, ints(c.starts), ints(c.ends), ints(c.axes), ints(c.steps)});
    std::vector<int64_t> first(4, 0), step(4, 1);
    Shape os = xs;
    for (size_t i = 0; i < c.axes.size(); ++i) {
      const size_t a = static_cast<size_t>(c.axes[i]);
      first[a] = c.starts[i];
      step[a] = c.steps[i];
      os[a] = (c.ends[i] - c.starts[i] + c.steps[i] - 1) / c.steps[i];
    }
    ASSERT_EQ(out.shape(), os);
    std::vector<float> want;
    for (int64_t n = 0; n < os[0]; ++n)
      for (int64_t ch = 0; ch < os[1]; ++ch)
        for (int64_t h = 0; h < os[2]; ++h)
          for (int64_t w = 0; w < os[3]; ++w)
            want.push_back(static_cast<float>((((first[0] + n * step[0]) * 6 + first[1] + ch * step[1]) * 3 +
                                               first[2] + h * step[2]) * 4 + first[3] + w * step[3]));
    EXPECT_EQ(values<float>(out), want);
  }
}

// Channel slices big enough for the threaded copy, whose runs span several
// 64 KiB pieces (one image) or repeat per batch item, against indexing.
TEST(Slice, LargeChannelSlicesMatchIndexing) {
  Runner r;
  struct Case {
    Shape xs;
    int64_t start, end;
  };
  const std::vector<Case> cases{{{1, 116, 28, 28}, 0, 58},   // shufflenet's split, first half
                                {{1, 116, 28, 28}, 58, 116},  // second half
                                {{2, 8, 96, 96}, 2, 7},       // runs of 180 KiB, per batch item
                                {{3, 4, 64, 64}, 1, 3}};
  for (const auto& c : cases) {
    Tensor x = Tensor::from_vector<float>(iota(shape_numel(c.xs)), c.xs);
    Tensor out = r.run(make_node("Slice", 4), 13, {x, ints({c.start}), ints({c.end}), ints({1})});
    const int64_t plane = c.xs[2] * c.xs[3];
    ASSERT_EQ(out.shape(), (Shape{c.xs[0], c.end - c.start, c.xs[2], c.xs[3]}));
    std::vector<float> want;
    for (int64_t n = 0; n < c.xs[0]; ++n)
      for (int64_t ch = c.start; ch < c.end; ++ch)
        for (int64_t i = 0; i < plane; ++i) want.push_back(static_cast<float>((n * c.xs[1] + ch) * plane + i));
    EXPECT_EQ(values<float>(out), want) << shape_str(c.xs);
  }
}

TEST(Gather, NegativeIndicesAndAxis) {
  Runner r;
  auto n = make_node("Gather", 2);
  add_int(n, "axis", 1);
  Tensor x = Tensor::from_vector<float>(iota(6), {2, 3});
  Tensor out = r.run(n, 13, {x, Tensor::from_vector<int32_t>({-1, 0}, {2})});
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{2, 0, 5, 3}));
  EXPECT_EQ(error_kind_of([&] { r.run(n, 13, {x, ints({3})}); }), ErrorKind::kInvalidInput);
}

TEST(GatherElements, PicksAlongAxis) {
  Runner r;
  auto n = make_node("GatherElements", 2);
  add_int(n, "axis", 1);
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor out = r.run(n, 13, {x, Tensor::from_vector<int64_t>({0, 0, 1, -2}, {2, 2})});
  EXPECT_EQ(values<float>(out), (std::vector<float>{1, 1, 4, 3}));
}

TEST(Transpose, DefaultPermReverses) {
  Runner r;
  Tensor x = Tensor::from_vector<float>(iota(6), {2, 3});
  Tensor out = r.run(make_node("Transpose", 1), 13, {x});
  EXPECT_EQ(out.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

// The flat input index of each output element of Transpose(perm) over an
// input of `in_shape`, in output order: the reference the kernel must match.
std::vector<float> transposed_iota(const Shape& in_shape, const std::vector<int64_t>& perm) {
  const auto strides = strides_of(in_shape);
  Shape os;
  for (int64_t p : perm) os.push_back(in_shape[static_cast<size_t>(p)]);
  std::vector<float> want;
  std::vector<int64_t> idx(os.size(), 0);
  for (int64_t e = 0; e < shape_numel(os); ++e) {
    int64_t flat = 0;
    for (size_t k = 0; k < os.size(); ++k) flat += idx[k] * strides[static_cast<size_t>(perm[k])];
    want.push_back(static_cast<float>(flat));
    for (size_t k = os.size(); k-- > 0;) {
      if (++idx[k] < os[k]) break;
      idx[k] = 0;
    }
  }
  return want;
}

// Perms that leave trailing axes in place copy them as runs (the channel
// shuffle's [0,2,1,3,4]; identity; one fixed axis); perms that move the last
// axis go element by element. Large shapes take the threaded, chunked copy.
TEST(Transpose, TrailingFixedAxesAndMovedLastAxisMatchIndexing) {
  Runner r;
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases{{{2, 2, 3, 4, 5}, {0, 2, 1, 3, 4}},  // channel shuffle, runs of 20
                                {{1, 2, 58, 28, 28}, {0, 2, 1, 3, 4}},  // shufflenet's, threaded
                                {{2, 3, 4}, {1, 0, 2}},
                                {{2, 3, 4}, {0, 1, 2}},                 // identity: one run
                                {{2, 3, 4}, {0, 2, 1}},                 // last axis moves
                                {{4, 3, 2}, {2, 1, 0}},
                                {{1, 300, 300}, {1, 0, 2}}};           // one run of 360 KB
  for (const auto& c : cases) {
    auto n = make_node("Transpose", 1);
    add_ints(n, "perm", c.perm);
    Tensor x = Tensor::from_vector<float>(iota(shape_numel(c.shape)), c.shape);
    Tensor out = r.run(n, 13, {x});
    Shape os;
    for (int64_t p : c.perm) os.push_back(c.shape[static_cast<size_t>(p)]);
    ASSERT_EQ(out.shape(), os) << shape_str(c.shape);
    EXPECT_EQ(values<float>(out), transposed_iota(c.shape, c.perm)) << shape_str(c.shape);
  }
  // 1-byte elements through the run copy.
  auto n = make_node("Transpose", 1);
  add_ints(n, "perm", {1, 0, 2});
  std::vector<uint8_t> b(24);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i);
  Tensor out = r.run(n, 13, {Tensor::from_vector<uint8_t>(b, {2, 3, 4})});
  const auto want = transposed_iota({2, 3, 4}, {1, 0, 2});
  ASSERT_EQ(out.numel(), 24);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(out.data<uint8_t>()[i], static_cast<uint8_t>(want[static_cast<size_t>(i)]));
}

TEST(Expand, BroadcastsBothWays) {
  Runner r;
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3, 1});
  Tensor out = r.run(make_node("Expand", 2), 13, {x, ints({2, 1, 2})});
  EXPECT_EQ(out.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
}

TEST(Tile, RepeatsEachAxis) {
  Runner r;
  Tensor x = Tensor::from_vector<bool>({true, false}, {1, 2});
  Tensor out = r.run(make_node("Tile", 2), 13, {x, ints({2, 2})});
  EXPECT_EQ(out.shape(), (Shape{2, 4}));
  EXPECT_EQ(values<bool>(out), (std::vector<bool>{true, false, true, false, true, false, true, false}));
}

TEST(Pad, ModesAndNegativePads) {
  Runner r;
  Tensor x = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  auto reflect = make_node("Pad", 2);
  add_string(reflect, "mode", "reflect");
  EXPECT_EQ(values<int32_t>(r.run(reflect, 13, {x, ints({2, 3})})),
            (std::vector<int32_t>{3, 2, 1, 2, 3, 2, 1, 2}));
  auto edge = make_node("Pad", 2);
  add_string(edge, "mode", "edge");
  EXPECT_EQ(values<int32_t>(r.run(edge, 13, {x, ints({1, -1})})), (std::vector<int32_t>{1, 1, 2}));
  Tensor c = Tensor::scalar<int32_t>(7);
  EXPECT_EQ(values<int32_t>(r.run(make_node("Pad", 3), 13, {x, ints({-2, 1}), c})),
            (std::vector<int32_t>{3, 7}));

  auto old_node = make_node("Pad", 1);  // opset 2: pads and value attributes
  add_ints(old_node, "pads", {1, 0});
  auto* a = old_node.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(1.5f);
  Tensor xf = Tensor::from_vector<float>({4, 5}, {2});
  EXPECT_EQ(values<float>(r.run(old_node, 2, {xf})), (std::vector<float>{1.5f, 4, 5}));
}

TEST(DepthToSpace, DcrAndCrdOrders) {
  Runner r;
  Tensor x = Tensor::from_vector<float>(iota(8), {1, 8, 1, 1});
  auto dcr = make_node("DepthToSpace", 1);
  add_int(dcr, "blocksize", 2);
  Tensor out = r.run(dcr, 13, {x});
  EXPECT_EQ(out.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  auto crd = make_node("DepthToSpace", 1);
  add_int(crd, "blocksize", 2);
  add_string(crd, "mode", "CRD");
  EXPECT_EQ(values<float>(r.run(crd, 13, {x})), iota(8));
}

TEST(SpaceToDepth, InvertsDepthToSpaceDcr) {
  Runner r;
  Tensor x = Tensor::from_vector<float>(iota(16), {1, 1, 4, 4});
  auto s2d = make_node("SpaceToDepth", 1);
  add_int(s2d, "blocksize", 2);
  Tensor y = r.run(s2d, 13, {x});
  EXPECT_EQ(y.shape(), (Shape{1, 4, 2, 2}));
  EXPECT_EQ(values<float>(y)[0], 0.0f);
  EXPECT_EQ(values<float>(y)[4], 1.0f);
  auto d2s = make_node("DepthToSpace", 1);
  add_int(d2s, "blocksize", 2);
  EXPECT_EQ(values<float>(r.run(d2s, 13, {y})), iota(16));
}

TEST(Movement, UnsupportedVariantsThrowUnsupported) {
  Runner r;
  auto wrap = make_node("Pad", 2);
  add_string(wrap, "mode", "wrap");
  EXPECT_EQ(error_kind_of([&] { r.run(wrap, 13, {Tensor::from_vector<float>({1}, {1}), ints({0, 0})}); }),
            ErrorKind::kUnsupported);
  auto extra = make_node("Transpose", 1);
  add_int(extra, "bogus", 1);
  EXPECT_EQ(error_kind_of([&] { r.run(extra, 13, {Tensor::from_vector<float>({1}, {1})}); }),
            ErrorKind::kUnsupported);
}

}  // namespace
}  // namespace torq::engine
