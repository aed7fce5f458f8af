// Length-prefixed frames over a real pipe (worker/runner/frame_io.h): what
// one end writes the other reads back byte for byte, including frames far
// larger than the pipe's buffer (the writer's partial writes), an empty
// frame, and the errors of a truncated frame, one over the cap, and a peer
// gone.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "worker/runner/frame_io.h"

using torq::runner::read_frame;
using torq::runner::write_frame;

namespace {

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    if (r >= 0) close(r);
    if (w >= 0) close(w);
  }
  void close_write() {
    close(w);
    w = -1;
  }
};

std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7) & 0xff);
  return s;
}

}  // namespace

TEST(FrameIo, FramesOfEverySizeArriveWholeAndInOrder) {
  // A writer that got its offsets wrong leaves both ends blocked: SIGALRM
  // ends the test binary after 60 s rather than ctest's timeout after 25 min.
  alarm(60);
  Pipe p;
  // 3 MiB: about fifty times a pipe's 64 KiB, so writev returns short and
  // the rest of the frame follows from the right offset.
  const std::vector<std::string> frames = {pattern(1, 1), std::string(), pattern(4096, 2), pattern(3 << 20, 3),
                                           pattern(65537, 4), pattern(3, 5)};
  std::thread writer([&] {
    for (const auto& f : frames) ASSERT_TRUE(write_frame(p.w, f));
    p.close_write();
  });
  for (size_t i = 0; i < frames.size(); ++i) {
    auto got = read_frame(p.r, 8u << 20);
    ASSERT_TRUE(got.has_value()) << "frame " << i;
    EXPECT_EQ(got->size(), frames[i].size()) << "frame " << i;
    EXPECT_TRUE(*got == frames[i]) << "frame " << i << " differs";
  }
  EXPECT_FALSE(read_frame(p.r, 8u << 20).has_value());  // clean EOF after the last frame
  writer.join();
  alarm(0);
}

TEST(FrameIo, TruncatedFramesAndOversizedOnesAreErrors) {
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
  // A closed read end raises SIGPIPE; ignored here as LocalPool and
  // torq-worker ignore it, so the write reports the peer gone.
  struct sigaction ign {}, old {};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &ign, &old), 0);
  Pipe p;
  close(p.r);
  p.r = -1;
  EXPECT_FALSE(write_frame(p.w, pattern(100, 7)));
  EXPECT_FALSE(write_frame(p.w, std::string()));
  sigaction(SIGPIPE, &old, nullptr);
}
