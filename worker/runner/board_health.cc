#include "worker/runner/board_health.h"

#include <algorithm>

#include "pipeline/base/utc.h"

namespace torq::runner {

BoardHealth::BoardHealth(Options o, Clock::time_point now) : opt_(o), next_check_(now), backoff_(o.retry) {
  if (opt_.checks) set("Unknown", "starting: health check before the first job");
  else set("Good", "no health check configured");
}

bool BoardHealth::set(const std::string& state, const std::string& why) {
  const bool changed = state != state_ || why != reason_;
  if (!changed) return false;  // the same again: its time stays that of the first
  state_ = state;
  reason_ = why;
  since_ = base::utc_now();
  return true;
}

bool BoardHealth::check_due(Clock::time_point now) const {
  return (opt_.checks || state_ == "Bad") && !checking_ && state_ != "Maintenance" && now >= next_check_;
}

long BoardHealth::seconds_to_check(Clock::time_point now) const {
  if ((!opt_.checks && state_ != "Bad") || state_ == "Maintenance") return -1;
  if (checking_ || now >= next_check_) return 0;
  return std::chrono::ceil<std::chrono::seconds>(next_check_ - now).count();
}

bool BoardHealth::go_bad(const std::string& why, Clock::time_point now) {
  ++strikes_;
  next_check_ = now + backoff_;
  backoff_ = std::min(backoff_ * 2, opt_.max_retry);
  return set("Bad", why);
}

bool BoardHealth::check_done(bool passed, const std::string& why, Clock::time_point now) {
  checking_ = false;
  if (state_ == "Maintenance") return false;  // an operator took it out meanwhile
  if (passed) {
    next_check_ = now + opt_.interval;
    return set("Good", "health check passed");
  }
  return go_bad("health check failed: " + why, now);
}

bool BoardHealth::fault(const std::string& why, Clock::time_point now) {
  checking_ = false;  // a check that found it ends with it
  if (state_ == "Maintenance") return false;
  return go_bad(why, now);
}

bool BoardHealth::infrastructure_error(const std::string& why, Clock::time_point now) {
  if (state_ == "Maintenance" || state_ == "Bad" || !opt_.checks) return false;  // Bad: its check backs off
  if (state_ == "Unknown") return set("Unknown", "infrastructure error: " + why);  // the same incident (jobs in flight)
  if (strikes_ + 1 >= opt_.bad_after)
    return go_bad(std::to_string(strikes_ + 1) + " faults without a job done, the last an infrastructure error: " +
                      why,
                  now);
  // The first at once; then fault_retry, doubled per strike, up to the cap.
  const auto delay = strikes_ == 0 ? std::chrono::seconds(0)
                                   : std::min(opt_.fault_retry * (1L << std::min(strikes_ - 1, 20)),
                                              opt_.fault_max_retry);
  ++strikes_;
  next_check_ = now + delay;
  return set("Unknown", "infrastructure error: " + why);
}

void BoardHealth::job_done() {
  strikes_ = 0;
  backoff_ = opt_.retry;
}

bool BoardHealth::maintenance(bool on, const std::string& why, Clock::time_point now) {
  if (on == (state_ == "Maintenance")) return false;
  if (on) return set("Maintenance", why);
  next_check_ = now;
  return opt_.checks ? set("Unknown", "out of maintenance: " + why) : set("Good", "out of maintenance: " + why);
}

}  // namespace torq::runner
