// Sessions made and run on several threads at once must each give what
// they give alone. A worker makes and runs layer sessions on its lanes
// while its reference runs (of the job's model, or of a preloaded other
// one, in bf16) make and run theirs on other threads.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <barrier>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/graph_builder.h"
#include "worker/engine/session.h"
#include "worker/engine/tensor.h"

using namespace torq::engine;
using namespace torq::test;

namespace {

// x [1,3,h,32] -> Conv(16 filters 3x3, pad 1, bias) -> Relu: a network's
// first layer. Each h is a convolution oneDNN has not made yet.
onnx::ModelProto first_layer(int64_t h) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x", {1, 3, h, 32});
  add_random_init(g, "w", {16, 3, 3, 3}, 5);
  add_random_init(g, "b", {16}, 6);
  auto* pads = add_node(g, "Conv", {"x", "w", "b"}, {"c"})->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  add_node(g, "Relu", {"c"}, {"y"});
  add_value(g->mutable_output(), "y", {1, 16, h, 32});
  return m;
}

bool same(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace

// oneDNN 2.6 made wrong fp32 convolutions (whole channels of 1e15 to 1e37)
// when a bf16 convolution was being made on another thread at the same
// moment: a worker's first layer jobs came back "difference" while a
// preloaded bf16 model's reference run started beside them. Here two fp32
// threads and a bf16 thread each make a new session of the same new layer
// at the same moment, run it, and run it again once the others are done:
// the two runs must agree. (Without the engine's creation lock, dnnl_util.h,
// 13 to 26 of these 750 runs differed.)
TEST(SessionThreads, LayersMadeAtTheSameMomentInFp32AndBf16GiveWhatTheyGiveAlone) {
  constexpr int kThreads = 3, kRounds = 250;
  std::barrier<> sync(kThreads);
  std::mutex mu;
  std::vector<std::string> wrong;
  auto lane = [&](int id) {
    SessionOptions so;
    so.threads = 1;
    if (id == kThreads - 1) so.numerics = Numerics::kBF16;
    for (int r = 0; r < kRounds; ++r) {
      const onnx::ModelProto m = first_layer(8 + r);
      sync.arrive_and_wait();
      auto s = Session::from_proto(m, so);
      const std::vector<Tensor> in = s->random_inputs(3);
      const std::vector<Tensor> together = s->run(in);
      sync.arrive_and_wait();
      for (int t = 0; t < kThreads; ++t) {  // each alone, in turn
        if (t == id && !same(s->run(in)[0], together[0])) {
          std::lock_guard<std::mutex> lk(mu);
          wrong.push_back("round " + std::to_string(r) + ", " + (id == kThreads - 1 ? "bf16" : "fp32") + " thread " +
                          std::to_string(id));
        }
        sync.arrive_and_wait();
      }
    }
  };
  std::vector<std::thread> lanes;
  for (int i = 0; i < kThreads; ++i) lanes.emplace_back(lane, i);
  for (auto& t : lanes) t.join();
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " of " << kRounds * kThreads << " runs differ from the same session's "
                             << "run alone, first " << wrong.front();
}
