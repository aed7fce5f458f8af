// Length-prefixed frames over a real pipe (worker/runner/frame_io.h): what
// one end writes the other reads back byte for byte, including frames far
// larger than the pipe's buffer, an empty frame, writes a signal cuts short
// inside the header and inside the payload, and the errors of a truncated
// frame, one over the cap, and a peer gone.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "worker/runner/frame_io.h"

using torq::runner::read_frame;
using torq::runner::write_frame;

namespace {

struct Pipe {
  std::atomic<int> r{-1}, w{-1};
  Pipe() {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (int fd = r.exchange(-1); fd >= 0) close(fd);
  }
  void close_write() {
    if (int fd = w.exchange(-1); fd >= 0) close(fd);
  }
  // Bytes written and not yet read.
  int queued() const {
    int n = 0;
    return ioctl(r, FIONREAD, &n) == 0 ? n : -1;
  }
};

// For a test's scope: SIGPIPE ignored (as LocalPool and torq-worker ignore
// it), so a write to a gone reader fails instead of killing the binary; and
// an alarm, so a writer and reader blocked on each other end the binary
// after 60 s, not ctest's timeout after 25 min.
struct Guard {
  struct sigaction old_pipe {};
  Guard() {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old_pipe);
    alarm(60);
  }
  ~Guard() {
    alarm(0);
    sigaction(SIGPIPE, &old_pipe, nullptr);
  }
};

// A writer thread that closes the write end when done and is joined on
// every path: a failed assertion in the reader closes the read end first,
// so a writer blocked on a full pipe returns (EPIPE) instead of hanging.
class Writer {
 public:
  Writer(Pipe& p, std::function<bool()> body) : p_(p), t_([this, body] {
    ok_ = body();
    p_.close_write();
  }) {}
  ~Writer() {
    if (!t_.joinable()) return;
    p_.close_read();
    t_.join();
  }
  bool join() {
    t_.join();
    return ok_;
  }
  pthread_t handle() { return t_.native_handle(); }

 private:
  Pipe& p_;
  std::atomic<bool> ok_{false};
  std::thread t_;
};

std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7) & 0xff);
  return s;
}

// Waits until the pipe holds `n` bytes (the writer blocked on it full).
bool wait_queued(const Pipe& p, int n) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (p.queued() != n) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

std::atomic<int> interrupts{0};
void on_usr1(int) { ++interrupts; }

}  // namespace

TEST(FrameIo, FramesOfEverySizeArriveWholeAndInOrder) {
  Guard g;
  Pipe p;
  const std::vector<std::string> frames = {pattern(1, 1), std::string(), pattern(4096, 2), pattern(3 << 20, 3),
                                           pattern(65537, 4), pattern(3, 5)};
  Writer writer(p, [&] {
    for (const auto& f : frames)
      if (!write_frame(p.w, f)) return false;
    return true;
  });
  for (size_t i = 0; i < frames.size(); ++i) {
    auto got = read_frame(p.r, 8u << 20);
    ASSERT_TRUE(got.has_value()) << "frame " << i;
    ASSERT_EQ(got->size(), frames[i].size()) << "frame " << i;
    EXPECT_TRUE(*got == frames[i]) << "frame " << i << " differs";
  }
  EXPECT_FALSE(read_frame(p.r, 8u << 20).has_value());  // clean EOF after the last frame
  EXPECT_TRUE(writer.join());
}

// A blocking pipe write returns short only when a signal arrives after part
// of it went in. Linux fills the last page of a pipe before it blocks, so a
// pipe left 2 bytes short of full takes 2 bytes of the next frame's header
// (a write whose length is 2 past a page multiple), and a full pipe blocks a
// large frame after its first 64 KiB: a signal then cuts each write there.
TEST(FrameIo, AWriteASignalCutsShortFinishesTheFrame) {
  Guard g;
  struct Usr1 {  // the handler, for this test's scope
    struct sigaction old {};
    Usr1() {
      struct sigaction usr {};
      usr.sa_handler = on_usr1;  // no SA_RESTART: the write returns what it wrote
      sigaction(SIGUSR1, &usr, &old);
    }
    ~Usr1() { sigaction(SIGUSR1, &old, nullptr); }
  } usr1;
  Pipe p;
  const int cap = fcntl(p.w, F_GETPIPE_SZ);
  ASSERT_GE(cap, 8192);
  const std::string fill = pattern(static_cast<size_t>(cap) - 2 - 4, 1);  // leaves 2 bytes free
  const std::string in_header = pattern(4096 + 2 - 4, 2);                // cut after 2 header bytes
  const std::string in_payload = pattern(1 << 20, 3);                    // cut inside its payload
  const std::string after = pattern(10, 4);
  std::atomic<int> stage{0};
  Writer writer(p, [&] {
    if (!write_frame(p.w, fill)) return false;
    stage = 1;
    if (!write_frame(p.w, in_header)) return false;
    stage = 2;
    return write_frame(p.w, in_payload) && write_frame(p.w, after);
  });
  // The 2 header bytes are in and the writer is blocked: cut it short there.
  ASSERT_TRUE(wait_queued(p, cap)) << "the pipe holds " << p.queued() << " of " << cap << " bytes";
  const int before = interrupts;
  pthread_kill(writer.handle(), SIGUSR1);
  auto got = read_frame(p.r, 4u << 20);
  ASSERT_TRUE(got && *got == fill);
  got = read_frame(p.r, 4u << 20);
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == in_header) << "the frame cut inside its header came out " << got->size() << " bytes";
  // The next frame fills the now empty pipe and blocks: cut it short again.
  while (stage < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(wait_queued(p, cap)) << "the pipe holds " << p.queued() << " of " << cap << " bytes";
  pthread_kill(writer.handle(), SIGUSR1);
  got = read_frame(p.r, 4u << 20);
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == in_payload) << "the frame cut inside its payload came out " << got->size() << " bytes";
  got = read_frame(p.r, 4u << 20);
  ASSERT_TRUE(got && *got == after) << "the frame after them is out of step";
  EXPECT_TRUE(writer.join());
  EXPECT_EQ(interrupts - before, 2);
}

TEST(FrameIo, TruncatedFramesAndOversizedOnesAreErrors) {
  Guard g;
  {
    Pipe p;
    const char partial_header[2] = {5, 0};
    ASSERT_EQ(write(p.w, partial_header, 2), 2);
    p.close_write();
    EXPECT_THROW(read_frame(p.r, 1024), std::runtime_error);
  }
  {
    Pipe p;
    const char header_of_10[4] = {10, 0, 0, 0};
    ASSERT_EQ(write(p.w, header_of_10, 4), 4);
    ASSERT_EQ(write(p.w, "abc", 3), 3);
    p.close_write();
    try {
      read_frame(p.r, 1024);
      FAIL() << "a 3-byte payload of a 10-byte frame was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("truncated frame"), std::string::npos) << e.what();
    }
  }
  {
    Pipe p;
    ASSERT_TRUE(write_frame(p.w, pattern(2000, 6)));
    try {
      read_frame(p.r, 1999);
      FAIL() << "a frame over the cap was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("exceeds the cap"), std::string::npos) << e.what();
    }
  }
}

TEST(FrameIo, WritingToAGonePeerReturnsFalse) {
  Guard g;
  Pipe p;
  p.close_read();
  EXPECT_FALSE(write_frame(p.w, pattern(100, 7)));
  EXPECT_FALSE(write_frame(p.w, std::string()));
}
