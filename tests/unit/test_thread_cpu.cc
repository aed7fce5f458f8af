// base::cpu_by_thread (pipeline/base/thread_name.h): a process's CPU by
// thread name, for live threads and for named threads that have ended
// (issue 32: where the coordinator's CPU goes, printed in its summary).
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>

#include "pipeline/base/thread_name.h"

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// Spins on this thread until it has used `seconds` of CPU.
void burn(double seconds) {
  const double until = thread_cpu_s() + seconds;
  volatile unsigned long x = 0;
  while (thread_cpu_s() < until)
    for (int i = 0; i < 10000; ++i) x = x + static_cast<unsigned long>(i);
}

std::map<std::string, double> by_name() {
  std::map<std::string, double> m;
  for (const auto& [name, s] : torq::base::cpu_by_thread()) m[name] = s;
  return m;
}

}  // namespace

TEST(ThreadCpu, EndedNamedThreadsAndLiveOnesAreCountedByName) {
  // Two threads of one name that end, and one that is still running.
  for (int i = 0; i < 2; ++i)
    std::thread([] {
      torq::base::name_this_thread("torq-test-ended");
      burn(0.15);
    }).join();
  std::atomic<bool> burnt{false}, done{false};
  std::thread live([&] {
    torq::base::name_this_thread("torq-test-live");
    burn(0.1);
    burnt = true;
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  while (!burnt) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto m = by_name();
  done = true;
  live.join();
  ASSERT_TRUE(m.count("torq-test-ended")) << "ended named threads missing";
  EXPECT_GE(m.at("torq-test-ended"), 0.29);  // both, their own clocks
  EXPECT_LT(m.at("torq-test-ended"), 0.6);
  ASSERT_TRUE(m.count("torq-test-live")) << "a live thread missing";
  EXPECT_GE(m.at("torq-test-live"), 0.08);  // /proc's clock ticks (10 ms)
  ASSERT_TRUE(m.count("main"));
  // Largest first.
  const auto list = torq::base::cpu_by_thread();
  for (size_t i = 1; i < list.size(); ++i) EXPECT_GE(list[i - 1].second, list[i].second) << list[i].first;
}
