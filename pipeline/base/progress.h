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
//
// A command with figures to show (torq-coordinator --spec: tests and jobs
// done, rate, ETA; issue 33) gives a status function: its text is the line
// then, not the latest step. On a terminal (and TERM not "dumb") that line
// is live: redrawn in place every 0.5 s, and a log line written under
// LogLine clears it first; elsewhere (a CI log) it is a plain line each
// interval.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
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
  // The line's text from now on (called on the progress thread).
  void set_status(std::function<std::string()> status);
  // True when the line is drawn in place on a terminal.
  bool live() const { return live_; }

  // Held while writing a line to `stream` (the Progress's, stderr): clears
  // the live line (if any) first, and keeps the progress thread from
  // drawing midway.
  class LogLine {
   public:
    explicit LogLine(std::FILE* stream = stderr);
    ~LogLine();
    LogLine(const LogLine&) = delete;
    LogLine& operator=(const LogLine&) = delete;
   private:
    std::FILE* const locked_;
  };

 private:
  void loop();
  void say_locked(std::chrono::steady_clock::time_point now);
  std::string text_locked(std::chrono::steady_clock::time_point now);

  const std::string tool_;
  std::FILE* const out_;
  const bool live_;
  const std::chrono::milliseconds every_;
  const std::chrono::steady_clock::time_point started_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string step_;
  std::function<std::string()> status_;
  bool drawn_ = false;  // a live line is on the terminal
  bool stop_ = false;
  std::chrono::steady_clock::time_point last_said_;
  std::thread thread_;
};

}  // namespace torq::base
