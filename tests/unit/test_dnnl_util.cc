// Reorders (dnnl_util.h): a plain f32 image (C <= 4) into channels-last
// takes a copy loop instead of oneDNN's reorder; every element must land
// where the channels-last layout puts it, for 1-D to 3-D images, batches,
// sizes on one thread and on several, and for the C = 5 images oneDNN
// still reorders.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "worker/engine/dnnl_util.h"

using namespace torq::engine;
using ft = dnnl::memory::format_tag;

namespace {

TEST(DnnlUtil, PlainImageToChannelsLastPutsEveryElementInPlace) {
  DnnlEnv env;
  const std::vector<Shape> spatials{{37}, {5, 7}, {3, 4, 5}, {150, 150}};
  for (const Shape& sp : spatials)
    for (int64_t n : {1, 2})
      for (int64_t c = 1; c <= 5; ++c) {
        Shape shape{n, c};
        shape.insert(shape.end(), sp.begin(), sp.end());
        SCOPED_TRACE(shape_str(shape));
        Tensor x(DType::kF32, shape);
        float* xp = x.data<float>();
        for (int64_t i = 0; i < x.numel(); ++i) xp[i] = static_cast<float>(i) * 0.5f - 3.f;
        const ft tag = sp.size() == 1 ? ft::nwc : sp.size() == 2 ? ft::nhwc : ft::ndhwc;
        const dnnl::memory::desc md(to_dims(shape), dnnl::memory::data_type::f32, tag);
        const Tensor y = reorder_to(x, md, DType::kF32, env);
        if (c > 1) {
          ASSERT_TRUE(md_of(y) == md);  // one channel: the plain layout
        }
        ASSERT_EQ(y.nbytes(), x.nbytes());
        const int64_t pixels = x.numel() / (n * c);
        const float* yp = static_cast<const float*>(y.raw());
        int64_t wrong = 0;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t k = 0; k < c; ++k)
            for (int64_t p = 0; p < pixels; ++p)
              wrong += yp[(b * pixels + p) * c + k] != xp[(b * c + k) * pixels + p];
        EXPECT_EQ(wrong, 0);
        // And back to plain (oneDNN's reorder) gives the input.
        const Tensor back = to_plain(y, env);
        EXPECT_EQ(std::memcmp(back.raw(), x.raw(), x.nbytes()), 0);
      }
}


// A session's primitives run on whichever thread steps it (a worker's
// lanes share a reference run), so they must not use oneDNN's per-thread
// scratchpad: made with user_scratchpad() and run by execute(), a
// convolution oneDNN computes through im2col and a GEMM (plain layouts:
// the scratchpad holds the im2col buffer) gives on a thread that made no
// primitive what it gives on its own. With oneDNN's scratchpad, that
// thread has none: the run crashed.
TEST(DnnlUtil, APrimitiveRunsOnAThreadThatDidNotMakeIt) {
  DnnlEnv env;
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc src({1, 16, 32, 32}, dt::f32, ft::nchw), w({32, 16, 3, 3}, dt::f32, ft::oihw),
      dst({1, 32, 32, 32}, dt::f32, ft::nchw);
  const auto pd = one_at_a_time([&] {
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                        w, dst, {1, 1}, {1, 1}, {1, 1}),
        user_scratchpad(), env.engine);
  });
  ASSERT_GT(pd.scratchpad_desc().get_size(), 0u) << pd.impl_info_str();
  const dnnl::convolution_forward conv(pd);
  Tensor x(DType::kF32, {1, 16, 32, 32}), k(DType::kF32, {32, 16, 3, 3}), here(DType::kF32, {1, 32, 32, 32}),
      there(DType::kF32, {1, 32, 32, 32});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 17) * 0.25f - 2.f;
  for (int64_t i = 0; i < k.numel(); ++i) k.data<float>()[i] = static_cast<float>(i % 7) * 0.125f - 0.375f;
  const auto run = [&](Tensor& y) {
    execute(env, conv, {{DNNL_ARG_SRC, as_memory(x, src, env)}, {DNNL_ARG_WEIGHTS, as_memory(k, w, env)},
                         {DNNL_ARG_DST, as_memory(y, dst, env)}});
  };
  run(here);
  std::thread([&] { run(there); }).join();
  EXPECT_EQ(std::memcmp(here.raw(), there.raw(), here.nbytes()), 0);
  EXPECT_NE(here.data<float>()[5000], 0.f);
}

}  // namespace
