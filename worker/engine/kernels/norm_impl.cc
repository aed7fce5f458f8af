// InstanceNormalization (plain C++, statistics in double) and
// LayerNormalization (oneDNN layer_normalization for f32, plain C++ in
// double otherwise), with LayerNormalization's optional Mean and InvStdDev
// outputs. Registered from norm.cc.
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "worker/engine/kernels/nn_impl.h"

namespace torq::engine {

namespace {

// ------------------------------------------------------- InstanceNormalization

class InstanceNormKernel final : public Kernel {
 public:
  explicit InstanceNormKernel(const NodeInfo& n) {
    n.expect_attrs({"epsilon"});
    TORQ_CHECK(n.num_inputs() == 3, "InstanceNormalization needs 3 inputs");
    epsilon_ = static_cast<double>(n.attr_float("epsilon", 1e-5f));
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    TORQ_SUPPORTED(x.dtype() == DType::kF32 || x.dtype() == DType::kF64,
                   std::string("InstanceNormalization of ") + dtype_name(x.dtype()) +
                       " is not supported");
    TORQ_CHECK(x.rank() >= 2, "InstanceNormalization input must have rank >= 2");
    const int64_t n = x.dim(0), c = x.dim(1), inner = n * c != 0 ? x.numel() / (n * c) : 0;
    const auto scale = nn::channel_params(ctx.in(1), c, "scale", ctx.dnnl());
    const auto bias = nn::channel_params(ctx.in(2), c, "B", ctx.dnnl());
    Tensor y(x.dtype(), x.shape());
    auto run = [&](auto* dst, const auto* src) {
      using T = std::remove_pointer_t<decltype(dst)>;
#pragma omp parallel for schedule(static) if (n * c > 1)
      for (int64_t p = 0; p < n * c; ++p) {
        const size_t ch = static_cast<size_t>(p % c);
        const auto* xs = src + p * inner;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < inner; ++i) mean += static_cast<double>(xs[i]);
        mean /= static_cast<double>(inner);
        for (int64_t i = 0; i < inner; ++i) {
          const double d = static_cast<double>(xs[i]) - mean;
          var += d * d;
        }
        var /= static_cast<double>(inner);
        const double a = scale[ch] / std::sqrt(var + epsilon_);
        for (int64_t i = 0; i < inner; ++i)
          dst[p * inner + i] = static_cast<T>((static_cast<double>(xs[i]) - mean) * a + bias[ch]);
      }
    };
    if (x.dtype() == DType::kF32) {
      run(y.data<float>(), x.data<float>());
    } else {
      run(y.data<double>(), x.data<double>());
    }
    ctx.output(0) = std::move(y);
  }

 private:
  double epsilon_;
};

// ---------------------------------------------------------- LayerNormalization

// Scale or B expanded to one value per element of the normalised block
// x.shape[axis:]; it must broadcast to x without varying over dims < axis.
std::vector<double> expand_param(const Tensor& t, const Shape& xs, int64_t axis,
                                 int64_t inner, const char* what) {
  TORQ_SUPPORTED(is_float(t.dtype()) && t.dtype() != DType::kF16,
                 std::string(what) + " of dtype " + dtype_name(t.dtype()) + " is not supported");
  TORQ_CHECK(t.rank() <= static_cast<int64_t>(xs.size()) && broadcast_shapes(xs, t.shape()) == xs,
             std::string(what) + " shape " + shape_str(t.shape()) + " does not broadcast to " +
                 shape_str(xs));
  const int64_t rank = static_cast<int64_t>(xs.size()), off = rank - t.rank();
  std::vector<int64_t> tstride(static_cast<size_t>(rank), 0);
  const auto ts = strides_of(t.shape());
  for (int64_t j = off; j < rank; ++j) {
    const int64_t td = t.dim(j - off);
    TORQ_SUPPORTED(j >= axis || td == 1,
                   std::string(what) + " varying over the non-normalised dims is not supported");
    if (td != 1) tstride[static_cast<size_t>(j)] = ts[static_cast<size_t>(j - off)];
  }
  std::vector<double> out(static_cast<size_t>(inner));
  for (int64_t q = 0; q < inner; ++q) {
    int64_t rem = q, src = 0;
    for (int64_t j = rank; j-- > axis;) {
      src += (rem % xs[static_cast<size_t>(j)]) * tstride[static_cast<size_t>(j)];
      rem /= xs[static_cast<size_t>(j)];
    }
    out[static_cast<size_t>(q)] = t.get_as_double(src);
  }
  return out;
}

class LayerNormKernel final : public Kernel {
 public:
  explicit LayerNormKernel(const NodeInfo& n) {
    n.expect_attrs({"axis", "epsilon", "stash_type"});
    TORQ_SUPPORTED(n.attr_int("stash_type", 1) == 1,
                   "LayerNormalization stash_type other than 1 (float) is not supported");
    axis_ = n.attr_int("axis", -1);
    epsilon_ = n.attr_float("epsilon", 1e-5f);
    want_mean_ = n.has_output(1);
    want_inv_ = n.has_output(2);
    has_bias_ = n.has_input(2);
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.in(0);
    TORQ_SUPPORTED(x.dtype() == DType::kF32 || x.dtype() == DType::kF64,
                   std::string("LayerNormalization of ") + dtype_name(x.dtype()) +
                       " is not supported");
    const int64_t axis = normalize_axis(axis_, x.rank());
    int64_t outer = 1, inner = 1;
    Shape stat_shape;
    for (int64_t j = 0; j < x.rank(); ++j) {
      (j < axis ? outer : inner) *= x.dim(j);
      stat_shape.push_back(j < axis ? x.dim(j) : 1);
    }
    const auto scale = expand_param(ctx.in(1), x.shape(), axis, inner, "Scale");
    std::vector<double> bias;
    if (has_bias_) bias = expand_param(ctx.in(2), x.shape(), axis, inner, "B");
    Tensor mean(DType::kF32, stat_shape), inv(DType::kF32, stat_shape);
    if (x.dtype() == DType::kF32 && x.numel() > 0 && run_dnnl(x, outer, inner, scale, bias, mean,
                                                              inv, ctx)) {
      // done by oneDNN
    } else {
      run_plain(x, outer, inner, scale, bias, mean, inv, ctx);
    }
    if (want_mean_) ctx.output(1) = std::move(mean);
    if (want_inv_) ctx.output(2) = std::move(inv);
  }

 private:
  struct Plan {
    int64_t outer = -1, inner = -1;
    bool ok = false;
    dnnl::layer_normalization_forward prim;
    dnnl::memory::desc data_md, stat_md;
  };

  bool run_dnnl(const Tensor& x, int64_t outer, int64_t inner, const std::vector<double>& scale,
                const std::vector<double>& bias, Tensor& mean, Tensor& inv, KernelContext& ctx) {
    DnnlEnv& env = ctx.dnnl();
    const bool stats = want_mean_ || want_inv_;
    if (plan_.outer != outer || plan_.inner != inner) {
      plan_ = Plan{};
      plan_.outer = outer;
      plan_.inner = inner;
      try {
        plan_.data_md = plain_md({outer, inner}, DType::kF32);
        plan_.stat_md = plain_md({outer}, DType::kF32);
        auto flags = dnnl::normalization_flags::use_scale;
        if (has_bias_) flags = flags | dnnl::normalization_flags::use_shift;
        const auto prop = stats ? dnnl::prop_kind::forward_training
                                : dnnl::prop_kind::forward_inference;
        const dnnl::layer_normalization_forward::desc d(prop, plan_.data_md, plan_.stat_md,
                                                        epsilon_, flags);
        const auto pd = one_at_a_time(
            [&] { return dnnl::layer_normalization_forward::primitive_desc(d, user_scratchpad(), env.engine); });
        plan_.prim = dnnl::layer_normalization_forward(pd);
        plan_.ok = true;
      } catch (const dnnl::error&) {
        plan_.ok = false;
      }
    }
    if (!plan_.ok) return false;
    Tensor sc(DType::kF32, {inner}), sh(DType::kF32, {inner}), var(DType::kF32, {outer});
    for (int64_t i = 0; i < inner; ++i) {
      sc.data<float>()[i] = static_cast<float>(scale[static_cast<size_t>(i)]);
      sh.data<float>()[i] = has_bias_ ? static_cast<float>(bias[static_cast<size_t>(i)]) : 0.f;
    }
    Tensor y(DType::kF32, x.shape());
    const auto vec_md = plain_md({inner}, DType::kF32);
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, as_memory(x, plan_.data_md, env)},
        {DNNL_ARG_DST, as_memory(y, plan_.data_md, env)},
        {DNNL_ARG_SCALE, as_memory(sc, vec_md, env)}};
    if (has_bias_) args[DNNL_ARG_SHIFT] = as_memory(sh, vec_md, env);
    if (stats) {
      args[DNNL_ARG_MEAN] = as_memory(mean, plan_.stat_md, env);
      args[DNNL_ARG_VARIANCE] = as_memory(var, plan_.stat_md, env);
    }
    execute(env, plan_.prim, args);
    if (stats) {
      for (int64_t o = 0; o < outer; ++o)
        inv.data<float>()[o] = static_cast<float>(
            1.0 / std::sqrt(static_cast<double>(var.data<float>()[o]) +
                            static_cast<double>(epsilon_)));
    }
    ctx.output(0) = std::move(y);
    return true;
  }

  void run_plain(const Tensor& x, int64_t outer, int64_t inner, const std::vector<double>& scale,
                 const std::vector<double>& bias, Tensor& mean_t, Tensor& inv_t,
                 KernelContext& ctx) const {
    Tensor y(x.dtype(), x.shape());
    float* mp = mean_t.data<float>();
    float* ip = inv_t.data<float>();
    const double eps = static_cast<double>(epsilon_);
    auto run = [&](auto* dst, const auto* src) {
      using T = std::remove_pointer_t<decltype(dst)>;
#pragma omp parallel for schedule(static) if (outer > 1)
      for (int64_t o = 0; o < outer; ++o) {
        const auto* xs = src + o * inner;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < inner; ++i) mean += static_cast<double>(xs[i]);
        mean /= static_cast<double>(inner);
        for (int64_t i = 0; i < inner; ++i) {
          const double d = static_cast<double>(xs[i]) - mean;
          var += d * d;
        }
        var /= static_cast<double>(inner);
        const double inv = 1.0 / std::sqrt(var + eps);
        mp[o] = static_cast<float>(mean);
        ip[o] = static_cast<float>(inv);
        for (int64_t i = 0; i < inner; ++i) {
          const size_t q = static_cast<size_t>(i);
          double v = (static_cast<double>(xs[i]) - mean) * inv * scale[q];
          if (has_bias_) v += bias[q];
          dst[o * inner + i] = static_cast<T>(v);
        }
      }
    };
    if (x.dtype() == DType::kF32) {
      run(y.data<float>(), x.data<float>());
    } else {
      run(y.data<double>(), x.data<double>());
    }
    ctx.output(0) = std::move(y);
  }

  int64_t axis_;
  float epsilon_;
  bool want_mean_, want_inv_, has_bias_;
  Plan plan_;
};

}  // namespace

namespace nn {

void register_norm_plain_kernels(KernelRegistry& r) {
  // InstanceNormalization-1 (consumed_inputs) is legacy and not registered.
  r.add("InstanceNormalization", 6, 17, make_kernel<InstanceNormKernel>());
  r.add("LayerNormalization", 17, 17, make_kernel<LayerNormKernel>());
}

}  // namespace nn

}  // namespace torq::engine
