// Views and reorders of strided-layout tensors (see movement_strided.h).
#include "worker/engine/kernels/movement_strided.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace torq::engine {

namespace {

using dim = dnnl::memory::dim;
using dims = dnnl::memory::dims;

// The tensor's descriptor when it is a non-plain strided layout.
std::optional<dnnl::memory::desc> strided_md(const Tensor& x) {
  if (x.is_plain() || x.numel() == 0 || x.rank() == 0 || x.rank() > DNNL_MAX_NDIMS) return std::nullopt;
  const dnnl::memory::desc md = md_of(x);
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0 || d.offset0 != 0 ||
      d.extra.flags != 0)
    return std::nullopt;
  for (int i = 0; i < d.ndims; ++i)
    if (d.padded_dims[i] != d.dims[i]) return std::nullopt;
  return md;
}

// x's bytes seen as `shape` in `md` (a plain tensor when md is row-major).
Tensor view_as(const Tensor& x, const Shape& shape, const dnnl::memory::desc& md) {
  if (md_is_plain(md)) return x.viewed(shape, nullptr);
  return x.viewed(shape, std::make_shared<Layout>(Layout{md}));
}

// Dense strides for `d` with the axes laid out in `order` (outermost first).
dnnl::memory::desc dense_md(const dims& d, dnnl::memory::data_type dt, const std::vector<size_t>& order) {
  dims strides(d.size());
  dim acc = 1;
  for (size_t k = order.size(); k-- > 0;) {
    strides[order[k]] = acc;
    acc *= std::max<dim>(d[order[k]], 1);
  }
  return dnnl::memory::desc(d, dt, strides);
}

// Axes ordered by `key` (larger first; ties keep the logical order).
std::vector<size_t> order_by(const std::vector<dim>& key) {
  std::vector<size_t> order(key.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] > key[b]; });
  return order;
}

// For each output axis, the smallest stride among the input axes it merges
// (size-1 axes do not count); empty when some output axis would split an
// input axis.
std::vector<dim> merged_strides(const dnnl::memory::desc& md, const Shape& out) {
  const dims in = md.dims();
  const dim* strides = md.data.format_desc.blocking.strides;
  std::vector<dim> key;
  size_t i = 0;
  for (int64_t want : out) {
    dim prod = 1, least = std::numeric_limits<dim>::max();
    while (i < in.size() && prod * in[i] <= want && (prod < want || in[i] == 1)) {
      prod *= in[i];
      if (in[i] != 1) least = std::min(least, strides[i]);
      ++i;
    }
    if (prod != want) return {};
    key.push_back(least);
  }
  if (i != in.size()) return {};
  return key;
}

// src (in src_md) copied into a new tensor of `shape` whose bytes are
// dst_md's; dst_in_src_dims is dst_md seen with src_md's dims.
Tensor reorder_into(const Tensor& src, const dnnl::memory::desc& src_md, const Shape& shape,
                    const dnnl::memory::desc& dst_md, const dnnl::memory::desc& dst_in_src_dims,
                    DnnlEnv& env) {
  Tensor out = alloc_for_md(dst_md, src.dtype(), shape);
  dnnl::memory from = as_memory(src, src_md, env), to = as_memory(out, dst_in_src_dims, env);
  reorder(env, from, to);
  return out;
}

}  // namespace

std::optional<Tensor> strided_reshape(const Tensor& x, const Shape& shape, DnnlEnv& env) {
  const auto md = strided_md(x);
  if (!md || shape.empty() || static_cast<int>(shape.size()) > DNNL_MAX_NDIMS) return std::nullopt;
  const dnnl::memory::desc view = md->reshape(to_dims(shape), true);
  if (view.data.ndims != 0) return view_as(x, shape, view);
  const std::vector<dim> key = merged_strides(*md, shape);
  if (key.empty()) return std::nullopt;
  const dnnl::memory::desc dst = dense_md(to_dims(shape), md->data_type(), order_by(key));
  const dnnl::memory::desc dst_in = dst.reshape(md->dims(), true);
  if (dst_in.data.ndims == 0) return std::nullopt;
  return reorder_into(x, *md, shape, dst, dst_in, env);
}

std::optional<Tensor> strided_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  const auto md = strided_md(x);
  if (!md) return std::nullopt;
  // oneDNN's permutation names where each input axis goes.
  std::vector<int> where(perm.size());
  Shape out_shape(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    where[static_cast<size_t>(perm[k])] = static_cast<int>(k);
    out_shape[k] = x.dim(perm[k]);
  }
  const dnnl::memory::desc view = md->permute_axes(where, true);
  if (view.data.ndims == 0) return std::nullopt;
  return view_as(x, out_shape, view);
}

std::optional<Tensor> strided_slice(const Tensor& x, const std::vector<int64_t>& first,
                                    const std::vector<int64_t>& step, const Shape& out_shape,
                                    DnnlEnv& env) {
  const auto md = strided_md(x);
  if (!md || shape_numel(out_shape) == 0) return std::nullopt;
  if (std::any_of(step.begin(), step.end(), [](int64_t s) { return s != 1; })) return std::nullopt;
  const dims out = to_dims(out_shape);
  const dnnl::memory::desc sub = md->submemory_desc(out, dims(first.begin(), first.end()));
  const dim* strides = md->data.format_desc.blocking.strides;
  const dnnl::memory::desc dst = dense_md(out, md->data_type(), order_by(dims(strides, strides + out.size())));
  return reorder_into(x, sub, out_shape, dst, dst, env);
}

}  // namespace torq::engine
