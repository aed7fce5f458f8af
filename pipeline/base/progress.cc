#include "pipeline/base/progress.h"
#include "pipeline/base/thread_name.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

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

// A terminal that understands "\r\033[K" (carriage return, erase to the end of the line).
bool is_live_terminal(std::FILE* out) {
  const char* term = std::getenv("TERM");
  return isatty(fileno(out)) == 1 && term && *term && std::strcmp(term, "dumb") != 0;
}

constexpr std::chrono::milliseconds kLiveEvery{500};

// `text` cut to the terminal's width less one column: "\r\033[K" clears one
// row, and a line that wrapped would leave its first rows behind.
std::string fit_terminal(std::FILE* out, const std::string& text) {
  winsize ws{};
  if (ioctl(fileno(out), TIOCGWINSZ, &ws) != 0 || ws.ws_col < 2) return text;
  std::string cut;
  size_t columns = 0;
  for (const char c : text) {
    const bool starts_character = (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // UTF-8 lead or ASCII
    if (starts_character && ++columns >= ws.ws_col) break;
    cut += c;
  }
  return cut;
}

}  // namespace

Progress::Progress(std::string tool, std::FILE* out)
    : tool_(std::move(tool)),
      out_(out),
      live_(is_live_terminal(out)),
      every_(interval()),
      started_(std::chrono::steady_clock::now()),
      last_said_(started_) {
  {
    std::lock_guard<std::mutex> g(g_active_mu);
    g_active = this;
  }
  thread_ = std::thread([this] {
    name_this_thread("torq-progress");
    loop();
  });
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
  flockfile(out_);
  if (drawn_) std::fputs("\r\033[K", out_);
  funlockfile(out_);
}

void Progress::set_status(std::function<std::string()> status) {
  {
    std::lock_guard<std::mutex> l(mu_);
    status_ = std::move(status);
  }
  cv_.notify_all();  // the thread may be waiting out the plain interval: the live one is shorter
}

// The stream first, then the active Progress: a Progress being destroyed
// has left g_active already, or waits in its destructor for this stream
// lock before it goes. No mutex is taken under the stream lock (a thread in
// note() holds g_active_mu and waits for mu_, which the progress thread
// holds while it waits for the stream).
Progress::LogLine::LogLine(std::FILE* stream) : locked_(stream) {
  flockfile(locked_);
  Progress* p = g_active.load();
  if (p && p->out_ == locked_ && p->drawn_) {
    std::fputs("\r\033[K", locked_);
    p->drawn_ = false;  // drawn again at the next tick
  }
}

Progress::LogLine::~LogLine() {
  std::fflush(locked_);
  funlockfile(locked_);
}

bool Progress::active() { return g_active.load(std::memory_order_relaxed) != nullptr; }

void Progress::note(const std::string& step) {
  std::lock_guard<std::mutex> g(g_active_mu);
  Progress* p = g_active;
  if (!p) return;
  std::lock_guard<std::mutex> l(p->mu_);
  p->step_ = step;
}

std::string Progress::text_locked(std::chrono::steady_clock::time_point now) {
  const long secs = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(now - started_).count());
  return "[progress] " + tool_ + ": " + (status_ ? status_() : step_) + " (" + std::to_string(secs) + " s)";
}

void Progress::say_locked(std::chrono::steady_clock::time_point now) {
  const std::string text = text_locked(now);
  flockfile(out_);
  if (live_ && status_) {
    std::fprintf(out_, "\r\033[K%s", fit_terminal(out_, text).c_str());
    drawn_ = true;
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
  funlockfile(out_);
  last_said_ = now;
}

void Progress::loop() {
  std::unique_lock<std::mutex> l(mu_);
  const auto interval = [this] { return live_ && status_ ? kLiveEvery : every_; };
  while (!stop_) {
    // A status given meanwhile (set_status) wakes the wait: its interval may be the live one.
    const bool had_status = static_cast<bool>(status_);
    cv_.wait_until(l, last_said_ + interval(), [&] { return stop_ || static_cast<bool>(status_) != had_status; });
    if (stop_) break;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_said_ >= interval() && (status_ || !step_.empty())) say_locked(now);
    else if (step_.empty() && !status_) last_said_ = now;  // nothing to say yet
  }
}

}  // namespace torq::base
