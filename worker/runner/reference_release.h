// Which values of a model's reference run a job process may let go of.
//
// A job process keeps the reference run's values so that each layer job
// finds its real inputs and outputs. Kept whole, that is every activation
// of the model (efficientnet_b1: 141 MB, half the process), written once
// and read by the few jobs of one layer. Jobs come in layer order, so a
// value is released once every layer that reads it is `window` layers
// behind the furthest layer a job has started and no running job starts
// at or before it. A job that still asks for a released value (a range
// job, a skip-mode follow-up arriving late) gets it from a second
// reference run (JobRunner's rewind), after which nothing is released.
// Not thread-safe: its owner locks.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "pipeline/model/layer_nodes.h"

namespace torq::runner {

class ReferenceRelease {
 public:
  // last_reader: each value's last layer whose job reads it (a value no
  // layer reads is released as soon as any job has started); window:
  // layers a value is kept past its last reader, < 0 keeps everything.
  ReferenceRelease(std::map<std::string, uint32_t> last_reader, int window);

  // A job of layers [first, last] starts / ends.
  void job_started(uint32_t first, uint32_t last);
  void job_ended(uint32_t first);
  // The run defined `name`, which the owner now holds (not for constants,
  // which every job reads).
  void held(const std::string& name);
  // The held values to let go of now; they count as released from here on.
  std::vector<std::string> due();
  bool released(const std::string& name) const { return released_.count(name) > 0; }
  const std::set<std::string>& released() const { return released_; }
  // At a rewind: nothing more is released (what is held stays held).
  void stop();
  // A released value the rewind gave back.
  void given_back(const std::string& name) { released_.erase(name); }

 private:
  int64_t floor() const;  // values whose last reader is below it are due

  std::map<std::string, uint32_t> last_reader_;
  int window_;
  int64_t front_ = -1;                // the furthest layer a job has started
  std::multiset<uint32_t> active_;    // first layers of the running jobs
  std::multimap<int64_t, std::string> held_;  // by last reader (-1: none)
  std::set<std::string> released_;
};

// Each value's last layer whose job reads it: its nodes' inputs and its
// outputs (RangeOutputs of the layer alone).
std::map<std::string, uint32_t> last_readers(const onnx::GraphProto& g, const std::vector<pipeline::LayerNodes>& layers,
                                             const pipeline::RangeOutputs& outputs_of);

// Layers a reference value is kept past its last reader: TORQ_REFERENCE_WINDOW
// (a test's knob; < 0 keeps every value), else 32, which jobs dispatched in
// layer order with a few in flight do not reach back past.
int release_window();

}  // namespace torq::runner
