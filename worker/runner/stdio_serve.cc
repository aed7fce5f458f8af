#include "worker/runner/stdio_serve.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "pipeline/wire/codec.h"
#include "worker/runner/frame_io.h"

namespace torq::runner {

void faults_from_env(StdioServeOptions* o) {
  if (const char* delay = std::getenv("TORQ_WORKER_DELAY_MS")) o->delay_ms = std::atoi(delay);
  if (const char* env = std::getenv("TORQ_WORKER_FAULT")) {
    std::stringstream fs(env);
    std::string item;
    while (std::getline(fs, item, ',')) {
      auto c = item.find(':');
      if (c != std::string::npos) o->faults.emplace_back(item.substr(0, c), item.substr(c + 1));
    }
  }
}

namespace {

// One job: decode, the injected faults, the run; never throws.
pipeline::ExecResult run_frame(JobRunner& runner, const StdioServeOptions& o, const std::string& frame) {
  pipeline::ExecResult r;
  try {
    const pipeline::JobSpec job = pipeline::decode_job(frame.data(), frame.size());
    r.job_id = job.id;
    r.executor = job.executor;
    for (const auto& [kind, needle] : o.faults)
      if (job.id.find(needle) != std::string::npos && (kind == "hang" || kind == "crash")) {
        // Said on stderr (the worker's log) so a test can wait for it.
        std::fprintf(stderr, "[fault] %s on %s\n", kind == "hang" ? "hanging" : "crashing", job.id.c_str());
        std::fflush(stderr);
        if (kind == "hang")
          for (;;) pause();
        std::abort();
      }
    if (o.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.delay_ms));
    r = runner.run(job);
  } catch (const std::exception& e) {
    r.status = pipeline::Status::kError;
    r.error_class = "invalid_job";
    r.error_message = e.what();
    r.worker_id = o.id;
  }
  return r;
}

// Jobs read but not started, for the lanes.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> frames;
  bool closed = false;

  void push(std::string f) {
    {
      std::lock_guard<std::mutex> lk(mu);
      frames.push_back(std::move(f));
    }
    cv.notify_one();
  }
  void close() {
    {
      std::lock_guard<std::mutex> lk(mu);
      closed = true;
    }
    cv.notify_all();
  }
  std::optional<std::string> pop() {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return closed || !frames.empty(); });
    if (frames.empty()) return std::nullopt;
    std::string f = std::move(frames.front());
    frames.pop_front();
    return f;
  }
};

}  // namespace

int serve_stdio(JobRunner& runner, const StdioServeOptions& o) {
  Inbox inbox;
  std::mutex out_mu;
  auto lane = [&] {
    while (auto frame = inbox.pop()) {
      const std::string out = pipeline::encode_result(run_frame(runner, o, *frame));
      std::lock_guard<std::mutex> lk(out_mu);
      if (!write_frame(STDOUT_FILENO, out)) _exit(0);  // the pool is gone
    }
  };
  std::vector<std::thread> lanes;
  for (int i = 0; i < std::max(1, o.lanes); ++i) lanes.emplace_back(lane);
  int rc = 0;
  for (;;) {
    std::optional<std::string> frame;
    try {
      frame = read_frame(STDIN_FILENO, pipeline::kMaxMessageBytes);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "torq-worker %s: %s; exiting\n", o.id.c_str(), e.what());
      rc = 2;
      break;
    }
    if (!frame) break;  // parent closed the pipe
    inbox.push(std::move(*frame));
  }
  inbox.close();
  for (auto& t : lanes) t.join();
  return rc;
}

}  // namespace torq::runner
