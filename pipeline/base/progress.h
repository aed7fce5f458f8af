// Where a long command is: "[progress] <tool>: <step> (<elapsed> s)" on
// stderr (a terminal, or the log it is redirected to) at least every few
// seconds while it runs (issue 31). The command names its current step with
// Progress::note(); a thread says the latest step again whenever nothing was
// said for the interval, so a step that takes long (an import, a
// calibration, a slow job) is still reported. Writes go through stdio's
// locked stderr, so they never race the command's own std::cerr lines.
//
// One Progress is active per process (the command's main makes it); note()
// without one does nothing, so libraries may call it freely. The interval is
// 5 s, or $TORQ_PROGRESS_MS (tests use a short one).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace torq::base {

class Progress {
 public:
  explicit Progress(std::string tool, std::FILE* out = stderr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // The active command's current step ("preparing 3/16: resnet18").
  static void note(const std::string& step);
  // True when a Progress is active (skip building a step's text otherwise).
  static bool active();

 private:
  void loop();
  void say_locked(std::chrono::steady_clock::time_point now);

  const std::string tool_;
  std::FILE* const out_;
  const std::chrono::milliseconds every_;
  const std::chrono::steady_clock::time_point started_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string step_;
  bool stop_ = false;
  std::chrono::steady_clock::time_point last_said_;
  std::thread thread_;
};

}  // namespace torq::base
