#include "worker/engine/dnnl_util.h"

#include "pipeline/base/error.h"

namespace torq::engine {

DnnlEnv::DnnlEnv() : engine(dnnl::engine::kind::cpu, 0), stream(engine) {}

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
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), eng);
      (void)pd;
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

Tensor CachedReorder::operator()(const Tensor& t, const dnnl::memory::desc& md, DType dtype,
                                 DnnlEnv& env) {
  const auto src_md = md_of(t);
  if (src_md == md) return t;
  if (!prim_ || !(src_ == src_md) || !(dst_ == md)) {
    src_ = src_md;
    dst_ = md;
    prim_.emplace(dnnl::reorder::primitive_desc(env.engine, src_md, env.engine, md));
  }
  Tensor out = alloc_for_md(md, dtype, t.shape());
  auto src = as_memory(t, src_md, env);
  auto dst = as_memory(out, md, env);
  prim_->execute(env.stream, src, dst);
  env.stream.wait();
  return out;
}

}  // namespace torq::engine
