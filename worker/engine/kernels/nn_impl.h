// Internal helpers shared by the pooling, normalisation, softmax and
// reduction kernels (pool*.cc, norm*.cc, softmax.cc, reduce*.cc). Not part
// of the engine's API.
//
// Float policy of the oneDNN-backed kernels that set handles_bf16(): a bf16
// input is computed in bf16 (fp32 inside oneDNN, rounded to nearest even on
// the way out) when the session rounds to nearest even; otherwise it is
// first converted exactly to fp32 in the same memory layout and the kernel
// writes fp32, which the session then truncates.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernel.h"

namespace torq::engine::nn {

// `md` with the same dims and memory layout but data type `dt`.
dnnl::memory::desc md_with_dtype(const dnnl::memory::desc& md, dnnl::memory::data_type dt);

// The dtype a oneDNN primitive computes in for input dtype `t` (f32 or bf16;
// anything else throws Unsupported) under `r` (see the policy above).
DType compute_dtype(DType t, Rounding r);

// `t` in dtype `dt` (f32 or bf16), keeping its layout; `re` caches the reorder.
Tensor convert_keep_layout(const Tensor& t, DType dt, CachedReorder& re, DnnlEnv& env);

// What a kernel's cached plan depends on: an input's dtype, shape and
// memory layout.
struct InputKey {
  DType dtype = DType::kUndefined;
  Shape shape;
  std::optional<dnnl::memory::desc> layout;  // set for blocked tensors
};
InputKey input_key(const Tensor& t);
bool same_input(const InputKey& k, const Tensor& t);

// A plain fp32 copy of a float tensor in any layout / float dtype (f32, bf16).
Tensor plain_f32(const Tensor& t, DnnlEnv& env);

// Per-channel float parameters (scale, bias, mean, var) of any float dtype
// but f16, in any layout; `what` names the input in messages. Checks the
// element count is `n`.
std::vector<double> channel_params(const Tensor& t, int64_t n, const char* what, DnnlEnv& env);

// ---- Pooling geometry and the plain reference pooling (pool_impl.cc).

enum class PoolKind { kMax, kAvg };
enum class AutoPad { kNotSet, kValid, kSameUpper, kSameLower };

// A pooling node's attributes. For global pooling `kernel` is empty and is
// taken from the input's spatial dims (strides 1, no padding).
struct PoolSpec {
  PoolKind kind = PoolKind::kMax;
  bool global = false;
  std::vector<int64_t> kernel, strides, pads, dilations;  // pads: begins then ends
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
  bool count_include_pad = false;
  int64_t storage_order = 0;  // 0 row-major, 1 column-major Indices
};

// Pooling geometry for one input shape, per spatial dim.
struct PoolGeom {
  std::vector<int64_t> in, out, k, s, d, pb, pe;
  Shape out_shape;
  // True when some window reaches past the end padding (ceil_mode): an
  // include-padding average then divides by less than the kernel size.
  bool window_past_pads = false;
};

// Validates the attributes against input shape `x` (rank >= 2, N and C
// first) and computes the geometry; throws InvalidModel / Unsupported
// (for example when a window would hold no input element).
PoolGeom pool_geometry(const PoolSpec& spec, const Shape& x);

// Plain C++ pooling of a plain tensor (f32, f64, i8, u8) with ONNX
// semantics; allocates `y` (same dtype) and, when `indices` is non-null, the
// int64 Indices output of MaxPool.
void pool_reference(const PoolSpec& spec, const PoolGeom& g, const Tensor& x, Tensor& y,
                    Tensor* indices);

// GlobalAveragePool of an f32 channels-last tensor (`x_md`) of at most 2^17
// elements, at least 32 channels and at most 1024 pixels, in one thread
// without oneDNN (whose dispatch cost more than the sums on MobileNetV3's
// squeeze-excite inputs): each channel summed over the pixels in order, then
// divided by their count, which is what oneDNN's jit average pooling
// computes, bit for bit. `y_md` (plain or channels-last) is the layout the
// caller's oneDNN primitive would write. Returns false, touching nothing,
// for any other case.
bool global_avg_small(const Tensor& x, const dnnl::memory::desc& x_md, const dnnl::memory::desc& y_md,
                      const Shape& y_shape, Tensor* y);

// ---- Registration helpers for kernels outside a family's main file.
void register_norm_plain_kernels(KernelRegistry& r);   // norm_impl.cc
void register_arg_kernels(KernelRegistry& r);          // reduce_impl.cc

}  // namespace torq::engine::nn
