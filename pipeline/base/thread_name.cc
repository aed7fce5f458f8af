#include "pipeline/base/thread_name.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

namespace torq::base {

namespace {

std::mutex ended_mu;
std::map<std::string, double>& ended() {  // name -> CPU s of its ended threads
  static auto* m = new std::map<std::string, double>();  // outlives every thread's exit
  return *m;
}

// Adds the thread's CPU to ended() under its name when the thread ends.
struct EndRecorder {
  std::string name;
  ~EndRecorder() {
    timespec t{};
    if (name.empty() || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return;
    const std::lock_guard<std::mutex> lock(ended_mu);
    ended()[name] += static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
  }
};

// /proc/self/task/<tid>/stat: its comm and utime + stime in seconds; false
// when the thread is gone or the file is not what proc(5) says.
bool read_task(const std::filesystem::path& stat, std::string* comm, double* seconds) {
  std::ifstream f(stat);
  const std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t open = s.find('('), close = s.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  unsigned long utime = 0, stime = 0;  // fields 14 and 15, in clock ticks
  if (std::sscanf(s.c_str() + close + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
    return false;
  *comm = s.substr(open + 1, close - open - 1);
  *seconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return true;
}

}  // namespace

void name_this_thread(std::string_view name) {
  const std::string cut(name.substr(0, 15));
  pthread_setname_np(pthread_self(), cut.c_str());
  thread_local EndRecorder recorder;
  recorder.name = cut;
}

std::vector<std::pair<std::string, double>> cpu_by_thread() {
  std::map<std::string, double> by_name;
  {
    const std::lock_guard<std::mutex> lock(ended_mu);
    by_name = ended();
  }
  std::error_code ec;
  const std::string main_tid = std::to_string(getpid());
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::string comm;
    double seconds = 0;
    if (!read_task(task.path() / "stat", &comm, &seconds)) continue;
    by_name[task.path().filename() == main_tid ? "main" : comm] += seconds;
  }
  if (ec) return {};
  std::vector<std::pair<std::string, double>> out(by_name.begin(), by_name.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace torq::base
