// Pad (constant / reflect / edge, negative pads crop), DepthToSpace and
// SpaceToDepth. Elements are moved as raw bytes, so every dtype passes
// through unchanged.
#include <cstring>

#include "worker/engine/kernels/movement_util.h"

namespace torq::engine {

namespace {

// ---------------------------------------------------------------- Pad

enum class PadMode { kConstant, kReflect, kEdge };

class PadKernel : public Kernel {
 public:
  explicit PadKernel(const NodeInfo& n) : opset_(n.opset()) {
    if (opset_ < 11) {
      n.expect_attrs({"mode", "pads", "value"});
      TORQ_CHECK(n.has_attr("pads"), "Pad requires the pads attribute");
      pads_attr_ = n.attr_ints("pads");
      value_attr_ = n.attr_float("value", 0.0f);
    } else {
      n.expect_attrs({"mode"});
    }
    const std::string mode = n.attr_string("mode", "constant");
    if (mode == "constant") mode_ = PadMode::kConstant;
    else if (mode == "reflect") mode_ = PadMode::kReflect;
    else if (mode == "edge") mode_ = PadMode::kEdge;
    else throw_unsupported("Pad mode '" + mode + "' is not supported");
  }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const int64_t rank = x.rank();
    const DType dt = x.dtype();
    std::vector<int64_t> pads = pads_attr_;
    Tensor fill = Tensor::zeros(dt, {});
    if (opset_ < 11) {
      fill = cast_tensor(Tensor::scalar<float>(value_attr_), dt, ctx.rounding());
    } else {
      TORQ_CHECK(ctx.input(1), "Pad requires the pads input");
      pads = optional_ints(ctx, 1);
      const Tensor* cv = ctx.input(2);
      if (cv && cv->defined() && mode_ == PadMode::kConstant) {
        TORQ_CHECK(cv->numel() == 1, "Pad: constant_value must hold one element");
        fill = cast_tensor(*cv, dt, ctx.rounding()).reshaped({});
      }
    }
    TORQ_CHECK(static_cast<int64_t>(pads.size()) == 2 * rank,
               "Pad: pads must have 2 * rank entries");
    const auto strides = strides_of(x.shape());
    Shape out_shape(static_cast<size_t>(rank));
    std::vector<std::vector<int64_t>> off(static_cast<size_t>(rank));
    for (int64_t k = 0; k < rank; ++k) {
      const size_t a = static_cast<size_t>(k);
      const int64_t dim = x.dim(k);
      const int64_t b = pads[a], e = pads[a + static_cast<size_t>(rank)];
      // Crop first (negative pads), then pad the remaining [lo, hi).
      const int64_t lo = b < 0 ? -b : 0, hi = dim - (e < 0 ? -e : 0);
      TORQ_CHECK(hi >= lo, "Pad: negative pads remove more than the whole axis");
      const int64_t len = hi - lo, pb = b > 0 ? b : 0, pe = e > 0 ? e : 0;
      out_shape[a] = len + pb + pe;
      if (mode_ != PadMode::kConstant && len == 0 && out_shape[a] > 0)
        throw EngineError(ErrorKind::kInvalidInput, "Pad: cannot reflect or edge-pad an empty axis");
      off[a].resize(static_cast<size_t>(out_shape[a]));
      for (int64_t j = 0; j < out_shape[a]; ++j) {
        int64_t i = j - pb;  // position within the cropped axis
        if (i < 0 || i >= len) {
          if (mode_ == PadMode::kConstant) {
            off[a][static_cast<size_t>(j)] = kFillOffset;
            continue;
          }
          if (mode_ == PadMode::kEdge || len == 1) {
            i = i < 0 ? 0 : len - 1;
          } else {  // numpy 'reflect': mirror without repeating the edge, periodically
            const int64_t period = 2 * (len - 1);
            i %= period;
            if (i < 0) i += period;
            if (i >= len) i = period - i;
          }
        }
        off[a][static_cast<size_t>(j)] = (lo + i) * strides[a];
      }
    }
    Tensor out(dt, out_shape);
    gather_axis_offsets(x.raw(), out.raw(), dtype_size(dt), off, fill.raw());
    ctx.output(0) = out;
  }

 private:
  int opset_;
  PadMode mode_ = PadMode::kConstant;
  std::vector<int64_t> pads_attr_;
  float value_attr_ = 0.0f;
};

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

// Both ops are a reshape to 6-D, a transpose and a reshape back to 4-D.
class BlockKernel : public Kernel {
 public:
  BlockKernel(const NodeInfo& n, bool to_space) : to_space_(to_space) {
    if (to_space && n.opset() >= 11) n.expect_attrs({"blocksize", "mode"});
    else n.expect_attrs({"blocksize"});
    TORQ_CHECK(n.has_attr("blocksize"), n.op_type() + " requires the blocksize attribute");
    block_ = n.attr_int("blocksize", 0);
    TORQ_CHECK(block_ > 0, n.op_type() + ": blocksize must be positive");
    const std::string mode = n.attr_string("mode", "DCR");
    if (mode == "CRD") crd_ = true;
    else if (mode != "DCR") throw_unsupported("DepthToSpace mode '" + mode + "' is not supported");
  }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    TORQ_CHECK(x.rank() == 4, "DepthToSpace/SpaceToDepth input must be 4-D");
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), b = block_;
    Shape view, out_shape;
    std::vector<int64_t> perm;
    if (to_space_) {
      TORQ_CHECK(C % (b * b) == 0, "DepthToSpace: channels not divisible by blocksize^2");
      const int64_t c = C / (b * b);
      if (crd_) {
        view = {N, c, b, b, H, W};
        perm = {0, 1, 4, 2, 5, 3};
      } else {
        view = {N, b, b, c, H, W};
        perm = {0, 3, 4, 1, 5, 2};
      }
      out_shape = {N, c, H * b, W * b};
    } else {
      TORQ_CHECK(H % b == 0 && W % b == 0, "SpaceToDepth: spatial dims not divisible by blocksize");
      view = {N, C, H / b, b, W / b, b};
      perm = {0, 3, 5, 1, 2, 4};
      out_shape = {N, C * b * b, H / b, W / b};
    }
    Tensor out(x.dtype(), out_shape);
    gather_axis_offsets(x.raw(), out.raw(), dtype_size(x.dtype()), permuted_offsets(view, perm));
    ctx.output(0) = out;
  }

 private:
  bool to_space_;
  bool crd_ = false;
  int64_t block_;
};

}  // namespace

void register_movement_pad_kernels(KernelRegistry& r) {
  r.add("Pad", 2, 17, make_kernel<PadKernel>());
  r.add("DepthToSpace", 1, 17, [](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<BlockKernel>(n, true);
  });
  r.add("SpaceToDepth", 1, 17, [](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<BlockKernel>(n, false);
  });
}

}  // namespace torq::engine
