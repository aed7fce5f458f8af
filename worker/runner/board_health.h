// Device health of a worker (LAVA's model, which board-farm users trust):
// Good (takes jobs), Unknown (waits for a health check), Bad (failed its
// check, or a fault the worker saw itself: takes no jobs, retries the check
// with exponential backoff) and Maintenance (taken out by an operator). The
// worker runs a health check before its first job, every `interval` and
// after an infrastructure error. Pure state and time: the caller runs the
// check and reports it.
//
// Backoff and a floor (issue 60: a device whose check passed but whose next
// job failed the same way again flapped Good -> Unknown 250 times a second):
//  - Faults (an infrastructure error of a Good device, a failed check, a
//    device fault) count as strikes until a job is done (job_done()); a
//    passed check alone clears none of them, so a device that passes its
//    check and fails its jobs cannot cycle at the speed of its check.
//  - The first infrastructure error is checked at once; with strikes
//    already counted the check waits fault_retry doubling per strike, up
//    to fault_max_retry; at bad_after strikes the device is Bad. More
//    errors while it is Unknown (its other jobs in flight) are the same
//    incident: a new reason, no strike; while it is Bad they change nothing.
//  - Bad retries its check from `retry`, doubling up to `max_retry`; a
//    passed check keeps the doubled delay until a job is done.
//  - A repeated failure with the same reason is no transition (check_done
//    and fault return false): the caller logs it, nobody is told again.
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
    std::chrono::seconds fault_retry{1};               // check delay after an infrastructure error, per strike
    std::chrono::seconds fault_max_retry{60};
    int bad_after = 3;                                 // strikes that make the device Bad
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
  // Seconds until the next check may start (0: due or running; -1: none planned).
  long seconds_to_check(Clock::time_point now) const;
  // The check's outcome; `why` says what failed. Returns true when the
  // state or its reason changed.
  bool check_done(bool passed, const std::string& why, Clock::time_point now);
  // An infrastructure error (ssh, board unreachable, runner missing): Unknown,
  // checked at once or after the strikes' backoff, or Bad (see above).
  // Returns true when the state or its reason changed.
  bool infrastructure_error(const std::string& why, Clock::time_point now);
  // A fault the worker found itself that a check would find too (a model
  // cache with no room for a model it was sent): Bad now, checked again
  // after the Bad backoff; ends a running check. Without checks too: the
  // Bad device is then checked (check_due) for that fault alone. Returns
  // true when the state or its reason changed.
  bool fault(const std::string& why, Clock::time_point now);
  // A job ran to a result that is the op's (not the infrastructure's):
  // the strikes and the Bad backoff start over.
  void job_done();
  // Maintenance on (an operator's file is present) or off (back to Unknown).
  bool maintenance(bool on, const std::string& why, Clock::time_point now);

 private:
  bool set(const std::string& state, const std::string& why);
  bool go_bad(const std::string& why, Clock::time_point now);
  Options opt_;
  std::string state_, reason_, since_;
  bool checking_ = false;
  Clock::time_point next_check_;
  std::chrono::seconds backoff_;
  int strikes_ = 0;
};

}  // namespace torq::runner
