// The cache writer (coordinator/fleet/cache_writer.h) on a real RocksDB store in a
// temp dir: every entry put is readable at once and after it is written,
// the newest entry of a key wins, and a write error comes out of finish().
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "coordinator/fleet/cache_writer.h"
#include "pipeline/base/error.h"
#include "tests/unit/temp_dir.h"

using torq::coordinator::CacheWriter;
using namespace torq::pipeline;

using torq::test::TempDir;

namespace {

ExecResult result(int i) {
  ExecResult r;
  r.job_id = "job-" + std::to_string(i);
  r.status = i % 3 == 0 ? Status::kDifference : Status::kSuccess;
  r.runtime_ms = 0.25 * i;
  return r;
}

TEST(CacheWriter, EveryEntryIsReadableBeforeAndAfterItIsWritten) {
  TempDir dir{"torq-cachew"};
  {
    auto store = Store::open(dir.path() + "/db");
    CacheWriter w(*store);
    for (int b = 0; b < 20; ++b) {
      CacheWriter::Entries e;
      for (int i = b * 100; i < (b + 1) * 100; ++i) e.emplace_back("key" + std::to_string(i), result(i));
      w.put(e);
      EXPECT_TRUE(e.empty());
      // Some of these are still queued, some written: all are there.
      for (int i = 0; i < (b + 1) * 100; i += 37) {
        auto got = w.get("key" + std::to_string(i));
        ASSERT_TRUE(got) << i;
        EXPECT_EQ(got->job_id, "job-" + std::to_string(i));
        EXPECT_EQ(got->runtime_ms, 0.25 * i);
      }
    }
    EXPECT_FALSE(w.get("key2000"));
    w.finish();
    CacheWriter::Entries late;
    late.emplace_back("late", result(1));
    EXPECT_THROW(w.put(late), PipelineError);
  }
  auto store = Store::open(dir.path() + "/db");  // written for good
  for (int i = 0; i < 2000; ++i) {
    auto got = store->get_cache("key" + std::to_string(i));
    ASSERT_TRUE(got) << i;
    EXPECT_EQ(got->status, result(i).status);
  }
}

TEST(CacheWriter, TheNewestEntryOfAKeyWins) {
  TempDir dir{"torq-cachew"};
  auto store = Store::open(dir.path() + "/db");
  CacheWriter w(*store);
  for (int v = 0; v < 50; ++v) {
    CacheWriter::Entries e{{"same", result(v)}, {"other" + std::to_string(v), result(v)}};
    w.put(e);
    EXPECT_EQ(w.get("same")->job_id, "job-" + std::to_string(v));
  }
  w.finish();
  EXPECT_EQ(store->get_cache("same")->job_id, "job-49");
}

TEST(CacheWriter, AWriteErrorComesOutOfFinish) {
  TempDir dir{"torq-cachew"};
  auto store = Store::open(dir.path() + "/db");
  CacheWriter w(*store);
  CacheWriter::Entries e{{"fine", result(1)}, {"", result(2)}};  // an empty key: the store refuses the batch
  w.put(e);
  try {
    w.finish();
    FAIL() << "finish() did not report the failed write";
  } catch (const PipelineError& err) {
    EXPECT_NE(std::string(err.what()).find("empty cache key"), std::string::npos) << err.what();
  }
  EXPECT_FALSE(store->get_cache("fine"));  // the batch is all or nothing
}

}  // namespace
