// RoiAlign (opsets 10 and 16): for each region of interest (rois row
// [x1, y1, x2, y2] in input coordinates, its image batch_indices[r]), an
// output_height x output_width grid of bins over the region scaled by
// spatial_scale, each bin the average (mode avg) or maximum (mode max) of
// sampling_ratio x sampling_ratio bilinear samples (0: ceil(bin extent)
// samples per axis, per region). coordinate_transformation_mode (opset 16,
// default half_pixel) shifts the region by -0.5 pixel; output_half_pixel
// (opset 10's only behaviour, torchvision's aligned=False) does not, and
// makes a region at least 1 pixel wide and high. A sample more than one
// pixel outside the image counts as 0. Max mode takes the largest
// bilinearly weighted corner of each sample, as ONNX Runtime and the ONNX
// reference do. Output [num_rois, C, output_height, output_width].
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "worker/engine/kernel.h"

namespace torq::engine {
namespace {

struct Sample {
  int64_t i1 = 0, i2 = 0, i3 = 0, i4 = 0;  // flat offsets in one H x W plane
  float w1 = 0, w2 = 0, w3 = 0, w4 = 0;    // 0 everywhere: outside the image
};

Sample bilinear(float y, float x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0f || y > static_cast<float>(h) || x < -1.0f || x > static_cast<float>(w)) return s;
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= h - 1) {
    y0 = y1 = h - 1;
    y = static_cast<float>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x0 = x1 = w - 1;
    x = static_cast<float>(x0);
  } else {
    x1 = x0 + 1;
  }
  const float ly = y - static_cast<float>(y0), lx = x - static_cast<float>(x0);
  const float hy = 1.0f - ly, hx = 1.0f - lx;
  s.i1 = y0 * w + x0;
  s.i2 = y0 * w + x1;
  s.i3 = y1 * w + x0;
  s.i4 = y1 * w + x1;
  s.w1 = hy * hx;
  s.w2 = hy * lx;
  s.w3 = ly * hx;
  s.w4 = ly * lx;
  return s;
}

class RoiAlignKernel final : public Kernel {
 public:
  explicit RoiAlignKernel(const NodeInfo& n) {
    n.expect_attrs({"mode", "output_height", "output_width", "sampling_ratio", "spatial_scale",
                    "coordinate_transformation_mode"});
    const std::string mode = n.attr_string("mode", "avg");
    TORQ_SUPPORTED(mode == "avg" || mode == "max", "RoiAlign mode '" + mode + "' is not supported");
    max_ = mode == "max";
    out_h_ = n.attr_int("output_height", 1);
    out_w_ = n.attr_int("output_width", 1);
    TORQ_CHECK(out_h_ > 0 && out_w_ > 0, "RoiAlign output_height and output_width must be positive");
    sampling_ = n.attr_int("sampling_ratio", 0);
    TORQ_CHECK(sampling_ >= 0, "RoiAlign sampling_ratio must be >= 0");
    scale_ = n.attr_float("spatial_scale", 1.0f);
    const std::string ctm = n.attr_string("coordinate_transformation_mode",
                                          n.opset() >= 16 ? "half_pixel" : "output_half_pixel");
    TORQ_SUPPORTED(ctm == "half_pixel" || ctm == "output_half_pixel",
                   "RoiAlign coordinate_transformation_mode '" + ctm + "' is not supported");
    half_pixel_ = ctm == "half_pixel";
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const Tensor& rois = ctx.in(1);
    const Tensor& batch = ctx.in(2);
    TORQ_SUPPORTED(x.dtype() == DType::kF32 && rois.dtype() == DType::kF32,
                   std::string("RoiAlign on ") + dtype_name(x.dtype()) + " is not supported (f32 only)");
    TORQ_CHECK(x.rank() == 4, "RoiAlign input X must be 4-D [N, C, H, W], got " + shape_str(x.shape()));
    TORQ_CHECK(rois.rank() == 2 && rois.dim(1) == 4, "RoiAlign rois must be [num_rois, 4], got " + shape_str(rois.shape()));
    const int64_t n_rois = rois.dim(0);
    TORQ_CHECK(batch.rank() == 1 && batch.dim(0) == n_rois,
               "RoiAlign batch_indices must be [" + std::to_string(n_rois) + "], got " + shape_str(batch.shape()));
    const int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3);
    Tensor& y = ctx.output(0);
    y = Tensor(DType::kF32, {n_rois, c, out_h_, out_w_});
    const float* xp = x.data<float>();
    const float* rp = rois.data<float>();
    float* yp = y.data<float>();
    for (int64_t r = 0; r < n_rois; ++r) {
      const int64_t b = batch.get_as_int(r);
      TORQ_CHECK(b >= 0 && b < x.dim(0), "RoiAlign batch index " + std::to_string(b) + " is outside the " +
                                             std::to_string(x.dim(0)) + " images");
      const std::vector<Sample> samples = samples_of(rp + 4 * r, h, w);
      const size_t per_bin = samples.size() / static_cast<size_t>(out_h_ * out_w_);
#pragma omp parallel for
      for (int64_t ch = 0; ch < c; ++ch) {
        const float* plane = xp + (b * c + ch) * h * w;
        float* out = yp + (r * c + ch) * out_h_ * out_w_;
        for (int64_t bin = 0; bin < out_h_ * out_w_; ++bin)
          out[bin] = pool(plane, &samples[static_cast<size_t>(bin) * per_bin], per_bin);
      }
    }
  }

 private:
  // The samples of every bin of one region, bin after bin.
  std::vector<Sample> samples_of(const float* roi, int64_t h, int64_t w) const {
    const float offset = half_pixel_ ? 0.5f : 0.0f;
    const float x1 = roi[0] * scale_ - offset, y1 = roi[1] * scale_ - offset;
    float roi_w = roi[2] * scale_ - offset - x1, roi_h = roi[3] * scale_ - offset - y1;
    if (!half_pixel_) {
      roi_w = std::max(roi_w, 1.0f);
      roi_h = std::max(roi_h, 1.0f);
    }
    const float bin_h = roi_h / static_cast<float>(out_h_), bin_w = roi_w / static_cast<float>(out_w_);
    const int64_t grid_h = sampling_ > 0 ? sampling_ : static_cast<int64_t>(std::ceil(roi_h / static_cast<float>(out_h_)));
    const int64_t grid_w = sampling_ > 0 ? sampling_ : static_cast<int64_t>(std::ceil(roi_w / static_cast<float>(out_w_)));
    std::vector<Sample> s;
    s.reserve(static_cast<size_t>(out_h_ * out_w_ * std::max<int64_t>(grid_h * grid_w, 1)));
    for (int64_t ph = 0; ph < out_h_; ++ph)
      for (int64_t pw = 0; pw < out_w_; ++pw) {
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const float yy = y1 + static_cast<float>(ph) * bin_h +
                           (static_cast<float>(iy) + 0.5f) * bin_h / static_cast<float>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const float xx = x1 + static_cast<float>(pw) * bin_w +
                             (static_cast<float>(ix) + 0.5f) * bin_w / static_cast<float>(grid_w);
            s.push_back(bilinear(yy, xx, h, w));
          }
        }
        if (grid_h * grid_w == 0) s.emplace_back();  // an empty grid: one zero sample (count 1)
      }
    return s;
  }

  float pool(const float* p, const Sample* s, size_t n) const {
    if (!max_) {
      float sum = 0;
      for (size_t i = 0; i < n; ++i)
        sum += s[i].w1 * p[s[i].i1] + s[i].w2 * p[s[i].i2] + s[i].w3 * p[s[i].i3] + s[i].w4 * p[s[i].i4];
      return sum / static_cast<float>(n);
    }
    float best = 0;
    for (size_t i = 0; i < n; ++i) {
      const float v = std::max(std::max(s[i].w1 * p[s[i].i1], s[i].w2 * p[s[i].i2]),
                               std::max(s[i].w3 * p[s[i].i3], s[i].w4 * p[s[i].i4]));
      best = i == 0 ? v : std::max(best, v);
    }
    return best;
  }

  bool max_ = false, half_pixel_ = true;
  int64_t out_h_ = 1, out_w_ = 1, sampling_ = 0;
  float scale_ = 1.0f;
};

}  // namespace

void register_roi_align_kernels(KernelRegistry& r) {
  r.add("RoiAlign", 10, 21, make_kernel<RoiAlignKernel>());
}

}  // namespace torq::engine
