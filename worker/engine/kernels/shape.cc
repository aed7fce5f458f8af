// Shape kernels: Reshape, Flatten, Squeeze, Unsqueeze (zero-copy views of a
// plain input; Reshape also of a strided oneDNN layout, movement_strided.h), Shape, Size, Identity and inference-mode Dropout; registers
// the whole shape family (Constant, ConstantOfShape, Range, Cast and
// CastLike live in shape_const.cc).
#include <algorithm>
#include <cstring>

#include "worker/engine/kernels/movement_strided.h"
#include "worker/engine/kernels/movement_util.h"

namespace torq::engine {

// Defined in shape_const.cc.
void register_shape_const_kernels(KernelRegistry& r);

namespace {

// ---------------------------------------------------------------- Reshape

class ReshapeKernel : public Kernel {
 public:
  explicit ReshapeKernel(const NodeInfo& n) {
    if (n.opset() >= 14) n.expect_attrs({"allowzero"});
    else n.expect_attrs({});
    allow_zero_ = n.attr_int("allowzero", 0) != 0;
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const Tensor& s = ctx.in(1);
    TORQ_CHECK(s.rank() == 1, "Reshape: shape must be 1-D");
    Shape shape = s.to_int_vector();
    int64_t infer = -1, known = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !allow_zero_) {
        TORQ_CHECK(static_cast<int64_t>(i) < x.rank(), "Reshape: 0 refers past the input rank");
        shape[i] = x.dim(static_cast<int64_t>(i));
      }
      if (shape[i] == -1) {
        TORQ_CHECK(infer < 0, "Reshape: more than one -1 in shape");
        infer = static_cast<int64_t>(i);
        continue;
      }
      TORQ_CHECK(shape[i] >= 0, "Reshape: invalid dimension " + std::to_string(shape[i]));
      known *= shape[i];
    }
    if (infer >= 0) {
      TORQ_CHECK(known != 0 && x.numel() % known == 0,
                 "Reshape: cannot infer -1 reshaping " + shape_str(x.shape()) + " to " +
                     shape_str(s.to_int_vector()));
      shape[static_cast<size_t>(infer)] = x.numel() / known;
    }
    TORQ_CHECK(shape_numel(shape) == x.numel(),
               "cannot reshape " + shape_str(x.shape()) + " to " + shape_str(shape));
    if (x.is_plain()) {
      ctx.output(0) = x.reshaped(shape);
    } else if (auto v = strided_reshape(x, shape, ctx.dnnl())) {
      ctx.output(0) = *v;  // a view, or one reorder (movement_strided.h)
    } else {
      ctx.output(0) = to_plain(x, ctx.dnnl()).reshaped(shape);
    }
  }

 private:
  bool allow_zero_;
};

// ---------------------------------------------------------------- Flatten

class FlattenKernel : public Kernel {
 public:
  explicit FlattenKernel(const NodeInfo& n) {
    n.expect_attrs({"axis"});
    axis_ = n.attr_int("axis", 1);
  }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const int64_t r = x.rank();
    int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    TORQ_CHECK(axis >= 0 && axis <= r, "Flatten: axis out of range");
    int64_t outer = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= x.dim(k);
    int64_t inner = 1;
    for (int64_t k = axis; k < r; ++k) inner *= x.dim(k);
    ctx.output(0) = x.reshaped({outer, inner});
  }

 private:
  int64_t axis_;
};

// ---------------------------------------------------------------- Squeeze / Unsqueeze

class SqueezeKernel : public Kernel {
 public:
  SqueezeKernel(const NodeInfo& n, bool unsqueeze) : unsqueeze_(unsqueeze), from_input_(n.opset() >= 13) {
    if (from_input_) {
      n.expect_attrs({});
    } else {
      n.expect_attrs({"axes"});
      if (unsqueeze_) TORQ_CHECK(n.has_attr("axes"), "Unsqueeze requires the axes attribute");
      axes_ = n.attr_ints("axes");
    }
  }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    std::vector<int64_t> axes = axes_;
    if (from_input_) {
      if (unsqueeze_) TORQ_CHECK(ctx.input(1), "Unsqueeze requires the axes input");
      axes = optional_ints(ctx, 1);
    }
    ctx.output(0) = x.reshaped(unsqueeze_ ? unsqueezed(x.shape(), axes) : squeezed(x.shape(), axes));
  }

 private:
  static Shape squeezed(const Shape& in, const std::vector<int64_t>& axes) {
    const int64_t r = static_cast<int64_t>(in.size());
    std::vector<bool> drop(in.size(), false);
    if (axes.empty()) {
      for (size_t k = 0; k < in.size(); ++k) drop[k] = in[k] == 1;
    }
    for (int64_t a : axes) {
      const size_t k = static_cast<size_t>(normalize_axis(a, r));
      TORQ_CHECK(in[k] == 1, "Squeeze: axis " + std::to_string(a) + " of " + shape_str(in) +
                                 " is not 1");
      drop[k] = true;
    }
    Shape out;
    for (size_t k = 0; k < in.size(); ++k)
      if (!drop[k]) out.push_back(in[k]);
    return out;
  }

  static Shape unsqueezed(const Shape& in, const std::vector<int64_t>& axes) {
    const int64_t r = static_cast<int64_t>(in.size() + axes.size());
    std::vector<bool> ins(static_cast<size_t>(r), false);
    for (int64_t a : axes) {
      const size_t k = static_cast<size_t>(normalize_axis(a, r));
      TORQ_CHECK(!ins[k], "Unsqueeze: repeated axis");
      ins[k] = true;
    }
    Shape out;
    size_t j = 0;
    for (size_t k = 0; k < ins.size(); ++k) out.push_back(ins[k] ? 1 : in[j++]);
    return out;
  }

  bool unsqueeze_, from_input_;
  std::vector<int64_t> axes_;
};

// ---------------------------------------------------------------- Shape / Size

class ShapeKernel : public Kernel {
 public:
  explicit ShapeKernel(const NodeInfo& n) {
    if (n.opset() >= 15) n.expect_attrs({"start", "end"});
    else n.expect_attrs({});
    start_ = n.attr_int("start", 0);
    has_end_ = n.has_attr("end");
    end_ = n.attr_int("end", 0);
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Shape& s = ctx.in(0).shape();
    const int64_t r = static_cast<int64_t>(s.size());
    auto clampi = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
    const int64_t b = clampi(start_), e = has_end_ ? clampi(end_) : r;
    std::vector<int64_t> dims;
    for (int64_t k = b; k < e; ++k) dims.push_back(s[static_cast<size_t>(k)]);
    const int64_t n = static_cast<int64_t>(dims.size());
    ctx.output(0) = Tensor::from_vector<int64_t>(dims, {n});
  }

 private:
  int64_t start_, end_;
  bool has_end_;
};

class SizeKernel : public Kernel {
 public:
  explicit SizeKernel(const NodeInfo& n) { n.expect_attrs({}); }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }
  void compute(KernelContext& ctx) override {
    ctx.output(0) = Tensor::scalar<int64_t>(ctx.in(0).numel());
  }
};

// ---------------------------------------------------------------- Identity / Dropout

class IdentityKernel : public Kernel {
 public:
  explicit IdentityKernel(const NodeInfo& n) { n.expect_attrs({}); }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }
  void compute(KernelContext& ctx) override { ctx.output(0) = ctx.in(0); }
};

// Inference Dropout: the output is the input and the optional mask is all
// true (all ones of the input type before opset 10). Training mode is only
// computable when the ratio is 0.
class DropoutKernel : public Kernel {
 public:
  explicit DropoutKernel(const NodeInfo& n) : opset_(n.opset()), want_mask_(n.has_output(1)) {
    if (opset_ < 7) {
      n.expect_attrs({"is_test", "ratio"});
      TORQ_SUPPORTED(n.attr_int("is_test", 0) != 0,
                     "Dropout with is_test=0 (training mode) is not supported");
    } else if (opset_ < 12) {
      n.expect_attrs({"ratio"});
    } else {
      n.expect_attrs({"seed"});
    }
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const Tensor* mode = ctx.input(2);
    if (opset_ >= 12 && mode && mode->defined() && mode->numel() > 0 && mode->get_as_int(0) != 0) {
      const Tensor* ratio = ctx.input(1);
      const double r = ratio && ratio->defined() && ratio->numel() > 0 ? ratio->get_as_double(0) : 0.5;
      TORQ_SUPPORTED(r == 0.0, "Dropout in training mode with a non-zero ratio is random");
    }
    ctx.output(0) = x;
    if (want_mask_ && ctx.num_outputs() > 1) {
      if (opset_ < 10) {
        const Tensor one = cast_tensor(Tensor::scalar<bool>(true), x.dtype(), ctx.rounding());
        Tensor ones(x.dtype(), x.shape());
        const size_t es = dtype_size(x.dtype());
        uint8_t* d = static_cast<uint8_t*>(ones.raw());
        for (int64_t i = 0; i < ones.numel(); ++i)
          std::memcpy(d + static_cast<size_t>(i) * es, one.raw(), es);
        ctx.output(1) = ones;
      } else {
        Tensor mask(DType::kBool, x.shape());
        std::memset(mask.raw(), 1, mask.nbytes());
        ctx.output(1) = mask;
      }
    }
  }

 private:
  int opset_;
  bool want_mask_;
};

}  // namespace

void register_shape_kernels(KernelRegistry& r) {
  r.add("Reshape", 5, 17, make_kernel<ReshapeKernel>());
  r.add("Flatten", 1, 17, make_kernel<FlattenKernel>());
  r.add("Squeeze", 1, 17, [](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<SqueezeKernel>(n, false);
  });
  r.add("Unsqueeze", 1, 17, [](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<SqueezeKernel>(n, true);
  });
  r.add("Shape", 1, 17, make_kernel<ShapeKernel>());
  r.add("Size", 1, 17, make_kernel<SizeKernel>());
  r.add("Identity", 1, 17, make_kernel<IdentityKernel>());
  r.add("Dropout", 6, 17, make_kernel<DropoutKernel>());
  register_shape_const_kernels(r);
}

}  // namespace torq::engine
