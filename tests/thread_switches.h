// How often the calling thread has blocked (voluntary context switches, from
// /proc/thread-self/status): a waiting loop that wakes on a timer shows as
// one switch per tick, one that sleeps until something happens as a few.
#pragma once

#include <chrono>
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

// What a wait cost: its wall time and how often the thread blocked in it.
struct Waited {
  double ms = 0;
  long switches = 0;
};

template <class F>
Waited measure_wait(F&& wait) {
  const long before = thread_voluntary_switches();
  const auto t0 = std::chrono::steady_clock::now();
  wait();
  Waited w;
  w.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  w.switches = before < 0 ? -1 : thread_voluntary_switches() - before;
  return w;
}

}  // namespace torq::testing
