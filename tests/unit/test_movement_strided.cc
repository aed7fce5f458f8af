// Unit tests of Reshape, Transpose and Slice on strided oneDNN layouts
// (movement_strided.h): shufflenet's channel shuffle and split on an nhwc
// input stay nhwc, views that come out row-major are plain, and the cases
// not covered (inner blocks, steps, axes split and merged at once) take the
// plain path; every result holds the plain path's values. Split likewise.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "tests/unit/kernel_harness.h"
#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernel.h"

namespace torq::engine {
namespace {

using namespace test;
using tag = dnnl::memory::format_tag;

Tensor iota_tensor(const Shape& s) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::from_vector<float>(v, s);
}

Tensor in_layout(const Tensor& t, tag tg, DnnlEnv& env) {
  Tensor out = reorder_to(t, dnnl::memory::desc(to_dims(t.shape()), dnnl::memory::data_type::f32, tg),
                          DType::kF32, env);
  EXPECT_FALSE(out.is_plain());
  return out;
}

bool has_tag(const Tensor& t, tag tg) {
  return !t.is_plain() && md_of(t) == dnnl::memory::desc(to_dims(t.shape()), dnnl::memory::data_type::f32, tg);
}

std::vector<float> plain_values(const Tensor& t, DnnlEnv& env) { return values<float>(to_plain(t, env)); }

Tensor transpose(KernelRunner& r, const Tensor& x, const std::vector<int64_t>& perm) {
  auto n = make_node("Transpose", 1);
  add_ints(n, "perm", perm);
  return r.run(n, 13, {x});
}

Tensor slice(KernelRunner& r, const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends,
             std::vector<int64_t> axes, std::vector<int64_t> steps) {
  return r.run(make_node("Slice", 5), 13, {x, ints(starts), ints(ends), ints(axes), ints(steps)});
}

// The channel shuffle (Reshape-Transpose-Reshape) and the split (two
// Slices) of an [N, C, H, W] tensor, as torchvision's shufflenet exports them.
struct Shuffled {
  Tensor grouped, swapped, shuffled, first, second;
};
Shuffled shuffle_and_split(KernelRunner& r, const Tensor& x) {
  const Shape s = x.shape();
  Shuffled o;
  o.grouped = r.run("Reshape", 14, {x, ints({s[0], 2, s[1] / 2, s[2], s[3]})});
  o.swapped = transpose(r, o.grouped, {0, 2, 1, 3, 4});
  o.shuffled = r.run("Reshape", 14, {o.swapped, ints(s)});
  o.first = slice(r, o.shuffled, {0}, {s[1] / 2}, {1}, {1});
  o.second = slice(r, o.shuffled, {s[1] / 2}, {s[1]}, {1}, {1});
  return o;
}

TEST(StridedLayout, ChannelShuffleAndSplitOfNhwcStayNhwcWithPlainValues) {
  KernelRunner r;
  for (const Shape& s : {Shape{2, 12, 3, 5}, Shape{1, 116, 28, 28}}) {
    const Tensor x = iota_tensor(s);
    const Shuffled want = shuffle_and_split(r, x);
    ASSERT_TRUE(want.shuffled.is_plain());
    const Shuffled got = shuffle_and_split(r, in_layout(x, tag::acdb, r.env));
    EXPECT_FALSE(got.grouped.is_plain());
    EXPECT_FALSE(got.swapped.is_plain());
    EXPECT_TRUE(has_tag(got.shuffled, tag::acdb)) << shape_str(s);
    EXPECT_TRUE(has_tag(got.first, tag::acdb)) << shape_str(s);
    EXPECT_TRUE(has_tag(got.second, tag::acdb)) << shape_str(s);
    EXPECT_EQ(got.grouped.shape(), want.grouped.shape());
    EXPECT_EQ(got.swapped.shape(), want.swapped.shape());
    EXPECT_EQ(plain_values(got.grouped, r.env), values<float>(want.grouped));
    EXPECT_EQ(plain_values(got.swapped, r.env), values<float>(want.swapped));
    EXPECT_EQ(plain_values(got.shuffled, r.env), values<float>(want.shuffled));
    EXPECT_EQ(got.first.shape(), want.first.shape());
    EXPECT_EQ(plain_values(got.first, r.env), values<float>(want.first));
    EXPECT_EQ(plain_values(got.second, r.env), values<float>(want.second));
  }
  // The shuffle itself, spelled out: output channel 2i+g is input channel g*C/2+i.
  const Tensor x = iota_tensor({1, 6, 1, 2});
  const auto v = plain_values(shuffle_and_split(r, in_layout(x, tag::acdb, r.env)).shuffled, r.env);
  EXPECT_EQ(v, (std::vector<float>{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}));
}

// Split of an nhwc tensor: nhwc outputs (uneven parts, one omitted output);
// of nChw16c: the plain path. Values as the plain path's, which is checked
// against indexing on a split large enough for the threaded copy.
TEST(StridedLayout, SplitOfNhwcStaysNhwcWithPlainValues) {
  KernelRunner r;
  const Tensor x = iota_tensor({2, 20, 3, 2});
  onnx::NodeProto n = make_node("Split", {"in0", "in1"}, 3);
  n.set_output(1, "");
  add_int(n, "axis", 1);
  const auto want = r.run_all(n, 13, {x, ints({5, 7, 8})});
  const auto nhwc = r.run_all(n, 13, {in_layout(x, tag::acdb, r.env), ints({5, 7, 8})});
  const auto blocked = r.run_all(n, 13, {in_layout(x, tag::nChw16c, r.env), ints({5, 7, 8})});
  EXPECT_FALSE(nhwc[1].defined());
  for (size_t i : {size_t{0}, size_t{2}}) {
    EXPECT_TRUE(has_tag(nhwc[i], tag::acdb)) << i;
    EXPECT_TRUE(blocked[i].is_plain()) << i;
    EXPECT_EQ(nhwc[i].shape(), want[i].shape());
    EXPECT_EQ(plain_values(nhwc[i], r.env), values<float>(want[i])) << i;
    EXPECT_EQ(values<float>(blocked[i]), values<float>(want[i])) << i;
  }
  EXPECT_EQ(values<float>(want[0])[1], 1.0f);  // item 0, channel 0, pixel 1
  EXPECT_EQ(values<float>(want[2])[0], 72.0f);  // item 0, channel 12
  // [1, 116, 28, 28] split in halves: runs of 182 KB in 64 KiB pieces.
  const Tensor big = iota_tensor({1, 116, 28, 28});
  onnx::NodeProto halve = make_node("Split", 1, 2);
  add_int(halve, "axis", 1);
  const auto halves = r.run_all(halve, 13, {big});
  ASSERT_EQ(halves[1].shape(), (Shape{1, 58, 28, 28}));
  const auto v = values<float>(halves[1]);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], static_cast<float>(58 * 784 + i)) << i;
  EXPECT_EQ(values<float>(halves[0]).back(), static_cast<float>(58 * 784 - 1));
}

// Flattening an nhwc image and swapping the last two axes (a ViT patch
// embedding) is the row-major [N, HW, C]: a plain view, no copy.
TEST(StridedLayout, ViewsThatComeOutRowMajorArePlain) {
  KernelRunner r;
  const Tensor x = iota_tensor({1, 4, 3, 5});
  const Tensor nhwc = in_layout(x, tag::acdb, r.env);
  const Tensor flat = r.run("Reshape", 14, {nhwc, ints({1, 4, 15})});
  EXPECT_FALSE(flat.is_plain());
  const Tensor tokens = transpose(r, flat, {0, 2, 1});
  ASSERT_TRUE(tokens.is_plain());
  EXPECT_EQ(tokens.raw(), nhwc.raw());
  EXPECT_EQ(values<float>(tokens), values<float>(transpose(r, r.run("Reshape", 14, {x, ints({1, 4, 15})}), {0, 2, 1})));
  const Tensor last = transpose(r, nhwc, {0, 2, 3, 1});
  ASSERT_TRUE(last.is_plain());
  EXPECT_EQ(values<float>(last), values<float>(transpose(r, x, {0, 2, 3, 1})));
}

// Inner blocks (nChw16c), a step of 2 and a reshape that both splits and
// merges axes are not covered: plain results with the plain path's values.
TEST(StridedLayout, UncoveredCasesTakeThePlainPath) {
  KernelRunner r;
  const Tensor x = iota_tensor({2, 20, 3, 2});
  const Tensor blocked = in_layout(x, tag::nChw16c, r.env);
  const Tensor nhwc = in_layout(x, tag::acdb, r.env);
  struct Case {
    const char* what;
    Tensor got, want;
  };
  const std::vector<Case> cases{
      {"reshape nChw16c", r.run("Reshape", 14, {blocked, ints({2, 2, 10, 6})}),
       r.run("Reshape", 14, {x, ints({2, 2, 10, 6})})},
      {"transpose nChw16c", transpose(r, blocked, {0, 2, 1, 3}), transpose(r, x, {0, 2, 1, 3})},
      {"slice nChw16c", slice(r, blocked, {3}, {19}, {1}, {1}), slice(r, x, {3}, {19}, {1}, {1})},
      {"slice nhwc step 2", slice(r, nhwc, {1}, {20}, {1}, {2}), slice(r, x, {1}, {20}, {1}, {2})},
      {"reshape nhwc split+merge", r.run("Reshape", 14, {nhwc, ints({2, 4, 30})}),
       r.run("Reshape", 14, {x, ints({2, 4, 30})})}};
  for (const auto& c : cases) {
    EXPECT_TRUE(c.got.is_plain()) << c.what;
    EXPECT_EQ(c.got.shape(), c.want.shape()) << c.what;
    EXPECT_EQ(plain_values(c.got, r.env), values<float>(c.want)) << c.what;
  }
  // A bad shape is still an invalid-model error on a blocked input.
  EXPECT_EQ(error_kind_of([&] { r.run("Reshape", 14, {nhwc, ints({2, 7, 3})}); }), ErrorKind::kInvalidModel);
}

}  // namespace
}  // namespace torq::engine
