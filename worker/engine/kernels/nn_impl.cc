// Helpers shared by the pooling, normalisation, softmax and reduction
// kernels: memory-descriptor data-type swaps, the bf16 compute policy and
// per-channel parameter extraction (see nn_impl.h).
#include "worker/engine/kernels/nn_impl.h"

#include <string>

namespace torq::engine::nn {

dnnl::memory::desc md_with_dtype(const dnnl::memory::desc& md, dnnl::memory::data_type dt) {
  dnnl_memory_desc_t d = md.data;
  d.data_type = static_cast<dnnl_data_type_t>(dt);
  return dnnl::memory::desc(d);
}

DType compute_dtype(DType t, Rounding r) {
  if (t == DType::kF32) return DType::kF32;
  if (t == DType::kBF16) return r == Rounding::kNearestEven ? DType::kBF16 : DType::kF32;
  throw_unsupported(std::string("dtype ") + dtype_name(t) + " is not supported by this kernel");
}

Tensor convert_keep_layout(const Tensor& t, DType dt, CachedReorder& re, DnnlEnv& env) {
  if (t.dtype() == dt) return t;
  const auto md = md_with_dtype(md_of(t), dnnl_dtype(dt));
  return re(t, md, dt, env);
}

InputKey input_key(const Tensor& t) {
  InputKey k;
  k.dtype = t.dtype();
  k.shape = t.shape();
  if (t.layout()) k.layout = t.layout()->md;
  return k;
}

bool same_input(const InputKey& k, const Tensor& t) {
  if (k.dtype != t.dtype() || k.shape != t.shape()) return false;
  if (!t.layout()) return !k.layout;
  return k.layout && *k.layout == t.layout()->md;
}

Tensor plain_f32(const Tensor& t, DnnlEnv& env) {
  if (t.is_plain()) return to_f32(t);
  if (t.dtype() == DType::kF32 || t.dtype() == DType::kBF16)
    return reorder_to(t, plain_md(t.shape(), DType::kF32), DType::kF32, env);
  return to_f32(to_plain(t, env));
}

std::vector<double> channel_params(const Tensor& t, int64_t n, const char* what, DnnlEnv& env) {
  TORQ_CHECK(t.numel() == n, std::string(what) + " has shape " + shape_str(t.shape()) +
                                 ", expected " + std::to_string(n) + " elements");
  TORQ_SUPPORTED(is_float(t.dtype()) && t.dtype() != DType::kF16,
                 std::string(what) + " of dtype " + dtype_name(t.dtype()) + " is not supported");
  const Tensor p = to_plain(t, env);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = p.get_as_double(i);
  return v;
}

}  // namespace torq::engine::nn
