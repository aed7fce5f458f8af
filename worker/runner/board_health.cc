#include "worker/runner/board_health.h"

#include "pipeline/base/utc.h"

namespace torq::runner {

BoardHealth::BoardHealth(Options o, Clock::time_point now) : opt_(o), next_check_(now), backoff_(o.retry) {
  if (opt_.checks) set("Unknown", "starting: health check before the first job");
  else set("Good", "no health check configured");
}

bool BoardHealth::set(const std::string& state, const std::string& why) {
  const bool changed = state != state_ || why != reason_;
  state_ = state;
  reason_ = why;
  since_ = base::utc_now();
  return changed;
}

bool BoardHealth::check_due(Clock::time_point now) const {
  return opt_.checks && !checking_ && state_ != "Maintenance" && now >= next_check_;
}

bool BoardHealth::check_done(bool passed, const std::string& why, Clock::time_point now) {
  checking_ = false;
  if (state_ == "Maintenance") return false;  // an operator took it out meanwhile
  if (passed) {
    backoff_ = opt_.retry;
    next_check_ = now + opt_.interval;
    return set("Good", "health check passed");
  }
  next_check_ = now + backoff_;
  const auto retry_in = backoff_;
  backoff_ = std::min(backoff_ * 2, opt_.max_retry);
  return set("Bad", "health check failed: " + why + " (next check in " + std::to_string(retry_in.count()) + " s)");
}

bool BoardHealth::infrastructure_error(const std::string& why, Clock::time_point now) {
  if (state_ == "Maintenance" || !opt_.checks) return false;
  next_check_ = now;
  return set("Unknown", "infrastructure error: " + why);
}

bool BoardHealth::maintenance(bool on, const std::string& why, Clock::time_point now) {
  if (on == (state_ == "Maintenance")) return false;
  if (on) return set("Maintenance", why);
  next_check_ = now;
  return opt_.checks ? set("Unknown", "out of maintenance: " + why) : set("Good", "out of maintenance: " + why);
}

}  // namespace torq::runner
