#include "coordinator/fleet/commit_writer.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "pipeline/base/error.h"
#include "pipeline/base/thread_name.h"

namespace torq::coordinator {

CommitWriter::CommitWriter(pipeline::Store& store, std::string run) : store_(store), run_(std::move(run)) {
  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) throw pipeline::PipelineError(std::string("commit writer: eventfd: ") + std::strerror(errno));
  thread_ = std::thread([this] {
    base::name_this_thread("torq-commit");
    loop();
  });
}

CommitWriter::~CommitWriter() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();  // the loop finishes a batch it holds first
  close(event_fd_);
}

void CommitWriter::start(std::vector<pipeline::Store::KeyedCommit> commits) {
  if (busy_) throw pipeline::PipelineError("commit writer: a batch is already in flight");
  {
    std::lock_guard<std::mutex> lk(mu_);
    batch_ = std::move(commits);
    has_batch_ = true;
    written_ = false;
  }
  busy_ = true;
  cv_.notify_all();
}

bool CommitWriter::done(bool wait) {
  if (!busy_) return true;
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lk(mu_);
    if (wait) cv_.wait(lk, [&] { return written_; });
    if (!written_) return false;
    written_ = false;
    error = error_;
    error_ = nullptr;
  }
  uint64_t n;
  while (read(event_fd_, &n, sizeof n) < 0 && errno == EINTR) {
  }
  busy_ = false;
  if (error) std::rethrow_exception(error);
  return true;
}

void CommitWriter::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return closing_ || has_batch_; });
    if (!has_batch_) return;  // closing, nothing held
    std::vector<pipeline::Store::KeyedCommit> batch;
    batch.swap(batch_);
    has_batch_ = false;
    lk.unlock();
    std::exception_ptr error;
    try {
      store_.commit_results(run_, batch);
    } catch (...) {
      error = std::current_exception();
    }
    lk.lock();
    error_ = error;
    written_ = true;
    cv_.notify_all();
    const uint64_t one = 1;
    while (write(event_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace torq::coordinator
