#include "pipeline/base/progress.h"

#include <atomic>
#include <cstdlib>

namespace torq::base {

namespace {

std::atomic<Progress*> g_active{nullptr};
std::mutex g_active_mu;  // note() against a Progress being destroyed

std::chrono::milliseconds interval() {
  if (const char* e = std::getenv("TORQ_PROGRESS_MS")) {
    char* end = nullptr;
    const long ms = std::strtol(e, &end, 10);
    if (end != e && *end == '\0' && ms > 0) return std::chrono::milliseconds(ms);
  }
  return std::chrono::seconds(5);
}

}  // namespace

Progress::Progress(std::string tool, std::FILE* out)
    : tool_(std::move(tool)), out_(out), every_(interval()), started_(std::chrono::steady_clock::now()),
      last_said_(started_) {
  {
    std::lock_guard<std::mutex> g(g_active_mu);
    g_active = this;
  }
  thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> g(g_active_mu);
    if (g_active == this) g_active = nullptr;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool Progress::active() { return g_active.load(std::memory_order_relaxed) != nullptr; }

void Progress::note(const std::string& step) {
  std::lock_guard<std::mutex> g(g_active_mu);
  Progress* p = g_active;
  if (!p) return;
  std::lock_guard<std::mutex> l(p->mu_);
  p->step_ = step;
}

void Progress::say_locked(std::chrono::steady_clock::time_point now) {
  const long secs = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(now - started_).count());
  std::fprintf(out_, "[progress] %s: %s (%ld s)\n", tool_.c_str(), step_.c_str(), secs);
  std::fflush(out_);
  last_said_ = now;
}

void Progress::loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_until(l, last_said_ + every_, [this] { return stop_; });
    if (stop_) break;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_said_ >= every_ && !step_.empty()) say_locked(now);
    else if (step_.empty()) last_said_ = now;  // nothing to say yet
  }
}

}  // namespace torq::base
