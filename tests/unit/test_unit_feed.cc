// UnitFeed (coordinator/fleet/unit_feed.h): the preparing thread's units
// reach the serving loop in order, and its eventfd is readable exactly
// while something waits to be taken, across threads.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <string>
#include <thread>

#include "coordinator/fleet/unit_feed.h"

namespace torq::coordinator {
namespace {

bool readable(int fd, int wait_ms = 0) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, wait_ms) == 1 && (p.revents & POLLIN);
}

RunUnit unit(const std::string& label) {
  RunUnit u;
  u.label = label;
  return u;
}

TEST(UnitFeed, UnitsComeOutInOrderAndTheFdSaysWhenThereAreAny) {
  UnitFeed feed;
  std::deque<RunUnit> got;
  EXPECT_FALSE(readable(feed.fd()));
  EXPECT_EQ(feed.take(&got), 0u);
  feed.push(unit("a"));
  feed.push(unit("b"));
  EXPECT_TRUE(readable(feed.fd()));
  ASSERT_EQ(feed.take(&got), 2u);
  EXPECT_EQ(got[0].label, "a");
  EXPECT_EQ(got[1].label, "b");
  EXPECT_FALSE(readable(feed.fd())) << "drained by the take";
  EXPECT_EQ(feed.take(&got), 0u);
  EXPECT_TRUE(feed.open());
  feed.close();
  EXPECT_TRUE(readable(feed.fd()));
  EXPECT_EQ(feed.take(&got), 0u);
  EXPECT_FALSE(readable(feed.fd()));
  EXPECT_FALSE(feed.open());
}

// A serving loop as the broker's: poll the fd, take. The preparing thread
// pushes a unit and waits for the loop to take it: a push whose wake-up
// were lost would leave both waiting. And the fd is never left readable
// with nothing to take (a loop that spun would wake far more often than
// units arrive).
TEST(UnitFeed, AServingLoopIsWokenForEveryUnitWithoutSpinning) {
  UnitFeed feed;
  constexpr int kUnits = 2000;
  std::atomic<int> taken{0};
  std::atomic<bool> stuck{false};
  std::thread producer([&] {
    for (int i = 0; i < kUnits && !stuck; ++i) {
      feed.push(unit(std::to_string(i)));
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (taken.load() <= i && !stuck)
        if (std::chrono::steady_clock::now() > until) stuck = true;
        else std::this_thread::yield();
    }
    feed.close();
  });
  std::deque<RunUnit> got;
  size_t wakes = 0, empty_wakes = 0;
  while (feed.open() && !stuck) {
    if (!readable(feed.fd(), 5000)) {
      stuck = true;
      break;
    }
    ++wakes;
    empty_wakes += feed.take(&got) == 0;
    taken = static_cast<int>(got.size());
  }
  producer.join();
  EXPECT_FALSE(stuck) << "a push did not wake the loop (" << got.size() << " units taken)";
  feed.take(&got);
  ASSERT_EQ(got.size(), static_cast<size_t>(kUnits));
  for (int i = 0; i < kUnits; ++i) ASSERT_EQ(got[i].label, std::to_string(i));
  EXPECT_FALSE(readable(feed.fd()));
  // Woken only with something to take, or by the close.
  EXPECT_LE(empty_wakes, 1u) << wakes << " wakes";
}

}  // namespace
}  // namespace torq::coordinator
