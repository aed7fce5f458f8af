// The small GlobalAveragePool loop (kernels/nn_impl.h, global_avg_small):
// on channels-last f32 inputs it gives, bit for bit, what oneDNN's average
// pooling primitive gives (the engine's path before it), for 1-D to 3-D
// images, batches, channel counts off the vector width and one pixel; it
// refuses, touching nothing, what it does not take (few channels, many
// pixels, plain or blocked layouts, bf16), which oneDNN then runs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "worker/engine/kernels/nn_impl.h"

using namespace torq::engine;
using ft = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

namespace {

ft channels_last(size_t rank) { return rank == 3 ? ft::nwc : rank == 4 ? ft::nhwc : ft::ndhwc; }

// x [N, C, spatial...] in layout `tag`, random values in [-3, 3).
Tensor random_input(const Shape& shape, ft tag, unsigned seed) {
  const dnnl::memory::desc md(to_dims(shape), dt::f32, tag);
  Tensor x = alloc_for_md(md, DType::kF32, shape);
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  float* p = static_cast<float*>(x.raw());
  for (size_t i = 0; i < x.nbytes() / sizeof(float); ++i) p[i] = u(g);
  return x;
}

// oneDNN's average pooling of x over all its spatial dims; `y_md` gets the
// layout oneDNN picked for the output.
Tensor dnnl_global_avg(const Tensor& x, DnnlEnv& env, dnnl::memory::desc* y_md, Shape* y_shape) {
  const dnnl::memory::desc x_md = md_of(x);
  Shape ys{x.dim(0), x.dim(1)};
  dnnl::memory::dims kernel, ones, zeros;
  for (int64_t i = 2; i < x.rank(); ++i) {
    ys.push_back(1);
    kernel.push_back(x.dim(i));
    ones.push_back(1);
    zeros.push_back(0);
  }
  const dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::pooling_avg_exclude_padding, x_md,
                                         dnnl::memory::desc(to_dims(ys), dt::f32, ft::any), ones, kernel, zeros,
                                         zeros, zeros);
  const dnnl::pooling_v2_forward::primitive_desc pd(d, env.engine);
  *y_md = pd.dst_desc();
  *y_shape = ys;
  Tensor y = alloc_for_md(*y_md, DType::kF32, ys);
  dnnl::pooling_v2_forward(pd).execute(env.stream, {{DNNL_ARG_SRC, as_memory(x, x_md, env)},
                                                    {DNNL_ARG_DST, as_memory(y, *y_md, env)}});
  env.stream.wait();
  return y;
}

TEST(PoolGlobal, SmallChannelsLastAverageIsOneDnnsBitForBit) {
  DnnlEnv env;
  const std::vector<Shape> shapes{{1, 576, 7, 7},  {1, 240, 14, 14}, {2, 40, 5, 3},  {1, 33, 1, 1},
                                  {1, 100, 32, 32}, {2, 48, 17},     {1, 64, 3, 4, 5}};
  unsigned seed = 1;
  for (const Shape& s : shapes) {
    SCOPED_TRACE(shape_str(s));
    const Tensor x = random_input(s, channels_last(s.size()), seed++);
    dnnl::memory::desc y_md;
    Shape y_shape;
    const Tensor want = dnnl_global_avg(x, env, &y_md, &y_shape);
    Tensor got;
    ASSERT_TRUE(nn::global_avg_small(x, md_of(x), y_md, y_shape, &got));
    ASSERT_EQ(got.shape(), y_shape);
    ASSERT_TRUE(md_of(got) == md_of(want));
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0);
    // And the values are means: channel 0 of batch 0 by a double sum.
    const Tensor xp = to_plain(x, env), yp = to_plain(got, env);
    const int64_t pixels = x.numel() / (s[0] * s[1]);
    double sum = 0;
    for (int64_t p = 0; p < pixels; ++p) sum += xp.data<float>()[p];
    EXPECT_NEAR(yp.data<float>()[0], sum / static_cast<double>(pixels), 1e-5);
  }
}

TEST(PoolGlobal, RefusesWhatOneDnnRunsFaster) {
  DnnlEnv env;
  struct Case {
    Shape shape;
    ft tag;
    const char* why;
  };
  const std::vector<Case> cases{{{1, 16, 7, 7}, ft::nhwc, "few channels"},
                                {{1, 64, 56, 56}, ft::nhwc, "many pixels"},
                                {{1, 576, 7, 7}, ft::nchw, "plain"},
                                {{1, 576, 7, 7}, ft::nChw16c, "blocked"},
                                {{1, 4096, 8, 8}, ft::nhwc, "many elements"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    const Tensor x = random_input(c.shape, c.tag, 7);
    dnnl::memory::desc y_md;
    Shape y_shape;
    dnnl_global_avg(x, env, &y_md, &y_shape);
    Tensor got;
    EXPECT_FALSE(nn::global_avg_small(x, md_of(x), y_md, y_shape, &got));
    EXPECT_FALSE(got.defined());
  }
  // bf16 data.
  const dnnl::memory::desc md(to_dims({1, 64, 7, 7}), dt::bf16, ft::nhwc);
  const Tensor xb = alloc_for_md(md, DType::kBF16, {1, 64, 7, 7});
  Tensor got;
  EXPECT_FALSE(nn::global_avg_small(xb, md, md, {1, 64, 1, 1}, &got));
  EXPECT_FALSE(got.defined());
}

}  // namespace
