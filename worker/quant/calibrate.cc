#include "worker/quant/calibrate.h"

#include <cmath>

#include "pipeline/base/progress.h"
#include "worker/engine/session.h"

namespace torq::quant {

uint64_t calibration_seed(uint64_t seed, int k) { return seed * 1000003ull + 1 + static_cast<uint64_t>(k); }

std::map<std::string, Range> calibrate(const onnx::ModelProto& model, int num_calib, uint64_t seed, int threads) {
  engine::SessionOptions so;
  so.threads = threads;
  auto session = engine::Session::from_proto(model, so);
  std::map<std::string, Range> ranges;
  for (int k = 0; k < num_calib; ++k) {
    base::Progress::note("calibrating: input " + std::to_string(k + 1) + "/" + std::to_string(num_calib));
    auto values = session->run_all(session->random_inputs(calibration_seed(seed, k), -1.f, 1.f));
    for (const auto& [name, t] : values) {
      if (t.dtype() != engine::DType::kF32 || session->is_constant(name) || t.numel() == 0) continue;
      const float* p = t.data<float>();
      auto [it, fresh] = ranges.try_emplace(name, Range{p[0], p[0]});
      for (int64_t i = 0; i < t.numel(); ++i)
        if (std::isfinite(p[i])) it->second.add(p[i]);
    }
  }
  return ranges;
}

}  // namespace torq::quant
