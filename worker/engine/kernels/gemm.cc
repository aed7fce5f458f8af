// Gemm and MatMul on oneDNN matmul.
//
// Transposes are expressed as strides of the plain source descriptors (no
// copy). A constant B (the usual weight) is reordered once into the
// primitive's preferred format. MatMul follows numpy: 1-D operands are
// promoted and the promoted axis removed, batch dims broadcast.
#include <oneapi/dnnl/dnnl.hpp>

#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernel.h"

namespace torq::engine {

namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

// Plain row-major strides for dims, then with the last two axes swapped
// when `trans` (the bytes are [.., N, K] but we view them as [.., K, N]).
dims view_strides(const dims& d, bool trans) {
  dims s(d.size());
  dims stored = d;
  if (trans) std::swap(stored[d.size() - 1], stored[d.size() - 2]);
  dnnl::memory::dim acc = 1;
  for (size_t i = d.size(); i-- > 0;) {
    s[i] = acc;
    acc *= stored[i];
  }
  if (trans) std::swap(s[d.size() - 1], s[d.size() - 2]);
  // Broadcast (size-1) batch axes: stride is irrelevant but must be valid.
  return s;
}

// Runs C = A x B with optional scale on f32 or bf16 data (both plain).
class MatMulCore {
 public:
  // a_dims/b_dims: same rank >= 2; bias_dims: same rank or empty.
  Tensor run(KernelContext& ctx, const Tensor& a, const dims& a_dims, bool trans_a, const Tensor& b,
             const dims& b_dims, bool trans_b, bool b_const, const Tensor* bias, float alpha,
             const Shape& out_shape) {
    TORQ_SUPPORTED(a.dtype() == DType::kF32 || a.dtype() == DType::kBF16,
                   std::string("matrix multiply on ") + dtype_name(a.dtype()) + " is not supported");
    TORQ_CHECK(a.dtype() == b.dtype(), "matrix multiply operands must have the same type");
    auto& env = ctx.dnnl();
    const dt data_t = dnnl_dtype(a.dtype());
    const DType out_dtype =
        a.dtype() == DType::kBF16 && ctx.rounding() == Rounding::kNearestEven ? DType::kBF16 : DType::kF32;
    const size_t r = a_dims.size();
    dims c_dims(r);
    for (size_t i = 0; i + 2 < r; ++i) c_dims[i] = std::max(a_dims[i], b_dims[i]);
    c_dims[r - 2] = a_dims[r - 2];
    c_dims[r - 1] = b_dims[r - 1];
    const dnnl::memory::desc a_md(a_dims, data_t, view_strides(a_dims, trans_a));
    const dnnl::memory::desc b_md(b_dims, data_t, view_strides(b_dims, trans_b));
    const dnnl::memory::desc c_md(c_dims, dnnl_dtype(out_dtype), view_strides(c_dims, false));
    dnnl::memory::desc bias_md;
    if (bias) {
      dims bd(r, 1);
      bd[r - 1] = c_dims[r - 1];
      bias_md = dnnl::memory::desc(bd, dnnl_dtype(bias->dtype()), view_strides(bd, false));
    }
    const bool rebuild = !prim_ || !(a_md == a_md_) || !(b_md == b_md_) || !(c_md == c_md_) ||
                         !(bias_md == bias_md_) || alpha != alpha_;
    if (rebuild) {
      const dnnl::memory::desc b_any = b_const ? dnnl::memory::desc(b_dims, data_t, dnnl::memory::format_tag::any) : b_md;
      auto d = bias ? dnnl::matmul::desc(a_md, b_any, bias_md, c_md) : dnnl::matmul::desc(a_md, b_any, c_md);
      dnnl::primitive_attr attr = user_scratchpad();
      if (alpha != 1.f) attr.set_output_scales(0, {alpha});
      const auto pd = one_at_a_time([&] { return dnnl::matmul::primitive_desc(d, attr, env.engine); });
      prim_.emplace(pd);
      b_packed_md_ = pd.weights_desc();
      a_md_ = a_md;
      b_md_ = b_md;
      c_md_ = c_md;
      bias_md_ = bias_md;
      alpha_ = alpha;
      b_packed_ = Tensor();
    }
    if (!b_packed_.defined() || !b_const) {
      if (b_packed_md_ == b_md) {
        b_packed_ = b;
      } else {
        b_packed_ = Tensor::blocked(b.dtype(), b.shape(), std::make_shared<Layout>(Layout{b_packed_md_}),
                                    b_packed_md_.get_size());
        dnnl::memory src_mem = as_memory(b, b_md, env), dst_mem = as_memory(b_packed_, b_packed_md_, env);
        reorder(env, src_mem, dst_mem);
      }
    }
    Tensor c(out_dtype, out_shape);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, as_memory(a, a_md, env)},
                                               {DNNL_ARG_WEIGHTS, as_memory(b_packed_, b_packed_md_, env)},
                                               {DNNL_ARG_DST, as_memory(c, c_md, env)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, as_memory(*bias, bias_md, env));
    execute(env, *prim_, args);
    return c;
  }

 private:
  std::optional<dnnl::matmul> prim_;
  dnnl::memory::desc a_md_, b_md_, c_md_, bias_md_, b_packed_md_;
  float alpha_ = 1.f;
  Tensor b_packed_;
};

class GemmKernel : public Kernel {
 public:
  explicit GemmKernel(const NodeInfo& n) {
    n.expect_attrs({"alpha", "beta", "transA", "transB", "broadcast"});
    alpha_ = n.attr_float("alpha", 1.f);
    beta_ = n.attr_float("beta", 1.f);
    trans_a_ = n.attr_int("transA", 0) != 0;
    trans_b_ = n.attr_int("transB", 0) != 0;
    // Gemm-6 without broadcast=1 needs C of the exact output shape; the
    // computation is the same either way.
  }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.in(0);
    const Tensor& b = ctx.in(1);
    const Tensor* c = ctx.input(2);
    TORQ_CHECK(a.rank() == 2 && b.rank() == 2, "Gemm inputs must be 2-D");
    const int64_t m = trans_a_ ? a.dim(1) : a.dim(0), k = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t kb = trans_b_ ? b.dim(1) : b.dim(0), n = trans_b_ ? b.dim(0) : b.dim(1);
    TORQ_CHECK(k == kb, "Gemm inner dimensions differ: " + shape_str(a.shape()) + " x " + shape_str(b.shape()));
    if (c && c->numel() > 0) broadcast_shapes(c->shape(), {m, n});  // validates
    // Bias as a oneDNN bias when it is a row vector and beta == 1.
    const bool row_bias = c && beta_ == 1.f && c->dtype() == a.dtype() && c->numel() == n &&
                          (c->rank() == 1 || (c->rank() == 2 && c->dim(0) == 1)) && c->dim(c->rank() - 1) == n;
    Tensor y = core_.run(ctx, a, {m, k}, trans_a_, b, {k, n}, trans_b_, ctx.input_is_constant(1),
                         row_bias ? c : nullptr, alpha_, {m, n});
    if (c && !row_bias && beta_ != 0.f && c->numel() > 0) add_scaled(y, *c, beta_, m, n, ctx.rounding());
    ctx.output(0) = y;
  }

 private:
  static void add_scaled(Tensor& y, const Tensor& c, float beta, int64_t m, int64_t n, Rounding r) {
    Tensor cf = to_f32(c);
    Tensor yf = to_f32(y);
    if (yf.raw() == y.raw()) yf = y;
    const Shape cs = c.shape();
    const int64_t cr = cs.size() == 2 ? cs[0] : 1, cc = cs.empty() ? 1 : cs.back();
    float* yp = yf.data<float>();
    const float* cp = cf.data<float>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        yp[i * n + j] += beta * cp[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)];
    y = y.dtype() == DType::kBF16 ? cast_tensor(yf, DType::kBF16, r) : yf;
  }

  float alpha_, beta_;
  bool trans_a_, trans_b_;
  MatMulCore core_;
};

class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const NodeInfo& n) { n.expect_attrs({}); }
  bool handles_bf16() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.in(0);
    const Tensor& b = ctx.in(1);
    TORQ_CHECK(a.rank() >= 1 && b.rank() >= 1, "MatMul operands must be at least 1-D");
    TORQ_SUPPORTED(a.rank() <= 12 && b.rank() <= 12, "MatMul rank above 12");
    Shape as = a.shape(), bs = b.shape();
    const bool a1 = as.size() == 1, b1 = bs.size() == 1;
    if (a1) as.insert(as.begin(), 1);
    if (b1) bs.push_back(1);
    TORQ_CHECK(as.back() == bs[bs.size() - 2],
               "MatMul inner dimensions differ: " + shape_str(a.shape()) + " x " + shape_str(b.shape()));
    const size_t r = std::max(as.size(), bs.size());
    as.insert(as.begin(), r - as.size(), 1);
    bs.insert(bs.begin(), r - bs.size(), 1);
    Shape out;
    for (size_t i = 0; i + 2 < r; ++i) {
      TORQ_CHECK(as[i] == bs[i] || as[i] == 1 || bs[i] == 1, "MatMul batch dimensions do not broadcast");
      out.push_back(as[i] == 1 ? bs[i] : as[i]);
    }
    out.push_back(as[r - 2]);
    out.push_back(bs[r - 1]);
    Shape final_shape = out;
    if (b1) final_shape.pop_back();
    if (a1) final_shape.erase(final_shape.end() - (b1 ? 1 : 2));
    if (shape_numel(out) == 0 || as.back() == 0) {
      if (ctx.residual()) ctx.decline_fusion();  // the Add runs by itself
      ctx.output(0) = Tensor::zeros(a.dtype() == DType::kBF16 && ctx.rounding() == Rounding::kTruncate ? DType::kF32 : a.dtype(), final_shape);
      return;
    }
    // B shared by every batch (the usual weight): one 2-D product with the
    // batch rows stacked, [batch x M, K] x [K, N]. oneDNN then packs B once
    // in its preferred blocked format, which it does not for 3-D weights, and
    // a batch of 1-row products (vit's [197, 1, 768] x [768, 2304]) becomes
    // one well-shaped product; A and the output are row-major either way.
    // A fused bias Add (bias_fusion.h): oneDNN's bias, or the Add runs by itself.
    const Tensor* bias = fused_bias(ctx, a, b, b1, final_shape, out.back());
    bool b_shared = true;
    for (size_t i = 0; i + 2 < r; ++i) b_shared = b_shared && bs[i] == 1;
    if (b_shared && r > 2) {
      const int64_t rows = shape_numel(out) / out.back();
      const Shape as2{rows, as.back()}, bs2{bs[r - 2], bs[r - 1]}, out2{rows, out.back()};
      Tensor y = core_.run(ctx, a, to_dims(as2), false, b, to_dims(bs2), false, ctx.input_is_constant(1), bias,
                           1.f, out2);
      ctx.output(0) = y.reshaped(final_shape);
      return;
    }
    Tensor y = core_.run(ctx, a, to_dims(as), false, b, to_dims(bs), false, ctx.input_is_constant(1), bias, 1.f, out);
    ctx.output(0) = y.reshaped(final_shape);
  }

 private:
  // The fused Add's constant when it is one fp32 value per output column of
  // an fp32 product and does not widen the output's rank; else declines.
  static const Tensor* fused_bias(KernelContext& ctx, const Tensor& a, const Tensor& b, bool b1, const Shape& final_shape,
                                  int64_t n) {
    const FusedResidual* r = ctx.residual();
    if (!r) return nullptr;
    const Tensor* v = r->value;
    bool ok = !r->relu && !b1 && a.dtype() == DType::kF32 && b.dtype() == DType::kF32 && v && v->defined() &&
              v->dtype() == DType::kF32 && v->is_plain() && v->rank() >= 1 && v->rank() <= static_cast<int64_t>(final_shape.size()) &&
              v->dim(v->rank() - 1) == n && v->numel() == n;
    if (!ok) ctx.decline_fusion();
    return ok ? v : nullptr;
  }

  MatMulCore core_;
};

}  // namespace

void register_gemm_kernels(KernelRegistry& r) {
  r.add("Gemm", 6, 17, make_kernel<GemmKernel>());
  r.add("MatMul", 1, 17, make_kernel<MatMulKernel>());
}

}  // namespace torq::engine
