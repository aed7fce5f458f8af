// Resize (opsets 10..17) and Upsample (7..9) with the exact semantics of the
// ONNX reference implementation (onnx/backend/test/case/node/resize.py):
// per output coordinate and axis, the original coordinate, the interpolation
// coefficients and the neighbours (edge-padded input) are computed the same
// way, in double precision. Nearest mode is a byte-level gather (any dtype);
// linear and cubic are applied separably, one resized axis at a time.
#include <algorithm>
#include <cmath>

#include "worker/engine/kernels/movement_util.h"

namespace torq::engine {

namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelNearest, kTfCropAndResize };
enum class Round { kPreferFloor, kPreferCeil, kFloor, kCeil };

// Interpolation of one axis: for each output position, `taps` source indices
// (already clamped, as the reference's edge padding does) and weights, or
// the extrapolation value.
struct AxisPlan {
  int64_t in = 0, out = 0;
  int taps = 0;
  std::vector<int64_t> src;
  std::vector<double> w;
  std::vector<uint8_t> extrap;

  // True when the plan reproduces its input exactly.
  bool identity() const {
    if (in != out) return false;
    for (int64_t x = 0; x < out; ++x) {
      if (extrap[static_cast<size_t>(x)]) return false;
      double self = 0;
      for (int t = 0; t < taps; ++t) {
        const size_t k = static_cast<size_t>(x * taps + t);
        if (src[k] == x) self += w[k];
        else if (w[k] != 0.0) return false;
      }
      if (self != 1.0) return false;
    }
    return true;
  }
};

class ResizeKernel : public Kernel {
 public:
  // kind: 7 = Upsample-7 (scales attribute), 9 = Upsample-9 / Resize-10
  // (scales input 1), 11 = Resize-11+ (roi, scales, sizes inputs).
  ResizeKernel(const NodeInfo& n, int kind) : kind_(kind) {
    const std::string op = n.op_type();
    if (kind_ == 7) {
      n.expect_attrs({"mode", "scales"});
      TORQ_CHECK(n.has_attr("scales"), "Upsample-7 requires the scales attribute");
      scales_attr_ = n.attr_floats("scales");
    } else if (kind_ == 9) {
      n.expect_attrs({"mode"});
    } else {
      n.expect_attrs({"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                      "extrapolation_value", "mode", "nearest_mode"});
    }
    const std::string mode = n.attr_string("mode", "nearest");
    if (mode == "nearest") mode_ = Mode::kNearest;
    else if (mode == "linear") mode_ = Mode::kLinear;
    else if (mode == "cubic" && kind_ == 11) mode_ = Mode::kCubic;
    else throw_unsupported(op + " mode '" + mode + "' is not supported");
    if (kind_ != 11) {
      coord_ = Coord::kAsymmetric;
      round_ = Round::kFloor;  // nearest is only accepted for integer scales (a repeat)
      return;
    }
    const std::string ctm = n.attr_string("coordinate_transformation_mode", "half_pixel");
    if (ctm == "half_pixel") coord_ = Coord::kHalfPixel;
    else if (ctm == "pytorch_half_pixel") coord_ = Coord::kPytorchHalfPixel;
    else if (ctm == "align_corners") coord_ = Coord::kAlignCorners;
    else if (ctm == "asymmetric") coord_ = Coord::kAsymmetric;
    else if (ctm == "tf_half_pixel_for_nearest" || ctm == "tf_half_pixel_for_nn") coord_ = Coord::kTfHalfPixelNearest;
    else if (ctm == "tf_crop_and_resize") coord_ = Coord::kTfCropAndResize;
    else throw_unsupported("Resize coordinate_transformation_mode '" + ctm + "' is not supported");
    const std::string nm = n.attr_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor") round_ = Round::kPreferFloor;
    else if (nm == "round_prefer_ceil") round_ = Round::kPreferCeil;
    else if (nm == "floor") round_ = Round::kFloor;
    else if (nm == "ceil") round_ = Round::kCeil;
    else throw_unsupported("Resize nearest_mode '" + nm + "' is not supported");
    cubic_a_ = n.attr_float("cubic_coeff_a", -0.75f);
    exclude_outside_ = n.attr_int("exclude_outside", 0) != 0;
    TORQ_SUPPORTED(!(exclude_outside_ && mode_ == Mode::kNearest),
                   "Resize exclude_outside with nearest mode is not supported");
    extrapolation_ = n.attr_float("extrapolation_value", 0.0f);
  }
  // Not bf16-native on purpose: the session would then also round the f32
  // scales and roi inputs to bf16. bf16 data arrives as f32 (exact) and the
  // session rounds the f32 result.
  bool handles_bf16() const override { return false; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const int64_t rank = x.rank();
    std::vector<AxisPlan> plans = make_plans(ctx, x);
    if (mode_ == Mode::kNearest) {
      compute_nearest(ctx, x, plans);
      return;
    }
    TORQ_SUPPORTED(is_float(x.dtype()), std::string("Resize linear/cubic of dtype ") +
                                            dtype_name(x.dtype()) + " is not supported");
    Shape out_shape(static_cast<size_t>(rank));
    for (size_t a = 0; a < plans.size(); ++a) out_shape[a] = plans[a].out;
    if (x.dtype() == DType::kF64) {
      ctx.output(0) = interpolate<double>(x, plans, out_shape);
      return;
    }
    Tensor out = interpolate<float>(to_f32(x), plans, out_shape);
    ctx.output(0) = cast_tensor(out, x.dtype(), ctx.rounding());
  }

 private:
  std::vector<AxisPlan> make_plans(const KernelContext& ctx, const Tensor& x) const {
    const int64_t rank = x.rank();
    std::vector<float> scales = scales_attr_;
    std::vector<int64_t> sizes;
    std::vector<float> roi;
    if (kind_ == 9) {
      scales = ctx.in(1).to_float_vector();
    } else if (kind_ == 11) {
      const Tensor* r = ctx.input(1);
      const Tensor* s = ctx.input(2);
      const Tensor* z = ctx.input(3);
      if (r && r->defined()) roi = r->to_float_vector();
      if (s && s->defined()) scales = s->to_float_vector();
      if (z && z->defined()) sizes = z->to_int_vector();
      TORQ_CHECK(scales.empty() || sizes.empty(), "Resize: only one of scales and sizes may be given");
      TORQ_CHECK(!scales.empty() || !sizes.empty(), "Resize: one of scales and sizes is required");
    }
    TORQ_CHECK(sizes.empty() || static_cast<int64_t>(sizes.size()) == rank,
               "Resize: sizes must have one entry per input dimension");
    TORQ_CHECK(!sizes.empty() || static_cast<int64_t>(scales.size()) == rank,
               "Resize: scales must have one entry per input dimension");
    if (coord_ == Coord::kTfCropAndResize)
      TORQ_CHECK(static_cast<int64_t>(roi.size()) == 2 * rank,
                 "Resize: tf_crop_and_resize needs roi with 2 * rank entries");
    if (coord_ == Coord::kTfCropAndResize)
      TORQ_SUPPORTED(!sizes.empty(), "Resize tf_crop_and_resize with scales is not supported "
                                     "(the output size rule is ambiguous); give sizes");
    std::vector<AxisPlan> plans(static_cast<size_t>(rank));
    for (int64_t a = 0; a < rank; ++a) {
      const size_t k = static_cast<size_t>(a);
      const int64_t in = x.dim(a);
      int64_t out;
      double scale;
      if (!sizes.empty()) {
        out = sizes[k];
        TORQ_CHECK(out >= 0, "Resize: negative size");
        TORQ_CHECK(in > 0 || out == 0, "Resize: cannot resize an empty axis");
        scale = in > 0 ? static_cast<double>(out) / static_cast<double>(in) : 1.0;
      } else {
        scale = static_cast<double>(scales[k]);
        TORQ_CHECK(scale > 0 && std::isfinite(scale), "Resize: scales must be positive and finite");
        TORQ_CHECK(scale * static_cast<double>(in) < 9.0e15, "Resize: output too large");
        out = static_cast<int64_t>(std::floor(scale * static_cast<double>(in)));
      }
      if (kind_ != 11 && mode_ == Mode::kNearest)
        TORQ_SUPPORTED(scale >= 1.0 && scale == std::floor(scale),
                       "Upsample/Resize-10 nearest with non-integer or < 1 scales is not supported");
      const float r0 = roi.empty() ? 0.0f : roi[k];
      const float r1 = roi.empty() ? 1.0f : roi[k + static_cast<size_t>(rank)];
      plans[k] = plan_axis(in, out, scale, r0, r1);
    }
    return plans;
  }

  // The reference's interpolate_1d_with_x, tabulated for every output x.
  AxisPlan plan_axis(int64_t in, int64_t out, double scale, float roi0, float roi1) const {
    AxisPlan p;
    p.in = in;
    p.out = out;
    p.taps = mode_ == Mode::kCubic ? 4 : 2;
    const int n = p.taps;
    p.src.assign(static_cast<size_t>(out * n), 0);
    p.w.assign(static_cast<size_t>(out * n), 0.0);
    p.extrap.assign(static_cast<size_t>(out), 0);
    if (in == 0) return p;
    const double out_w = scale * static_cast<double>(in);
    const int64_t pad = (n + 1) / 2;
    const int64_t padded_len = in + 2 * pad;
    for (int64_t x = 0; x < out; ++x) {
      const double xd = static_cast<double>(x);
      double xo = 0;
      switch (coord_) {
        case Coord::kAlignCorners:
          xo = out_w == 1 ? 0.0 : static_cast<double>(x * (in - 1)) / (out_w - 1);
          break;
        case Coord::kAsymmetric: xo = xd / scale; break;
        case Coord::kTfCropAndResize: {
          const double d = static_cast<double>(roi1 - roi0);  // float32 difference, as numpy
          if (out_w == 1) xo = d * static_cast<double>(in - 1) / 2;
          else xo = xd * d * static_cast<double>(in - 1) / (out_w - 1);
          xo += static_cast<double>(roi0) * static_cast<double>(in - 1);
          if (xo < 0 || xo > static_cast<double>(in - 1)) {
            p.extrap[static_cast<size_t>(x)] = 1;
            continue;
          }
          break;
        }
        case Coord::kPytorchHalfPixel: xo = out_w == 1 ? -0.5 : (xd + 0.5) / scale - 0.5; break;
        case Coord::kHalfPixel: xo = (xd + 0.5) / scale - 0.5; break;
        case Coord::kTfHalfPixelNearest: xo = (xd + 0.5) / scale; break;
      }
      TORQ_CHECK(std::isfinite(xo), "Resize: non-finite source coordinate");
      const double xo_int = std::floor(xo);
      const double ratio = xo == xo_int ? 1.0 : xo - xo_int;
      double c[4];
      coeffs(ratio, c);
      // The n nearest indexes to xo + pad in the edge-padded axis, ties to the smaller.
      const double xp = xo + static_cast<double>(pad);
      const int64_t centre = std::clamp<int64_t>(static_cast<int64_t>(std::floor(std::clamp(
                                                     xp, -1.0, static_cast<double>(padded_len)))),
                                                 0, padded_len - 1);
      std::vector<int64_t> cand;
      for (int64_t i = std::max<int64_t>(0, centre - n - 1); i <= std::min(padded_len - 1, centre + n + 1); ++i)
        cand.push_back(i);
      std::sort(cand.begin(), cand.end(), [xp](int64_t a, int64_t b) {
        const double da = std::fabs(xp - static_cast<double>(a)), db = std::fabs(xp - static_cast<double>(b));
        return da != db ? da < db : a < b;
      });
      cand.resize(static_cast<size_t>(n));
      std::sort(cand.begin(), cand.end());
      if (exclude_outside_) {
        double sum = 0;
        for (int t = 0; t < n; ++t) {
          const int64_t o = cand[static_cast<size_t>(t)] - pad;
          if (o < 0 || o >= in) c[t] = 0;
          sum += c[t];
        }
        for (int t = 0; t < n; ++t) c[t] /= sum;
      }
      for (int t = 0; t < n; ++t) {
        const size_t k = static_cast<size_t>(x * n + t);
        p.src[k] = std::clamp<int64_t>(cand[static_cast<size_t>(t)] - pad, 0, in - 1);
        p.w[k] = c[t];
      }
    }
    return p;
  }

  void coeffs(double r, double* c) const {
    switch (mode_) {
      case Mode::kLinear:
        c[0] = 1 - r;
        c[1] = r;
        return;
      case Mode::kCubic: {
        const double A = static_cast<double>(cubic_a_);
        c[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
        c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
        c[2] = ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1;
        c[3] = ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A;
        return;
      }
      case Mode::kNearest: {
        bool hi = true;  // an integer coordinate (ratio 1) takes the upper neighbour
        if (r != 1.0) {
          switch (round_) {
            case Round::kPreferFloor: hi = r > 0.5; break;
            case Round::kPreferCeil: hi = r >= 0.5; break;
            case Round::kFloor: hi = false; break;
            case Round::kCeil: hi = true; break;
          }
        }
        c[0] = hi ? 0.0 : 1.0;
        c[1] = hi ? 1.0 : 0.0;
        return;
      }
    }
  }

  void compute_nearest(KernelContext& ctx, const Tensor& x, const std::vector<AxisPlan>& plans) const {
    const auto strides = strides_of(x.shape());
    Shape out_shape(plans.size());
    std::vector<std::vector<int64_t>> off(plans.size());
    bool any_fill = false;
    for (size_t a = 0; a < plans.size(); ++a) {
      const AxisPlan& p = plans[a];
      out_shape[a] = p.out;
      off[a].resize(static_cast<size_t>(p.out));
      for (int64_t o = 0; o < p.out; ++o) {
        if (p.extrap[static_cast<size_t>(o)]) {
          off[a][static_cast<size_t>(o)] = kFillOffset;
          any_fill = true;
          continue;
        }
        const size_t k = static_cast<size_t>(o * p.taps);
        const int64_t src = p.w[k] != 0.0 ? p.src[k] : p.src[k + 1];
        off[a][static_cast<size_t>(o)] = src * strides[a];
      }
    }
    Tensor fill;
    if (any_fill) fill = cast_tensor(Tensor::scalar<float>(extrapolation_), x.dtype(), ctx.rounding());
    Tensor out(x.dtype(), out_shape);
    gather_axis_offsets(x.raw(), out.raw(), dtype_size(x.dtype()), off, any_fill ? fill.raw() : nullptr);
    ctx.output(0) = out;
  }

  // Applies the non-identity axis plans one at a time (most shrinking first).
  template <class T>
  Tensor interpolate(const Tensor& x, const std::vector<AxisPlan>& plans, const Shape& out_shape) const {
    std::vector<size_t> order;
    for (size_t a = 0; a < plans.size(); ++a)
      if (!plans[a].identity()) order.push_back(a);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return plans[a].out * plans[b].in < plans[b].out * plans[a].in;
    });
    if (shape_numel(out_shape) == 0) return Tensor(x.dtype(), out_shape);
    Tensor cur = x;  // stays the input when every axis is an identity
    const T extrap = static_cast<T>(extrapolation_);
    for (size_t a : order) {
      const AxisPlan& p = plans[a];
      Shape s = cur.shape();
      int64_t outer = 1, inner = 1;
      for (size_t k = 0; k < a; ++k) outer *= s[k];
      for (size_t k = a + 1; k < s.size(); ++k) inner *= s[k];
      s[a] = p.out;
      Tensor next(x.dtype(), s);
      const T* src = cur.data<T>();
      T* dst = next.data<T>();
      const int64_t rows = outer * p.out, n = p.taps;
#pragma omp parallel for schedule(static) if (rows * inner > 32768)
      for (int64_t row = 0; row < rows; ++row) {
        const int64_t o = row / p.out, xo = row % p.out;
        T* d = dst + row * inner;
        if (p.extrap[static_cast<size_t>(xo)]) {
          std::fill(d, d + inner, extrap);
          continue;
        }
        std::fill(d, d + inner, T(0));
        for (int64_t t = 0; t < n; ++t) {
          const size_t k = static_cast<size_t>(xo * n + t);
          const T w = static_cast<T>(p.w[k]);
          if (w == T(0)) continue;
          const T* sp = src + (o * p.in + p.src[k]) * inner;
          for (int64_t i = 0; i < inner; ++i) d[i] += w * sp[i];
        }
      }
      cur = next;
    }
    return cur;
  }

  int kind_;
  Mode mode_ = Mode::kNearest;
  Coord coord_ = Coord::kHalfPixel;
  Round round_ = Round::kPreferFloor;
  float cubic_a_ = -0.75f;
  bool exclude_outside_ = false;
  float extrapolation_ = 0.0f;
  std::vector<float> scales_attr_;
};

template <int kKind>
KernelFactory resize_factory() {
  return [](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<ResizeKernel>(n, kKind);
  };
}

}  // namespace

void register_resize_kernels(KernelRegistry& r) {
  r.add("Upsample", 7, 8, resize_factory<7>());
  r.add("Upsample", 9, 9, resize_factory<9>());
  r.add("Resize", 10, 10, resize_factory<9>());
  r.add("Resize", 11, 17, resize_factory<11>());
}

}  // namespace torq::engine
