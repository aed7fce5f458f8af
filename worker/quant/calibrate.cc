#include "worker/quant/calibrate.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "pipeline/base/progress.h"
#include "worker/engine/session.h"

namespace torq::quant {

uint64_t calibration_seed(uint64_t seed, int k) { return seed * 1000003ull + 1 + static_cast<uint64_t>(k); }

namespace {

// Widens r by the finite elements of p[0, n), 16 at a time in four
// independent 4-lane chains (SSE registers through the compiler's vector
// types; one ordered min/max chain was a fifth of a calibration's CPU, and
// one vector chain waits on its own previous select). The sign of a zero
// bound may differ from taking the elements in order, which no
// quantization parameter sees: a range holds 0 (calibrate()).
void widen(Range& r, const float* p, int64_t n) {
  using F4 = float __attribute__((vector_size(16)));
  constexpr float kMax = std::numeric_limits<float>::max();
  constexpr int kChains = 4;
  F4 lo[kChains], hi[kChains];
  for (int c = 0; c < kChains; ++c) lo[c] = F4{} + r.lo, hi[c] = F4{} + r.hi;
  int64_t i = 0;
  for (; i + 4 * kChains <= n; i += 4 * kChains)
    for (int c = 0; c < kChains; ++c) {
      F4 v;
      std::memcpy(&v, p + i + 4 * c, sizeof v);
      const auto finite = (v <= kMax) & (v >= -kMax);  // false for NaN and inf
      lo[c] = (finite & (v < lo[c])) ? v : lo[c];
      hi[c] = (finite & (v > hi[c])) ? v : hi[c];
    }
  for (int c = 0; c < kChains; ++c)
    for (int j = 0; j < 4; ++j) r.add(lo[c][j]), r.add(hi[c][j]);
  for (; i < n; ++i)
    if (std::isfinite(p[i])) r.add(p[i]);
}

}  // namespace

// Each run is taken a node at a time, its activations read as they come and
// dropped after their last reader: a run_all kept every value of the model
// at once, with a plain copy of every weight, and the fresh pages that cost
// (page faults, copies) were most of a calibration's CPU (issue 32).
std::map<std::string, Range> calibrate(const onnx::ModelProto& model, int num_calib, uint64_t seed, int threads) {
  engine::SessionOptions so;
  so.threads = threads;
  auto session = engine::Session::from_proto(model, so);
  std::map<std::string, Range> ranges;
  for (int k = 0; k < num_calib; ++k) {
    base::Progress::note("calibrating: input " + std::to_string(k + 1) + "/" + std::to_string(num_calib));
    auto steps = session->start_steps(session->random_inputs(calibration_seed(seed, k), -1.f, 1.f),
                                      /*constants=*/false);
    while (!steps->done())
      for (const auto& [name, t] : steps->step()) {
        if (t.dtype() != engine::DType::kF32 || t.numel() == 0) continue;
        const float* p = t.data<float>();
        widen(ranges[name], p, t.numel());
      }
  }
  return ranges;
}

}  // namespace torq::quant
