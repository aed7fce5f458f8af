// Conv and ConvTranspose on oneDNN (1-D, 2-D, 3-D; groups; dilations).
//
// The source and destination formats are left to oneDNN ("any"), so
// consecutive convolutions stay in a blocked layout (nChw16c on AVX-512)
// without reorders. Constant weights are reordered into the primitive's
// format once, on the first run, and kept. A Conv applies the activation the
// session fused into it (KernelContext::fused()) as a oneDNN post-op, and
// a fused Add (+ Relu) (KernelContext::residual()) in one pass over its output.
#include <oneapi/dnnl/dnnl.hpp>

#include <type_traits>

#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernels/conv_common.h"
#include "worker/engine/kernels/vec_sigmoid.h"

namespace torq::engine {

namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

// Row-major strides for dims given in memory order `order` (a permutation
// of logical axes, outermost first).
dims strides_for(const dims& d, const std::vector<int>& order) {
  dims s(d.size());
  dnnl::memory::dim acc = 1;
  for (size_t k = order.size(); k-- > 0;) {
    s[static_cast<size_t>(order[k])] = acc;
    acc *= d[static_cast<size_t>(order[k])];
  }
  return s;
}

class ConvBase : public Kernel {
 public:
  ConvBase(const NodeInfo& n, bool transpose) : transpose_(transpose), attrs_(ConvAttrs::parse(n, transpose)) {}
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }
  bool fuses_activation() const override { return !transpose_; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    const Tensor& w = ctx.in(1);
    const Tensor* b = ctx.input(2);
    TORQ_SUPPORTED(x.dtype() == DType::kF32 || x.dtype() == DType::kBF16,
                   std::string("Conv on ") + dtype_name(x.dtype()) + " is not supported");
    TORQ_CHECK(x.rank() >= 3 && x.rank() <= 5, "Conv input must be 3-D to 5-D, got " + shape_str(x.shape()));
    TORQ_SUPPORTED(x.rank() <= 5, "Conv with more than 3 spatial dims");
    TORQ_CHECK(w.rank() == x.rank(), "Conv weight rank must match the input rank");
    TORQ_CHECK(w.is_plain() && (!b || b->is_plain()), "Conv weights must be plain");
    const bool rebuild = !prim_ || x.shape() != in_shape_ || !(md_of(x) == in_md_) || w.shape() != w_shape_ ||
                         (b != nullptr) != has_bias_ || x.dtype() != in_dtype_ || ctx.rounding() != rounding_ ||
                         !same_act(ctx.fused());
    if (rebuild) build(ctx, x, w, b);
    const FusedResidual* res = ctx.residual();
    if (res && !residual_fits(*res, x)) {
      ctx.decline_fusion();
      res = nullptr;
    }
    // Weights: packed once when constant.
    if (!w_packed_.defined() || !ctx.input_is_constant(1)) w_packed_ = w_reorder_(w, w_desc_, w.dtype(), ctx.dnnl());
    Tensor src = src_reorder_(x, pd_src_, x.dtype(), ctx.dnnl());
    Tensor dst = alloc_for_md(pd_dst_, out_dtype_, out_shape_);
    auto& env = ctx.dnnl();
    // The memory objects of the first run, pointed at this run's buffers
    // (creating them cost ~0.3 us each; both zero a blocked layout's padding).
    const auto point = [&](int arg, const Tensor& t) { args_.at(arg).set_data_handle(const_cast<void*>(t.raw())); };
    point(DNNL_ARG_SRC, src);
    point(DNNL_ARG_WEIGHTS, w_packed_);
    point(DNNL_ARG_DST, dst);
    if (b) point(DNNL_ARG_BIAS, *b);
    execute(env, *prim_, args_);
    if (own_swish_) vm::swish_f32(static_cast<float*>(dst.raw()), shape_numel(out_shape_));
    if (res) add_residual(*res, dst, env);
    ctx.output(0) = dst;
  }

 private:
  void build(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b) {
    const size_t sp = static_cast<size_t>(x.rank() - 2);
    ConvAttrs a = attrs_;
    a.complete(sp, std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()));
    const int64_t n = x.dim(0), c = x.dim(1), g = a.group;
    std::vector<int64_t> in_sp(x.shape().begin() + 2, x.shape().end()), out_sp, pl, pr;
    int64_t oc;
    if (!transpose_) {
      TORQ_CHECK(c == w.dim(1) * g, "Conv input channels " + std::to_string(c) + " != weight " +
                                        std::to_string(w.dim(1)) + " x group " + std::to_string(g));
      TORQ_CHECK(w.dim(0) % g == 0, "Conv output channels not divisible by group");
      oc = w.dim(0);
      conv_forward_geometry(a, in_sp, &out_sp, &pl, &pr);
    } else {
      TORQ_CHECK(c == w.dim(0), "ConvTranspose input channels must match weight dim 0");
      TORQ_CHECK(c % g == 0, "ConvTranspose input channels not divisible by group");
      oc = w.dim(1) * g;
      transpose_geometry(a, in_sp, &out_sp, &pl, &pr);
    }
    if (b) TORQ_CHECK(b->numel() == oc && b->rank() == 1, "bias must have shape [" + std::to_string(oc) + "]");
    out_shape_ = {n, oc};
    out_shape_.insert(out_shape_.end(), out_sp.begin(), out_sp.end());

    const dt data_t = x.dtype() == DType::kBF16 ? dt::bf16 : dt::f32;
    out_dtype_ = x.dtype() == DType::kBF16 && ctx.rounding() == Rounding::kNearestEven ? DType::kBF16 : DType::kF32;
    const dt dst_t = out_dtype_ == DType::kBF16 ? dt::bf16 : dt::f32;
    const dims src_dims = to_dims(x.shape()), dst_dims = to_dims(out_shape_);
    // Weight dims in oneDNN order: [g,] o, i, spatial.
    dims wd;
    std::vector<int> order;  // memory order of the ONNX weight bytes
    const int64_t cin_g = c / g, cout_g = oc / g;
    if (g > 1) wd = {g, cout_g, cin_g};
    else wd = {oc, c};
    for (size_t i = 0; i < sp; ++i) wd.push_back(w.dim(static_cast<int64_t>(i) + 2));
    const int off = g > 1 ? 1 : 0;
    if (g > 1) order.push_back(0);
    if (!transpose_) {  // ONNX Conv W: [O, I/g, k]: g-major, then o, then i
      order.push_back(off + 0);
      order.push_back(off + 1);
    } else {  // ONNX ConvTranspose W: [I, O/g, k] = [g, I/g, O/g, k]: i before o
      order.push_back(off + 1);
      order.push_back(off + 0);
    }
    for (size_t i = 0; i < sp; ++i) order.push_back(off + 2 + static_cast<int>(i));
    w_plain_md_ = dnnl::memory::desc(wd, dnnl_dtype(w.dtype()), strides_for(wd, order));
    const dnnl::memory::desc src_any(src_dims, data_t, dnnl::memory::format_tag::any);
    const dnnl::memory::desc w_any(wd, data_t, dnnl::memory::format_tag::any);
    const dnnl::memory::desc dst_any(dst_dims, dst_t, dnnl::memory::format_tag::any);
    dnnl::memory::desc bias_md;
    if (b) bias_md = plain_md(b->shape(), b->dtype());
    dims strides(a.strides.begin(), a.strides.end()), dil, padl(pl.begin(), pl.end()), padr(pr.begin(), pr.end());
    for (int64_t d : a.dilations) dil.push_back(d - 1);
    auto& env = ctx.dnnl();
    if (!transpose_) {
      const auto make_pd = [&](const FusedActivation* act) {
        auto d = b ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                     dnnl::algorithm::convolution_direct, src_any, w_any, bias_md,
                                                     dst_any, strides, dil, padl, padr)
                   : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                     dnnl::algorithm::convolution_direct, src_any, w_any, dst_any,
                                                     strides, dil, padl, padr);
        auto pd = one_at_a_time([&] { return dnnl::convolution_forward::primitive_desc(d, post_ops(act), env.engine); });
        // An input already blocked by the op before: keep its layout (in and
        // out) when the implementation oneDNN picks for its own layouts takes
        // it, so consecutive convolutions do not reorder between each other.
        if (const auto tag = same_layout_tag(x)) {
          const dnnl::memory::desc dst_same(dst_dims, dst_t, *tag);
          const dnnl::memory::desc src_same = nn_src_md(x, data_t);
          auto ds = b ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                        dnnl::algorithm::convolution_direct, src_same, w_any, bias_md,
                                                        dst_same, strides, dil, padl, padr)
                      : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                        dnnl::algorithm::convolution_direct, src_same, w_any, dst_same,
                                                        strides, dil, padl, padr);
          try {
            const auto same =
                one_at_a_time([&] { return dnnl::convolution_forward::primitive_desc(ds, post_ops(act), env.engine); });
            if (same.impl_info_str() == pd.impl_info_str()) pd = same;
          } catch (const dnnl::error&) {
          }
        }
        return pd;
      };
      // A fused Swish in fp32 runs as the engine's own vector pass over the
      // output (vec_sigmoid.h, the numbers of its Sigmoid kernel and a Mul)
      // when the output has no padding; else as oneDNN's post-op.
      const FusedActivation* act = ctx.fused();
      own_swish_ = act && act->kind == ActKind::kSwish && dst_t == dt::f32 && vm::fast_sigmoid();
      auto pd = make_pd(own_swish_ ? nullptr : act);
      if (own_swish_ && pd.dst_desc().get_size() != static_cast<size_t>(shape_numel(out_shape_)) * sizeof(float)) {
        own_swish_ = false;
        pd = make_pd(act);
      }
      pd_src_ = pd.src_desc();
      pd_dst_ = pd.dst_desc();
      w_desc_ = pd.weights_desc();
      prim_.emplace(dnnl::convolution_forward(pd));
    } else {
      auto d = b ? dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                                     src_any, w_any, bias_md, dst_any, strides, dil, padl, padr)
                 : dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                                     src_any, w_any, dst_any, strides, dil, padl, padr);
      const auto pd =
          one_at_a_time([&] { return dnnl::deconvolution_forward::primitive_desc(d, user_scratchpad(), env.engine); });
      own_swish_ = false;
      pd_src_ = pd.src_desc();
      pd_dst_ = pd.dst_desc();
      w_desc_ = pd.weights_desc();
      prim_.emplace(dnnl::primitive(pd));
    }
    args_.clear();
    for (const auto& [arg, md] : {std::pair{DNNL_ARG_SRC, pd_src_}, {DNNL_ARG_WEIGHTS, w_desc_}, {DNNL_ARG_DST, pd_dst_}})
      args_.emplace(arg, dnnl::memory(md, env.engine, DNNL_MEMORY_NONE));
    if (b) args_.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_md, env.engine, DNNL_MEMORY_NONE));
    // The weight tensor is reinterpreted with the grouped/ordered md.
    w_reorder_ = WeightReorder{w_plain_md_};
    w_packed_ = Tensor();
    in_shape_ = x.shape();
    in_md_ = md_of(x);
    in_dtype_ = x.dtype();
    w_shape_ = w.shape();
    has_bias_ = b != nullptr;
    rounding_ = ctx.rounding();
    act_ = ctx.fused() ? std::optional<FusedActivation>(*ctx.fused()) : std::nullopt;
  }

  // The format tag of a blocked 4-D input oneDNN convolutions also write
  // (nhwc, nChw16c), if it is one.
  static std::optional<dnnl::memory::format_tag> same_layout_tag(const Tensor& x) {
    if (x.is_plain() || x.rank() != 4) return std::nullopt;
    const dnnl::memory::desc md = md_of(x);
    for (auto tag : {dnnl::memory::format_tag::acdb, dnnl::memory::format_tag::aBcd16b})
      if (md == dnnl::memory::desc(md.dims(), md.data_type(), tag)) return tag;
    return std::nullopt;
  }
  // x's descriptor in the type the convolution reads.
  static dnnl::memory::desc nn_src_md(const Tensor& x, dt data_t) {
    dnnl::memory::desc md = md_of(x);
    md.data.data_type = static_cast<dnnl_data_type_t>(data_t);
    return md;
  }

  // A fused Add applies to an fp32 value of the fp32 output's shape (the
  // Add broadcasts otherwise, or computes in another type).
  bool residual_fits(const FusedResidual& r, const Tensor& x) const {
    return !transpose_ && x.dtype() == DType::kF32 && out_dtype_ == DType::kF32 && r.value && r.value->defined() &&
           r.value->dtype() == DType::kF32 && r.value->shape() == out_shape_;
  }

  // dst = dst + r (or r + dst, the Add's operand order), then Relu, element
  // by element in dst's layout: the numbers of the Add and Relu kernels.
  void add_residual(const FusedResidual& res, Tensor& dst, DnnlEnv& env) {
    const Tensor r = res_reorder_(*res.value, pd_dst_, DType::kF32, env);
    const float* rp = static_cast<const float*>(r.raw());
    float* d = static_cast<float*>(dst.raw());
    const int64_t n = static_cast<int64_t>(pd_dst_.get_size() / sizeof(float));
    const auto run = [&](auto first, auto relu) {
#pragma omp parallel for if (n > 32768) schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        const float s = first ? rp[i] + d[i] : d[i] + rp[i];
        d[i] = relu && s < 0.f ? 0.f : s;
      }
    };
    using T = std::true_type;
    using F = std::false_type;
    if (res.value_first) res.relu ? run(T{}, T{}) : run(T{}, F{});
    else res.relu ? run(F{}, T{}) : run(F{}, F{});
  }

  bool same_act(const FusedActivation* a) const { return a ? act_ && *act_ == *a : !act_; }

  // The fused activation as a oneDNN eltwise post-op (the same jit code as
  // the eltwise primitive the unfused node runs on).
  static dnnl::primitive_attr post_ops(const FusedActivation* a) {
    dnnl::primitive_attr attr = user_scratchpad();
    if (!a) return attr;
    dnnl::post_ops ops;
    switch (a->kind) {
      case ActKind::kRelu: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f); break;
      case ActKind::kClip: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip_v2, a->lo, a->hi); break;
      case ActKind::kHardSwish: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_hardswish, 0.f, 0.f); break;
      case ActKind::kSwish: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_swish, 1.f, 0.f); break;
      case ActKind::kHardSigmoid:  // the two steps of the unfused kernel (unary.cc)
        ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, a->alpha, a->beta);
        ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, 0.f, 1.f);
        break;
      case ActKind::kGelu: TORQ_CHECK(false, "a GELU chain is headed by a Div, not a Conv"); break;
    }
    attr.set_post_ops(ops);
    return attr;
  }

  static void transpose_geometry(const ConvAttrs& a, const std::vector<int64_t>& in, std::vector<int64_t>* out,
                                 std::vector<int64_t>* pl, std::vector<int64_t>* pr) {
    const size_t s = in.size();
    out->resize(s);
    pl->resize(s);
    pr->resize(s);
    TORQ_CHECK(a.output_shape.empty() || a.output_shape.size() == s || a.output_shape.size() == s + 2,
               "output_shape rank does not match the input");
    for (size_t i = 0; i < s; ++i) {
      const int64_t ek = (a.kernel[i] - 1) * a.dilations[i] + 1;
      const int64_t full = a.strides[i] * (in[i] - 1) + a.output_padding[i] + ek;
      int64_t b = a.pads[i], e = a.pads[i + s];
      int64_t target = -1;
      if (!a.output_shape.empty()) target = a.output_shape[a.output_shape.size() - s + i];
      else if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") target = in[i] * a.strides[i];
      if (a.auto_pad == "VALID" && a.output_shape.empty()) b = e = 0;
      if (target >= 0) {
        const int64_t total = full - target;
        TORQ_SUPPORTED(total >= 0, "ConvTranspose output_shape larger than the full output");
        if (a.auto_pad == "SAME_UPPER") {
          b = total / 2;
          e = total - total / 2;
        } else {
          b = total - total / 2;
          e = total / 2;
        }
      }
      (*out)[i] = full - b - e;
      (*pl)[i] = b;
      // oneDNN's right padding already accounts for output_padding.
      (*pr)[i] = e - a.output_padding[i];
      TORQ_CHECK((*out)[i] > 0, "ConvTranspose output size is not positive");
      TORQ_SUPPORTED((*pr)[i] >= 0, "ConvTranspose output_padding larger than the end padding");
    }
  }

  // Reorders ONNX weight bytes (viewed through `md`) into the primitive format.
  struct WeightReorder {
    dnnl::memory::desc md;
    Tensor operator()(const Tensor& w, const dnnl::memory::desc& dst, DType dtype, DnnlEnv& env) {
      Tensor out = Tensor::blocked(dtype, w.shape(), std::make_shared<Layout>(Layout{dst}), dst.get_size());
      dnnl::memory src_mem = as_memory(w, md, env), dst_mem = as_memory(out, dst, env);
      reorder(env, src_mem, dst_mem);
      return out;
    }
  };

  bool transpose_;
  ConvAttrs attrs_;
  std::optional<dnnl::primitive> prim_;
  std::unordered_map<int, dnnl::memory> args_;  // prim_'s arguments, pointed at each run's buffers
  dnnl::memory::desc pd_src_, pd_dst_, w_desc_, w_plain_md_, in_md_;
  WeightReorder w_reorder_;
  CachedReorder src_reorder_, res_reorder_;
  Tensor w_packed_;
  Shape in_shape_, w_shape_, out_shape_;
  DType in_dtype_ = DType::kUndefined, out_dtype_ = DType::kF32;
  Rounding rounding_ = Rounding::kNearestEven;
  bool has_bias_ = false;
  bool own_swish_ = false;  // the fused Swish runs as vm::swish_f32 after the primitive
  std::optional<FusedActivation> act_;
};

class ConvKernel : public ConvBase {
 public:
  explicit ConvKernel(const NodeInfo& n) : ConvBase(n, false) {}
};
class ConvTransposeKernel : public ConvBase {
 public:
  explicit ConvTransposeKernel(const NodeInfo& n) : ConvBase(n, true) {}
};

}  // namespace

void register_conv_kernels(KernelRegistry& r) {
  r.add("Conv", 1, 17, make_kernel<ConvKernel>());
  r.add("ConvTranspose", 1, 17, make_kernel<ConvTransposeKernel>());
}

}  // namespace torq::engine
