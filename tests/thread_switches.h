// How often the calling thread has blocked (voluntary context switches, from
// /proc/thread-self/status): a waiting loop that wakes on a timer shows as
// one switch per tick, one that sleeps until something happens as a few.
#pragma once

#include <fstream>
#include <string>

namespace torq::testing {

inline long thread_voluntary_switches() {
  std::ifstream in("/proc/thread-self/status");
  const std::string key = "voluntary_ctxt_switches:";
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  return -1;
}

}  // namespace torq::testing
