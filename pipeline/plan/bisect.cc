#include "pipeline/plan/bisect.h"

namespace torq::pipeline {

Bisector::Bisector(uint32_t first, uint32_t last) : first_(first), lo_(first), hi_(last) { settle(); }

std::optional<Bisector::Range> Bisector::next() const {
  if (phase_ == Phase::kPrefix) return Range{first_, lo_ + (hi_ - lo_) / 2};
  if (phase_ == Phase::kSuffix) return Range{lo_ + (hi_ - lo_ + 1) / 2, end_};
  return std::nullopt;
}

void Bisector::report(bool failed) {
  const Range r = *next();
  ++runs_;
  if (phase_ == Phase::kPrefix) {
    if (failed) hi_ = r.second;       // [first, mid] fails: the end is at or before mid
    else lo_ = r.second + 1;          // passes: the end is after mid
  } else {
    if (failed) lo_ = r.first;        // [mid, end] fails: the start is at or after mid
    else hi_ = r.first - 1;           // passes: the start is before mid
  }
  settle();
}

// Moves to the next phase once a search has closed in.
void Bisector::settle() {
  if (phase_ == Phase::kPrefix && lo_ >= hi_) {
    end_ = hi_;
    phase_ = Phase::kSuffix;
    lo_ = first_;
    hi_ = end_;
  }
  if (phase_ == Phase::kSuffix && lo_ >= hi_) phase_ = Phase::kDone;
}

}  // namespace torq::pipeline
