// Transpose: a view of a strided-layout input (movement_strided.h), else a
// copy of the plain input, whole runs when the perm keeps the trailing axes
// in place. Elements move as raw bytes, so every dtype passes unchanged.
#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernels/movement_strided.h"
#include "worker/engine/kernels/movement_util.h"

namespace torq::engine {

namespace {

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const NodeInfo& n) {
    n.expect_attrs({"perm"});
    perm_ = n.attr_ints("perm");
  }
  bool handles_bf16() const override { return true; }
  bool accepts_blocked_inputs() const override { return true; }

  void compute(KernelContext& ctx) override {
    Tensor x = ctx.in(0);
    const int64_t rank = x.rank();
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (int64_t k = rank; k-- > 0;) perm.push_back(k);
    TORQ_CHECK(static_cast<int64_t>(perm.size()) == rank,
               "Transpose: perm length does not match the input rank");
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    Shape out_shape(static_cast<size_t>(rank));
    for (size_t k = 0; k < perm.size(); ++k) {
      perm[k] = normalize_axis(perm[k], rank);
      TORQ_CHECK(!seen[static_cast<size_t>(perm[k])], "Transpose: perm is not a permutation");
      seen[static_cast<size_t>(perm[k])] = true;
      out_shape[k] = x.dim(perm[k]);
    }
    if (!x.is_plain()) {
      if (auto v = strided_transpose(x, perm)) {
        ctx.output(0) = *v;
        return;
      }
      x = to_plain(x, ctx.dnnl());
    }
    Tensor out(x.dtype(), out_shape);
    // Trailing axes the perm leaves in place (the H, W of a channel shuffle)
    // are one contiguous run per index of the permuted ones.
    size_t fixed = perm.size();
    while (fixed > 0 && perm[fixed - 1] == static_cast<int64_t>(fixed) - 1) --fixed;
    if (fixed < perm.size()) {
      int64_t run = 1;
      for (size_t k = fixed; k < perm.size(); ++k) run *= out_shape[k];
      const auto strides = strides_of(x.shape());
      std::vector<std::vector<int64_t>> outer(fixed);
      for (size_t k = 0; k < fixed; ++k)
        for (int64_t i = 0; i < out_shape[k]; ++i) outer[k].push_back(i * strides[static_cast<size_t>(perm[k])]);
      copy_offset_runs(x.raw(), out.raw(), dtype_size(x.dtype()), outer, run);
    } else {
      gather_axis_offsets(x.raw(), out.raw(), dtype_size(x.dtype()), permuted_offsets(x.shape(), perm));
    }
    ctx.output(0) = out;
  }

 private:
  std::vector<int64_t> perm_;
};

}  // namespace

void register_movement_transpose_kernels(KernelRegistry& r) {
  r.add("Transpose", 1, 17, make_kernel<TransposeKernel>());
}

}  // namespace torq::engine
