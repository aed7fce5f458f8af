// Reorders (dnnl_util.h): a plain f32 image (C <= 4) into channels-last
// takes a copy loop instead of oneDNN's reorder; every element must land
// where the channels-last layout puts it, for 1-D to 3-D images, batches,
// sizes on one thread and on several, and for the C = 5 images oneDNN
// still reorders.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
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

}  // namespace
