// oneDNN glue: the CPU engine and stream, tensor <-> memory descriptors,
// layouts and reorders. Only kernels that call oneDNN include this.
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "worker/engine/tensor.h"

namespace torq::engine {

// A non-plain layout chosen by a oneDNN primitive. md describes the whole
// tensor including its data type.
struct Layout {
  dnnl::memory::desc md;
};

// One engine and stream per session (in-order stream; run-to-completion).
struct DnnlEnv {
  DnnlEnv();
  dnnl::engine engine;
  dnnl::stream stream;
};

// oneDNN data type for a float dtype (f32, bf16); throws Unsupported otherwise.
dnnl::memory::data_type dnnl_dtype(DType t);

// True when this CPU runs oneDNN's bf16 primitives (oneDNN 2.6 needs
// AVX512-core or newer). Probed once by creating a small bf16 matmul. On
// CPUs without it the session feeds "bf16" kernels f32 inputs (bf16 → f32 is
// exact) and rounds their outputs to bf16: the same numbers as the native
// kernels (f32 accumulation, one rounding of the result).
bool dnnl_bf16_supported();
dnnl::memory::dims to_dims(const Shape& s);
// Row-major descriptor of `shape` with data type `t` (rank 0 becomes {1}).
dnnl::memory::desc plain_md(const Shape& shape, DType t);
// The descriptor a tensor's bytes are in (its Layout, or plain).
dnnl::memory::desc md_of(const Tensor& t);
// Wraps the tensor's buffer (no copy). The memory must not outlive `t`.
dnnl::memory as_memory(const Tensor& t, const dnnl::memory::desc& md, DnnlEnv& env);
dnnl::memory as_memory(const Tensor& t, DnnlEnv& env);
// True when md is the plain row-major layout of its dims.
bool md_is_plain(const dnnl::memory::desc& md);
// Allocates a tensor whose bytes are in `md` (plain tensor if md is plain).
Tensor alloc_for_md(const dnnl::memory::desc& md, DType dtype, const Shape& shape);
// Reorders `t` into `md` (e.g. to plain, or to a primitive's chosen input
// format), caching nothing. Returns `t` itself when already in md.
Tensor reorder_to(const Tensor& t, const dnnl::memory::desc& md, DType dtype, DnnlEnv& env);
Tensor to_plain(const Tensor& t, DnnlEnv& env);

// A cached reorder from one descriptor to another (used for per-run input
// conversions whose descriptors are fixed once shapes are known).
class CachedReorder {
 public:
  // Returns `t` converted to `md` (no copy when already there).
  Tensor operator()(const Tensor& t, const dnnl::memory::desc& md, DType dtype, DnnlEnv& env);

 private:
  dnnl::memory::desc src_, dst_;
  std::optional<dnnl::reorder> prim_;
};

}  // namespace torq::engine
