// Data-movement kernels: Concat (oneDNN for blocked float inputs), Split and
// Slice (strided-layout inputs: movement_strided.h); registers the whole
// movement family (the rest lives in movement_gather.cc, movement_pad.cc and
// movement_transpose.cc). All of them move raw elements, so every dtype
// (bf16 included) passes through unchanged.
#include <algorithm>
#include <cstring>
#include <optional>

#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernels/concat_norm.h"
#include "worker/engine/kernels/movement_strided.h"
#include "worker/engine/kernels/movement_util.h"

namespace torq::engine {

namespace {

// ---------------------------------------------------------------- Concat

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const NodeInfo& n) {
    n.expect_attrs({"axis"});
    if (n.opset() >= 4) TORQ_CHECK(n.has_attr("axis"), "Concat requires the axis attribute");
    axis_ = n.attr_int("axis", 1);
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }
  // Only as the head of Concat -> BatchNormalization -> Relu (concat_norm.h;
  // in bf16 it may decline, and the three run one by one).
  bool fuses_activation() const override { return true; }

  void compute(KernelContext& ctx) override {
    const size_t n = ctx.num_inputs();
    TORQ_CHECK(n >= 1, "Concat needs at least one input");
    TORQ_CHECK(!ctx.fused() || ctx.norm(), "Concat fuses an activation only after a BatchNormalization");
    const Tensor& first = ctx.in(0);
    const int64_t rank = first.rank();
    TORQ_CHECK(rank >= 1, "Concat inputs must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, rank);
    Shape out_shape = first.shape();
    out_shape[static_cast<size_t>(axis)] = 0;
    bool any_blocked = false, all_nonempty = true;
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = ctx.in(i);
      TORQ_CHECK(t.dtype() == first.dtype(), "Concat inputs must share one dtype");
      TORQ_CHECK(t.rank() == rank, "Concat inputs must share one rank");
      for (int64_t k = 0; k < rank; ++k)
        TORQ_CHECK(k == axis || t.dim(k) == first.dim(k),
                   "Concat inputs " + shape_str(first.shape()) + " and " + shape_str(t.shape()) +
                       " differ outside the concat axis");
      out_shape[static_cast<size_t>(axis)] += t.dim(axis);
      any_blocked = any_blocked || !t.is_plain();
      all_nonempty = all_nonempty && t.numel() > 0;
    }
    const bool dnnl_type = first.dtype() == DType::kF32 || first.dtype() == DType::kBF16;
    if (ctx.norm()) {
      std::vector<const Tensor*> ins;
      for (size_t i = 0; i < n; ++i) ins.push_back(&ctx.in(i));
      if (first.dtype() != DType::kBF16) {
        ctx.output(0) = norm_relu_.run(ins, out_shape, *ctx.norm(), ctx.dnnl());
        return;
      }
      // bf16: only where this Concat would write plain (then the unfused
      // BatchNormalization is oneDNN's ncsp one, whose numbers run_bf16 has).
      const bool blocked_out = any_blocked && dnnl_type && all_nonempty &&
                               (common_channel_blocked_tag(ctx, axis) ||
                                (rank <= DNNL_MAX_NDIMS && !dnnl_dst_is_plain(ctx, static_cast<int>(axis), out_shape)));
      Tensor out;
      if (!blocked_out && norm_relu_.run_bf16(ins, out_shape, *ctx.norm(), ctx.rounding(), ctx.dnnl(), &out)) {
        ctx.output(0) = std::move(out);
        return;
      }
      ctx.decline_fusion();
    }
    if (any_blocked && dnnl_type && all_nonempty) {
      if (auto tag = common_channel_blocked_tag(ctx, axis)) {
        concat_channel_blocked(ctx, *tag, out_shape);
        return;
      }
    }
    if (any_blocked && dnnl_type && all_nonempty && rank <= DNNL_MAX_NDIMS) {
      concat_dnnl(ctx, static_cast<int>(axis), out_shape);
      return;
    }
    concat_plain(ctx, axis, out_shape);
  }

 private:
  // Builds (once per input layouts) oneDNN's concat of ctx's inputs; false
  // when oneDNN has none for them.
  bool prepare_dnnl(KernelContext& ctx, int axis) {
    std::vector<dnnl::memory::desc> mds;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) mds.push_back(md_of(ctx.in(i)));
    if (prim_ && mds == cached_mds_) return true;
    std::optional<dnnl::concat::primitive_desc> pd;
    try {
      pd.emplace(one_at_a_time([&] { return dnnl::concat::primitive_desc(axis, mds, ctx.dnnl().engine, user_scratchpad()); }));
    } catch (const dnnl::error&) {
      return false;
    }
    prim_.emplace(*pd);
    dst_md_ = pd->dst_desc();
    cached_mds_ = mds;
    return true;
  }

  // concat_dnnl would write a plain tensor (or, without a oneDNN
  // implementation, concat_plain would).
  bool dnnl_dst_is_plain(KernelContext& ctx, int axis, const Shape& out_shape) {
    return !prepare_dnnl(ctx, axis) || dst_md_ == plain_md(out_shape, ctx.in(0).dtype());
  }

  void concat_dnnl(KernelContext& ctx, int axis, const Shape& out_shape) {
    DnnlEnv& env = ctx.dnnl();
    if (!prepare_dnnl(ctx, axis)) {  // no oneDNN implementation for these layouts
      concat_plain(ctx, axis, out_shape);
      return;
    }
    const std::vector<dnnl::memory::desc>& mds = cached_mds_;
    const DType dt = ctx.in(0).dtype();
    Tensor out = alloc_for_md(dst_md_, dt, out_shape);
    std::unordered_map<int, dnnl::memory> args;
    for (size_t i = 0; i < mds.size(); ++i)
      args.emplace(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), as_memory(ctx.in(i), mds[i], env));
    args.emplace(DNNL_ARG_DST, as_memory(out, dst_md_, env));
    execute(env, *prim_, args);
    ctx.output(0) = out;
  }

  // The channel-blocked tag (nChw16c and relatives) every input is in, with
  // channel counts that fill whole blocks, when concatenating channels.
  static std::optional<dnnl::memory::format_tag> common_channel_blocked_tag(const KernelContext& ctx,
                                                                          int64_t axis) {
    using tag = dnnl::memory::format_tag;
    const Tensor& first = ctx.in(0);
    if (axis != 1) return std::nullopt;
    for (int64_t block : {16, 8}) {
      tag t = tag::undef;
      switch (first.rank()) {
        case 3: t = block == 16 ? tag::nCw16c : tag::nCw8c; break;
        case 4: t = block == 16 ? tag::nChw16c : tag::nChw8c; break;
        case 5: t = block == 16 ? tag::nCdhw16c : tag::nCdhw8c; break;
        default: return std::nullopt;
      }
      bool all = true;
      for (size_t i = 0; i < ctx.num_inputs() && all; ++i) {
        const Tensor& x = ctx.in(i);
        all = !x.is_plain() && x.dim(1) % block == 0 &&
              md_of(x) == dnnl::memory::desc(to_dims(x.shape()), dnnl_dtype(x.dtype()), t);
      }
      if (all) return t;
    }
    return std::nullopt;
  }

  // Channel concat of block-aligned inputs in one channel-blocked format:
  // per batch item each input's bytes are one contiguous run, as in the plain
  // layout, so the plain copy loop applies to the blocked buffers.
  void concat_channel_blocked(KernelContext& ctx, dnnl::memory::format_tag tag, const Shape& out_shape) {
    const DType dt = ctx.in(0).dtype();
    const dnnl::memory::desc md(to_dims(out_shape), dnnl_dtype(dt), tag);
    Tensor out = alloc_for_md(md, dt, out_shape);
    copy_runs(ctx, 1, out_shape, out);
    ctx.output(0) = out;
  }

  void concat_plain(KernelContext& ctx, int64_t axis, const Shape& out_shape) {
    std::vector<Tensor> plain;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) plain.push_back(to_plain(ctx.in(i), ctx.dnnl()));
    Tensor out(ctx.in(0).dtype(), out_shape);
    copy_runs_of(plain, axis, out_shape, out);
    ctx.output(0) = out;
  }

  static void copy_runs(const KernelContext& ctx, int64_t axis, const Shape& out_shape, Tensor& out) {
    std::vector<Tensor> ins;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) ins.push_back(ctx.in(i));
    copy_runs_of(ins, axis, out_shape, out);
  }

  // Copies each input's run of bytes per outer index (the dims before axis)
  // into its place in `out`, whose buffer has the same run structure.
  static void copy_runs_of(const std::vector<Tensor>& ins, int64_t axis, const Shape& out_shape,
                           Tensor& out) {
    const int64_t es = static_cast<int64_t>(dtype_size(out.dtype()));
    int64_t outer = 1, inner = es;
    for (int64_t k = 0; k < axis; ++k) outer *= out_shape[static_cast<size_t>(k)];
    for (size_t k = static_cast<size_t>(axis) + 1; k < out_shape.size(); ++k) inner *= out_shape[k];
    const int64_t out_row = out_shape[static_cast<size_t>(axis)] * inner;
    uint8_t* dst = static_cast<uint8_t*>(out.raw());
    int64_t col = 0;
    for (const Tensor& t : ins) {
      const int64_t chunk = t.dim(axis) * inner;
      const uint8_t* src = static_cast<const uint8_t*>(t.raw());
      if (chunk > 0) {
#pragma omp parallel for schedule(static) if (outer * chunk > (1 << 20))
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(dst + o * out_row + col, src + o * chunk, static_cast<size_t>(chunk));
      }
      col += chunk;
    }
  }

  int64_t axis_;
  ConcatNormRelu norm_relu_;
  std::vector<dnnl::memory::desc> cached_mds_;
  dnnl::memory::desc dst_md_;
  std::optional<dnnl::concat> prim_;
};

// ---------------------------------------------------------------- Split

class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const NodeInfo& n) {
    if (n.opset() < 13) {
      n.expect_attrs({"axis", "split"});
      split_attr_ = n.attr_ints("split");
    } else {
      n.expect_attrs({"axis"});
    }
    axis_ = n.attr_int("axis", 0);
    for (size_t i = 0; i < n.num_outputs(); ++i) wanted_.push_back(n.has_output(i));
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    Tensor x = ctx.in(0);
    TORQ_CHECK(x.rank() >= 1, "Split input must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, x.rank());
    const int64_t dim = x.dim(axis);
    const size_t n_out = ctx.num_outputs();
    TORQ_CHECK(n_out >= 1, "Split needs at least one output");
    std::vector<int64_t> split = split_attr_;
    if (ctx.num_inputs() > 1 && ctx.input(1)) split = optional_ints(ctx, 1);
    if (split.empty()) {
      TORQ_CHECK(dim % static_cast<int64_t>(n_out) == 0,
                 "Split: axis of size " + std::to_string(dim) + " does not split into " +
                     std::to_string(n_out) + " equal parts");
      split.assign(n_out, dim / static_cast<int64_t>(n_out));
    }
    TORQ_CHECK(split.size() == n_out, "Split: split has " + std::to_string(split.size()) +
                                          " entries for " + std::to_string(n_out) + " outputs");
    int64_t total = 0;
    for (int64_t s : split) {
      TORQ_CHECK(s >= 0, "Split: negative split size");
      total += s;
    }
    TORQ_CHECK(total == dim, "Split: split sizes do not sum to the axis size");

    if (!x.is_plain() && split_strided(ctx, x, axis, split)) return;
    if (!x.is_plain()) x = to_plain(x, ctx.dnnl());
    // Each output: one run of split[i] * inner elements per outer index.
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= x.dim(k);
    for (int64_t k = axis + 1; k < x.rank(); ++k) inner *= x.dim(k);
    std::vector<std::vector<int64_t>> rows(2);
    for (int64_t o = 0; o < outer; ++o) rows[0].push_back(o * dim * inner);
    int64_t col = 0;
    for (size_t i = 0; i < n_out; ++i) {
      if (i < wanted_.size() && wanted_[i]) {
        Shape s = x.shape();
        s[static_cast<size_t>(axis)] = split[i];
        Tensor out(x.dtype(), s);
        rows[1] = {col * inner};
        copy_offset_runs(x.raw(), out.raw(), dtype_size(x.dtype()), rows, split[i] * inner);
        ctx.output(i) = out;
      }
      col += split[i];
    }
  }

 private:
  // Every wanted output as a slice of a strided-layout x (movement_strided.h);
  // false, with no output set, when that layout is not covered.
  bool split_strided(KernelContext& ctx, const Tensor& x, int64_t axis, const std::vector<int64_t>& split) {
    std::vector<Tensor> outs(split.size());
    std::vector<int64_t> first(static_cast<size_t>(x.rank()), 0), step(first.size(), 1);
    for (size_t i = 0; i < split.size(); ++i) {
      if (i < wanted_.size() && wanted_[i]) {
        Shape s = x.shape();
        s[static_cast<size_t>(axis)] = split[i];
        auto v = strided_slice(x, first, step, s, ctx.dnnl());
        if (!v) return false;
        outs[i] = *v;
      }
      first[static_cast<size_t>(axis)] += split[i];
    }
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i].defined()) ctx.output(i) = outs[i];
    return true;
  }

  int64_t axis_;
  std::vector<int64_t> split_attr_;
  std::vector<bool> wanted_;
};

// ---------------------------------------------------------------- Slice

class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const NodeInfo& n) : opset_(n.opset()) {
    if (opset_ < 10) {
      n.expect_attrs({"starts", "ends", "axes"});
      TORQ_CHECK(n.has_attr("starts") && n.has_attr("ends"), "Slice requires starts and ends");
      starts_ = n.attr_ints("starts");
      ends_ = n.attr_ints("ends");
      axes_ = n.attr_ints("axes");
    } else {
      n.expect_attrs({});
    }
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    Tensor x = ctx.in(0);
    const int64_t rank = x.rank();
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (opset_ >= 10) {
      starts = optional_ints(ctx, 1);
      ends = optional_ints(ctx, 2);
      TORQ_CHECK(ctx.input(1) && ctx.input(2), "Slice requires starts and ends inputs");
      axes = optional_ints(ctx, 3);
      steps = optional_ints(ctx, 4);
    }
    TORQ_CHECK(starts.size() == ends.size(), "Slice: starts and ends differ in length");
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    TORQ_CHECK(axes.size() == starts.size() && steps.size() == starts.size(),
               "Slice: starts, ends, axes and steps differ in length");

    std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
    Shape out_shape = x.shape();
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t i = 0; i < starts.size(); ++i) {
      const size_t a = static_cast<size_t>(normalize_axis(axes[i], rank));
      TORQ_CHECK(!seen[a], "Slice: repeated axis");
      seen[a] = true;
      const int64_t dim = x.shape()[a], st = steps[i];
      TORQ_CHECK(st != 0, "Slice: step must not be 0");
      int64_t s = starts[i], e = ends[i];
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      int64_t len = 0;
      if (dim == 0) {
        s = 0;
      } else if (st > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        len = e > s ? (e - s - 1) / st + 1 : 0;
      } else {
        const int64_t neg = st == std::numeric_limits<int64_t>::min()
                                ? std::numeric_limits<int64_t>::max() : -st;
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        len = s > e ? (s - e - 1) / neg + 1 : 0;
      }
      first[a] = s;
      step[a] = st;
      out_shape[a] = len;
    }
    if (!x.is_plain()) {
      if (auto v = strided_slice(x, first, step, out_shape, ctx.dnnl())) {
        ctx.output(0) = *v;
        return;
      }
      x = to_plain(x, ctx.dnnl());
    }
    const auto strides = strides_of(x.shape());
    Tensor out(x.dtype(), out_shape);
    // Axes after the last one sliced are copied whole: with a step of 1
    // there, they merge into it, and the copy is one contiguous run per
    // index of the axes before (a channel split copies whole planes).
    size_t kept = static_cast<size_t>(rank);
    while (kept > 1 && out_shape[kept - 1] == x.shape()[kept - 1] && step[kept - 1] == 1 && first[kept - 1] == 0)
      --kept;
    if (kept > 0 && step[kept - 1] == 1) {
      std::vector<std::vector<int64_t>> outer(kept);
      for (size_t a = 0; a + 1 < kept; ++a)
        for (int64_t i = 0; i < out_shape[a]; ++i) outer[a].push_back((first[a] + i * step[a]) * strides[a]);
      outer[kept - 1] = {first[kept - 1] * strides[kept - 1]};
      copy_offset_runs(x.raw(), out.raw(), dtype_size(x.dtype()), outer, out_shape[kept - 1] * strides[kept - 1]);
      ctx.output(0) = out;
      return;
    }
    // A step other than 1 on the innermost axis kept: element by element.
    std::vector<std::vector<int64_t>> off(static_cast<size_t>(rank));
    for (size_t a = 0; a < off.size(); ++a)
      for (int64_t i = 0; i < out_shape[a]; ++i) off[a].push_back((first[a] + i * step[a]) * strides[a]);
    gather_axis_offsets(x.raw(), out.raw(), dtype_size(x.dtype()), off);
    ctx.output(0) = out;
  }

 private:
  int opset_;
  std::vector<int64_t> starts_, ends_, axes_;
};

}  // namespace

void register_movement_kernels(KernelRegistry& r) {
  r.add("Concat", 1, 17, make_kernel<ConcatKernel>());
  r.add("Split", 2, 17, make_kernel<SplitKernel>());
  r.add("Slice", 1, 17, make_kernel<SliceKernel>());
  register_movement_gather_kernels(r);
  register_movement_transpose_kernels(r);
  register_movement_pad_kernels(r);
}

}  // namespace torq::engine
