// oneDNN glue: the CPU engine and stream, tensor <-> memory descriptors,
// layouts and reorders. Only kernels that call oneDNN include this.
#pragma once

#include <memory>
#include <mutex>
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

// One engine and stream per session (in-order stream; run-to-completion),
// and the scratchpad its primitives share.
//
// oneDNN's own scratchpad (scratchpad_mode::library, as Debian builds it:
// DNNL_ENABLE_CONCURRENT_EXEC=OFF) is one buffer per thread, sized by the
// primitives made on that thread, and a primitive must run on the thread
// that made it. A session's run moves between threads (a worker's lanes
// step one reference run in turn, worker/runner/model_state.h), and a
// primitive run elsewhere uses that thread's buffer: a convolution oneDNN
// runs through im2col crashed on a thread that had made no primitive
// (tests/unit/test_dnnl_util.cc). So every primitive here is made with
// scratchpad_mode::user (user_scratchpad) and runs with the session's
// buffer (execute, reorder): a session runs on one thread at a time,
// whichever it is.
struct DnnlEnv {
  DnnlEnv();
  dnnl::engine engine;
  dnnl::stream stream;
  // A memory of `md` (a primitive's scratchpad_desc) on this session's
  // buffer, grown to the largest asked for. Valid until the next call.
  dnnl::memory scratchpad(const dnnl::memory::desc& md);

 private:
  Tensor scratch_;  // bytes (64-byte aligned, as every tensor)
};

// oneDNN 2.6 makes a wrong fp32 convolution (whole channels of values like
// 1e30, a few runs in a hundred) when a bf16 convolution's primitive
// descriptor is being made on another thread at the same moment
// (tests/unit/test_session_threads.cc); a worker's lanes and its reference
// runs make sessions concurrently. With oneDNN alone, holding a lock while
// making the descriptors is enough, and holding it only while making the
// primitives (their jit code) is not. So the engine makes every primitive
// descriptor, and nothing else, while holding this process-wide lock:
// `f` returns the descriptor.
std::unique_lock<std::mutex> creation_lock();
template <class F>
auto one_at_a_time(F&& f) {
  const auto lk = creation_lock();
  return f();
}

// `attr` with scratchpad_mode::user: every primitive the engine makes.
dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr attr = dnnl::primitive_attr());
// Runs `p` (made with user_scratchpad) on env's stream with its scratchpad
// and waits for it (`args` gets the scratchpad's entry).
void execute(DnnlEnv& env, const dnnl::primitive& p, std::unordered_map<int, dnnl::memory>& args);
void execute(DnnlEnv& env, const dnnl::primitive& p, std::unordered_map<int, dnnl::memory>&& args);
// Copies `from` into `to` (their descriptors' layouts) with a reorder made
// for the call, and waits for it.
void reorder(DnnlEnv& env, const dnnl::memory& from, const dnnl::memory& to);

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
