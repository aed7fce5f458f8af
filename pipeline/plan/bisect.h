// Auto-bisect of a failing assigned run: the smallest contiguous node range
// whose assigned run fails on its own (fed the reference values that enter
// it), found by two binary searches over range jobs. Pure logic: the caller
// runs each range (a subgraph job on the fleet) and reports whether it
// failed.
//
// Given [first, last] failing: the first search finds the shortest failing
// prefix [first, e] (a failure that needs layers up to e), the second the
// shortest failing suffix [s, e] of that prefix. Each takes ceil(log2(n))
// range runs at most, so a 300-layer model needs at most 18. The answer is
// minimal under the assumption that a range containing a failing range
// fails too (error that compounds): the searches saw [first, e-1] and
// [s+1, e] pass (when those ranges are not empty).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

namespace torq::pipeline {

class Bisector {
 public:
  using Range = std::pair<uint32_t, uint32_t>;  // inclusive node indices

  // [first, last] is known to fail.
  Bisector(uint32_t first, uint32_t last);
  // The range to run next; nullopt once done().
  std::optional<Range> next() const;
  // The result of running next(): whether that range failed.
  void report(bool failed);
  bool done() const { return phase_ == Phase::kDone; }
  // The smallest failing range found (valid once done()).
  Range result() const { return {lo_, end_}; }
  // Range runs reported so far.
  int runs() const { return runs_; }

 private:
  enum class Phase { kPrefix, kSuffix, kDone };
  void settle();
  uint32_t first_;
  uint32_t lo_, hi_, end_ = 0;
  Phase phase_ = Phase::kPrefix;
  int runs_ = 0;
};

}  // namespace torq::pipeline
