// Pooling kernels: MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool
// over 1-D, 2-D and 3-D spatial dims. Float pooling runs on oneDNN
// (pooling_v2, which handles dilations) directly on the producer's memory
// layout (blocked nChw16c-like or plain) and natively in bf16; the plain
// reference in pool_impl.cc covers what oneDNN cannot do exactly. A small
// f32 GlobalAveragePool runs the same sums in a loop (pool_global.cc).
#include <algorithm>
#include <optional>
#include <string>

#include "worker/engine/kernels/nn_impl.h"

namespace torq::engine {

namespace {

using nn::AutoPad;
using nn::PoolGeom;
using nn::PoolKind;
using nn::PoolSpec;

AutoPad parse_auto_pad(const NodeInfo& n) {
  const std::string s = n.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::kNotSet;
  if (s == "VALID") return AutoPad::kValid;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  throw_invalid("unknown auto_pad '" + s + "'");
}

// Rejects an attribute the node's opset does not define.
void require_opset(const NodeInfo& n, const char* attr, int since) {
  TORQ_SUPPORTED(!n.has_attr(attr) || n.opset() >= since,
                 std::string("attribute '") + attr + "' needs opset >= " + std::to_string(since));
}

PoolSpec parse_spec(const NodeInfo& n, PoolKind kind, bool global) {
  PoolSpec s;
  s.kind = kind;
  s.global = global;
  if (global) {
    n.expect_attrs({});
    return s;
  }
  if (kind == PoolKind::kMax) {
    n.expect_attrs({"auto_pad", "kernel_shape", "pads", "strides", "storage_order", "ceil_mode",
                    "dilations"});
    require_opset(n, "storage_order", 8);
    require_opset(n, "ceil_mode", 10);
    require_opset(n, "dilations", 10);
  } else {
    n.expect_attrs({"auto_pad", "kernel_shape", "pads", "strides", "count_include_pad",
                    "ceil_mode"});
    require_opset(n, "count_include_pad", 7);
    require_opset(n, "ceil_mode", 10);
  }
  TORQ_CHECK(n.has_attr("kernel_shape"), "kernel_shape is required");
  s.kernel = n.attr_ints("kernel_shape");
  TORQ_CHECK(!s.kernel.empty(), "kernel_shape must not be empty");
  s.strides = n.attr_ints("strides");
  s.pads = n.attr_ints("pads");
  s.dilations = n.attr_ints("dilations");
  s.auto_pad = parse_auto_pad(n);
  s.ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  s.count_include_pad = n.attr_int("count_include_pad", 0) != 0;
  s.storage_order = n.attr_int("storage_order", 0);
  TORQ_CHECK(s.storage_order == 0 || s.storage_order == 1, "storage_order must be 0 or 1");
  const size_t sp = s.kernel.size();
  TORQ_CHECK(s.strides.empty() || s.strides.size() == sp, "strides must match kernel_shape");
  TORQ_CHECK(s.dilations.empty() || s.dilations.size() == sp,
             "dilations must match kernel_shape");
  TORQ_CHECK(s.pads.empty() || s.pads.size() == 2 * sp, "pads must have 2 values per axis");
  return s;
}

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const NodeInfo& n, PoolKind kind, bool global)
      : spec_(parse_spec(n, kind, global)) {
    want_indices_ = n.has_output(1);
    TORQ_SUPPORTED(!want_indices_ || (kind == PoolKind::kMax && !global && n.opset() >= 8),
                   "this pooling op has a single output");
  }

  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    if (!plan_ || !nn::same_input(plan_->key, x) || plan_->rounding != ctx.rounding())
      plan_ = make_plan(x, ctx);
    if (plan_->dnnl) {
      run_dnnl(x, ctx);
    } else {
      run_reference(x, ctx);
    }
  }

 private:
  struct Plan {
    nn::InputKey key;
    Rounding rounding;
    PoolGeom geom;
    bool dnnl = false;
    DType compute = DType::kF32;
    dnnl::memory::desc src_md, dst_md;
    dnnl::pooling_v2_forward prim;
  };

  Plan make_plan(const Tensor& x, KernelContext& ctx) const {
    Plan p;
    p.key = nn::input_key(x);
    p.rounding = ctx.rounding();
    p.geom = nn::pool_geometry(spec_, x.shape());
    const PoolGeom& g = p.geom;
    const size_t nsp = g.in.size();
    const bool float_in = x.dtype() == DType::kF32 || x.dtype() == DType::kBF16;
    const bool include_pad = spec_.kind == PoolKind::kAvg && spec_.count_include_pad;
    if (!float_in || nsp < 1 || nsp > 3 || want_indices_ || (include_pad && g.window_past_pads))
      return p;
    try {
      p.compute = nn::compute_dtype(x.dtype(), ctx.rounding());
      p.src_md = nn::md_with_dtype(md_of(x), dnnl_dtype(p.compute));
      const dnnl::memory::desc dst_any(to_dims(g.out_shape), dnnl_dtype(p.compute),
                                       dnnl::memory::format_tag::any);
      dnnl::memory::dims strides, kernel, dilation, pad_l, pad_r;
      for (size_t i = 0; i < nsp; ++i) {
        const int64_t eff = (g.k[i] - 1) * g.d[i] + 1;
        strides.push_back(g.s[i]);
        kernel.push_back(g.k[i]);
        dilation.push_back(g.d[i] - 1);
        pad_l.push_back(g.pb[i]);
        // The right padding that yields exactly g.out[i] windows (oneDNN
        // floors); past the ONNX end padding only in ceil_mode, where
        // the extra region counts as padding just as in ONNX.
        pad_r.push_back(std::max<int64_t>(0, (g.out[i] - 1) * g.s[i] + eff - g.in[i] - g.pb[i]));
      }
      const auto alg = spec_.kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                       : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                     : dnnl::algorithm::pooling_avg_exclude_padding;
      const dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, p.src_md,
                                             dst_any, strides, kernel, dilation, pad_l, pad_r);
      const auto pd = one_at_a_time(
          [&] { return dnnl::pooling_v2_forward::primitive_desc(d, user_scratchpad(), ctx.dnnl().engine); });
      p.dst_md = pd.dst_desc();
      p.prim = dnnl::pooling_v2_forward(pd);
      p.dnnl = true;
    } catch (const dnnl::error&) {
      p.dnnl = false;  // the reference computes the same result
    }
    return p;
  }

  void run_dnnl(const Tensor& x, KernelContext& ctx) {
    DnnlEnv& env = ctx.dnnl();
    const Tensor src = nn::convert_keep_layout(x, plan_->compute, to_compute_, env);
    Tensor y;
    if (spec_.global && spec_.kind == PoolKind::kAvg && plan_->compute == DType::kF32 &&
        nn::global_avg_small(src, plan_->src_md, plan_->dst_md, plan_->geom.out_shape, &y)) {
      ctx.output(0) = std::move(y);
      return;
    }
    y = alloc_for_md(plan_->dst_md, plan_->compute, plan_->geom.out_shape);
    execute(env, plan_->prim, {{DNNL_ARG_SRC, as_memory(src, plan_->src_md, env)},
                               {DNNL_ARG_DST, as_memory(y, plan_->dst_md, env)}});
    ctx.output(0) = std::move(y);
  }

  void run_reference(const Tensor& x, KernelContext& ctx) {
    Tensor xp = to_plain(x, ctx.dnnl());
    if (xp.dtype() == DType::kBF16) xp = to_f32(xp);
    Tensor y, indices;
    nn::pool_reference(spec_, plan_->geom, xp, y, want_indices_ ? &indices : nullptr);
    ctx.output(0) = std::move(y);
    if (want_indices_) ctx.output(1) = std::move(indices);
  }

  PoolSpec spec_;
  bool want_indices_ = false;
  std::optional<Plan> plan_;
  CachedReorder to_compute_;
};

KernelFactory pool_factory(PoolKind kind, bool global) {
  return [kind, global](const NodeInfo& n) -> std::unique_ptr<Kernel> {
    return std::make_unique<PoolKernel>(n, kind, global);
  };
}

}  // namespace

void register_pool_kernels(KernelRegistry& r) {
  // Opsets 1..17 share one semantics; attributes newer than the node's
  // opset are rejected when parsed.
  r.add("MaxPool", 1, 17, pool_factory(PoolKind::kMax, false));
  r.add("AveragePool", 1, 17, pool_factory(PoolKind::kAvg, false));
  r.add("GlobalMaxPool", 1, 17, pool_factory(PoolKind::kMax, true));
  r.add("GlobalAveragePool", 1, 17, pool_factory(PoolKind::kAvg, true));
}

}  // namespace torq::engine
