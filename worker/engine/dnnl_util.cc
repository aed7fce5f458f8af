#include "worker/engine/dnnl_util.h"

#include <omp.h>

#include <optional>

#include "pipeline/base/error.h"

namespace torq::engine {

DnnlEnv::DnnlEnv() : engine(dnnl::engine::kind::cpu, 0), stream(engine) {}

dnnl::memory DnnlEnv::scratchpad(const dnnl::memory::desc& md) {
  const size_t bytes = md.get_size();
  if (!scratch_.defined() || bytes > scratch_.nbytes()) scratch_ = Tensor(DType::kU8, {static_cast<int64_t>(bytes)});
  return dnnl::memory(md, engine, scratch_.raw());
}

std::unique_lock<std::mutex> creation_lock() {
  static std::mutex mu;
  return std::unique_lock<std::mutex>(mu);
}

dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr attr) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void execute(DnnlEnv& env, const dnnl::primitive& p, std::unordered_map<int, dnnl::memory>& args) {
  const_dnnl_primitive_desc_t pd = p.get_primitive_desc();
  const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (md && dnnl_memory_desc_get_size(md) > 0) args[DNNL_ARG_SCRATCHPAD] = env.scratchpad(dnnl::memory::desc(*md));
  p.execute(env.stream, args);
  env.stream.wait();
}

void execute(DnnlEnv& env, const dnnl::primitive& p, std::unordered_map<int, dnnl::memory>&& args) {
  execute(env, p, args);
}

void reorder(DnnlEnv& env, const dnnl::memory& from, const dnnl::memory& to) {
  const dnnl::reorder r(one_at_a_time([&] { return dnnl::reorder::primitive_desc(from, to, user_scratchpad()); }));
  execute(env, r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

dnnl::memory::data_type dnnl_dtype(DType t) {
  switch (t) {
    case DType::kF32: return dnnl::memory::data_type::f32;
    case DType::kBF16: return dnnl::memory::data_type::bf16;
    case DType::kI8: return dnnl::memory::data_type::s8;
    case DType::kU8: return dnnl::memory::data_type::u8;
    case DType::kI32: return dnnl::memory::data_type::s32;
    default: throw_unsupported(std::string("dtype ") + dtype_name(t) + " is not supported by this kernel");
  }
}

bool dnnl_bf16_supported() {
  static const bool supported = [] {
    try {
      dnnl::engine eng(dnnl::engine::kind::cpu, 0);
      const dnnl::memory::dims d{4, 4};
      const dnnl::memory::desc md(d, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::ab);
      (void)one_at_a_time([&] { return dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), eng); });
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return supported;
}

dnnl::memory::dims to_dims(const Shape& s) {
  if (s.empty()) return {1};
  return dnnl::memory::dims(s.begin(), s.end());
}

dnnl::memory::desc plain_md(const Shape& shape, DType t) {
  auto dims = to_dims(shape);
  dnnl::memory::dims strides(dims.size());
  dnnl::memory::dim acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = acc;
    acc *= std::max<dnnl::memory::dim>(dims[i], 1);
  }
  return dnnl::memory::desc(dims, dnnl_dtype(t), strides);
}

dnnl::memory::desc md_of(const Tensor& t) {
  if (t.layout()) return t.layout()->md;
  return plain_md(t.shape(), t.dtype());
}

dnnl::memory as_memory(const Tensor& t, const dnnl::memory::desc& md, DnnlEnv& env) {
  return dnnl::memory(md, env.engine, const_cast<void*>(t.raw()));
}

dnnl::memory as_memory(const Tensor& t, DnnlEnv& env) { return as_memory(t, md_of(t), env); }

bool md_is_plain(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked) return false;
  if (d.format_desc.blocking.inner_nblks != 0) return false;
  if (d.extra.flags != 0) return false;
  dnnl::memory::dim acc = 1;
  for (int i = d.ndims; i-- > 0;) {
    if (d.dims[i] != 1 && d.format_desc.blocking.strides[i] != acc) return false;
    if (d.padded_dims[i] != d.dims[i]) return false;
    acc *= d.dims[i];
  }
  return true;
}

Tensor alloc_for_md(const dnnl::memory::desc& md, DType dtype, const Shape& shape) {
  if (md_is_plain(md)) return Tensor(dtype, shape);
  auto layout = std::make_shared<Layout>(Layout{md});
  return Tensor::blocked(dtype, shape, std::move(layout), md.get_size());
}

Tensor reorder_to(const Tensor& t, const dnnl::memory::desc& md, DType dtype, DnnlEnv& env) {
  CachedReorder r;
  return r(t, md, dtype, env);
}

Tensor to_plain(const Tensor& t, DnnlEnv& env) {
  if (t.is_plain()) return t;
  return reorder_to(t, plain_md(t.shape(), t.dtype()), t.dtype(), env);
}

namespace {

// dst[p][k] = src[k][p] for pixels [p0, p1) of C channels (C a constant, so
// the compiler turns the loop into vector shuffles; built for AVX-512 and
// AVX2 too, picked at load by the CPU: a copy, the same bits in each).
template <int C>
void interleave_c(const float* src, float* dst, int64_t p0, int64_t p1, int64_t pixels) {
  for (int64_t p = p0; p < p1; ++p)
    for (int k = 0; k < C; ++k) dst[p * C + k] = src[k * pixels + p];
}
__attribute__((target_clones("avx512f", "avx2", "default"))) void interleave(const float* src, float* dst,
                                                                              int64_t p0, int64_t p1,
                                                                              int64_t pixels, int64_t c) {
  switch (c) {
    case 1: interleave_c<1>(src, dst, p0, p1, pixels); break;
    case 2: interleave_c<2>(src, dst, p0, p1, pixels); break;
    case 3: interleave_c<3>(src, dst, p0, p1, pixels); break;
    default: interleave_c<4>(src, dst, p0, p1, pixels); break;
  }
}

// A plain f32 tensor of few channels (an image: C <= 4) into the
// channels-last layout `md` (nwc, nhwc, ndhwc) with a plain copy loop: a
// network's first convolution asks for it, and oneDNN 2.6's jit reorder took
// 20-25 us on a 3x224x224 image where the loop takes 7 (2 threads). Returns
// false, touching nothing, in any other case.
bool image_to_channels_last(const Tensor& t, const dnnl::memory::desc& md, DType dtype, Tensor* out) {
  using ft = dnnl::memory::format_tag;
  const int64_t rank = t.rank();
  if (!t.is_plain() || t.dtype() != DType::kF32 || dtype != DType::kF32 || rank < 3 || rank > 5) return false;
  const ft tag = rank == 3 ? ft::nwc : rank == 4 ? ft::nhwc : ft::ndhwc;
  if (!(md == dnnl::memory::desc(to_dims(t.shape()), dnnl::memory::data_type::f32, tag))) return false;
  const int64_t n = t.dim(0), c = t.dim(1);
  if (c > 4 || t.numel() == 0) return false;
  const int64_t pixels = t.numel() / (n * c);
  *out = alloc_for_md(md, dtype, t.shape());
  const float* in = t.data<float>();
  float* o = static_cast<float*>(out->raw());
  for (int64_t b = 0; b < n; ++b) {
    const float* src = in + b * c * pixels;
    float* dst = o + b * c * pixels;
#pragma omp parallel if (pixels * c > 32768)
    {
      const int64_t i = omp_get_thread_num(), nt = omp_get_num_threads();
      interleave(src, dst, pixels * i / nt, pixels * (i + 1) / nt, pixels, c);
    }
  }
  return true;
}

}  // namespace

Tensor CachedReorder::operator()(const Tensor& t, const dnnl::memory::desc& md, DType dtype,
                                 DnnlEnv& env) {
  const auto src_md = md_of(t);
  if (src_md == md) return t;
  if (Tensor out; image_to_channels_last(t, md, dtype, &out)) return out;
  if (!prim_ || !(src_ == src_md) || !(dst_ == md)) {
    src_ = src_md;
    dst_ = md;
    prim_.emplace(one_at_a_time(
        [&] { return dnnl::reorder::primitive_desc(env.engine, src_md, env.engine, md, user_scratchpad()); }));
  }
  Tensor out = alloc_for_md(md, dtype, t.shape());
  auto src = as_memory(t, src_md, env);
  auto dst = as_memory(out, md, env);
  execute(env, *prim_, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
  return out;
}

}  // namespace torq::engine
