#include "worker/runner/reference_release.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "pipeline/base/onnx_scope.h"

namespace torq::runner {

ReferenceRelease::ReferenceRelease(std::map<std::string, uint32_t> last_reader, int window)
    : last_reader_(std::move(last_reader)), window_(window) {}

void ReferenceRelease::job_started(uint32_t first, uint32_t last) {
  active_.insert(first);
  front_ = std::max<int64_t>(front_, last);
}

void ReferenceRelease::job_ended(uint32_t first) {
  auto it = active_.find(first);
  if (it != active_.end()) active_.erase(it);
}

void ReferenceRelease::held(const std::string& name) {
  if (window_ < 0) return;
  auto it = last_reader_.find(name);
  held_.emplace(it == last_reader_.end() ? -1 : static_cast<int64_t>(it->second), name);
}

int64_t ReferenceRelease::floor() const {
  if (window_ < 0 || front_ < 0) return -1;
  int64_t f = front_ - window_;
  if (!active_.empty()) f = std::min<int64_t>(f, *active_.begin());
  // A value no layer reads goes once any job has started.
  return std::max<int64_t>(f, 0);
}

std::vector<std::string> ReferenceRelease::due() {
  std::vector<std::string> out;
  const int64_t f = floor();
  while (!held_.empty() && held_.begin()->first < f) {
    out.push_back(held_.begin()->second);
    released_.insert(held_.begin()->second);
    held_.erase(held_.begin());
  }
  return out;
}

void ReferenceRelease::stop() {
  window_ = -1;
  held_.clear();
}

std::map<std::string, uint32_t> last_readers(const onnx::GraphProto& g, const std::vector<pipeline::LayerNodes>& layers,
                                             const pipeline::RangeOutputs& outputs_of) {
  std::map<std::string, uint32_t> last;
  for (uint32_t l = 0; l < layers.size(); ++l) {
    for (int pos : pipeline::range_nodes(layers, l, l))
      for (const auto& in : base::node_reads(g.node(pos))) last[in] = l;
    for (const auto& o : outputs_of(l, l)) last[o] = l;
  }
  return last;
}

int release_window() {
  static const int w = [] {
    const char* e = std::getenv("TORQ_REFERENCE_WINDOW");
    return e && *e ? std::atoi(e) : 32;
  }();
  return w;
}

}  // namespace torq::runner
