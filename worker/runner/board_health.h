// Device health of a worker (LAVA's model, which board-farm users trust):
// Good (takes jobs), Unknown (waits for a health check), Bad (failed its
// check: takes no jobs, retries the check with exponential backoff) and
// Maintenance (taken out by an operator). The worker runs a health check
// before its first job, every `interval` and after an infrastructure error.
// Pure state and time: the caller runs the check and reports it.
#pragma once

#include <chrono>
#include <string>

namespace torq::runner {

class BoardHealth {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    bool checks = true;                                // false: Good from the start, no checks
    std::chrono::seconds interval{24 * 3600};          // periodic check
    std::chrono::seconds retry{30};                    // first retry of a Bad device, doubled each time
    std::chrono::seconds max_retry{3600};
  };
  explicit BoardHealth(Options o, Clock::time_point now = Clock::now());

  const std::string& state() const { return state_; }    // Good | Unknown | Bad | Maintenance
  const std::string& reason() const { return reason_; }  // why the last transition happened
  const std::string& since() const { return since_; }    // UTC ISO 8601 of the last transition
  bool takes_jobs() const { return state_ == "Good"; }

  // True when a check should start now (none is running).
  bool check_due(Clock::time_point now) const;
  void check_started() { checking_ = true; }
  bool checking() const { return checking_; }
  // The check's outcome; `why` says what failed. Returns true when the state changed.
  bool check_done(bool passed, const std::string& why, Clock::time_point now);
  // An infrastructure error (ssh, board unreachable, runner missing): Unknown,
  // check at once. Returns true when the state changed.
  bool infrastructure_error(const std::string& why, Clock::time_point now);
  // Maintenance on (an operator's file is present) or off (back to Unknown).
  bool maintenance(bool on, const std::string& why, Clock::time_point now);

 private:
  bool set(const std::string& state, const std::string& why);
  Options opt_;
  std::string state_, reason_, since_;
  bool checking_ = false;
  Clock::time_point next_check_;
  std::chrono::seconds backoff_;
};

}  // namespace torq::runner
