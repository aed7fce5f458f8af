// The commit writer (coordinator/fleet/commit_writer.h) on a real RocksDB store in
// a temp dir: a batch is in the store, done and its eventfd readable, only
// when its commit has returned; a commit's error comes out of done() with
// nothing of its batch written, and the writer goes on; the destructor
// finishes the batch in flight.
#include <gtest/gtest.h>
#include <poll.h>

#include <string>
#include <vector>

#include "coordinator/fleet/commit_writer.h"
#include "pipeline/base/error.h"
#include "pipeline/wire/codec.h"
#include "tests/unit/temp_dir.h"

using torq::coordinator::CommitWriter;
using namespace torq::pipeline;
using torq::test::TempDir;

namespace {

const std::string kRun = "0123456789abcdef";
const std::string kModel = "fedcba9876543210";

// Commits of layers [from, to), each a valid job with its result.
std::vector<Store::KeyedCommit> batch(int from, int to, const std::string& bad_id_at = "") {
  std::vector<Store::KeyedCommit> out;
  for (int l = from; l < to; ++l) {
    JobSpec j;
    j.id = std::to_string(l) == bad_id_at ? "" : "job-" + std::to_string(l);
    j.model_hash = kModel;
    j.first_node = j.last_node = static_cast<uint32_t>(l);
    j.executor = Executor::kCss;
    ExecResult r;
    r.job_id = j.id;
    r.executor = Executor::kCss;
    r.status = Status::kSuccess;
    r.runtime_ms = 0.5 * l;
    out.push_back({kModel, {l, r, j.id, encode_job(j)}});
  }
  return out;
}

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

int stored(const Store& s, int from, int to) {
  int n = 0;
  for (int l = from; l < to; ++l) {
    const auto rs = s.layer_results(kRun, kModel, l);
    n += rs.size() == 1 && rs[0].runtime_ms == 0.5 * l;
  }
  return n;
}

TEST(CommitWriter, ABatchIsDoneAndItsFdReadableOnlyOnceItIsInTheStore) {
  TempDir dir{"torq-commitw"};
  auto store = Store::open(dir.path() + "/db");
  CommitWriter w(*store, kRun);
  EXPECT_FALSE(w.busy());
  EXPECT_TRUE(w.done(false));  // nothing in flight
  for (int b = 0; b < 10; ++b) {
    w.start(batch(b * 300, (b + 1) * 300));
    EXPECT_TRUE(w.busy());
    ASSERT_TRUE(readable(w.fd(), 30000)) << "batch " << b << " never reported written";
    EXPECT_EQ(stored(*store, b * 300, (b + 1) * 300), 300);  // on disk before it says so
    EXPECT_TRUE(w.done(false));
    EXPECT_FALSE(w.busy());
    EXPECT_FALSE(readable(w.fd(), 0)) << "the fd stays readable after the batch was collected";
  }
  // done(true) waits for the batch itself.
  w.start(batch(3000, 3500));
  EXPECT_TRUE(w.done(true));
  EXPECT_EQ(stored(*store, 0, 3500), 3500);
  EXPECT_EQ(store->jobs(kRun).size(), 3500u);
  for (const auto& [id, st] : store->jobs(kRun)) EXPECT_EQ(st.state, 'D') << id;
}

TEST(CommitWriter, OneBatchAtATime) {
  TempDir dir{"torq-commitw"};
  auto store = Store::open(dir.path() + "/db");
  CommitWriter w(*store, kRun);
  w.start(batch(0, 10));
  EXPECT_THROW(w.start(batch(10, 20)), PipelineError);
  EXPECT_TRUE(w.done(true));
  EXPECT_EQ(stored(*store, 0, 20), 10);
}

TEST(CommitWriter, AFailedCommitIsRethrownByDoneWithNothingOfItsBatchWrittenAndTheWriterGoesOn) {
  TempDir dir{"torq-commitw"};
  auto store = Store::open(dir.path() + "/db");
  CommitWriter w(*store, kRun);
  w.start(batch(0, 50, "37"));  // one commit with an empty job id: the store refuses the batch
  try {
    w.done(true);
    FAIL() << "done() did not rethrow the failed commit";
  } catch (const PipelineError& e) {
    EXPECT_NE(std::string(e.what()).find("job id"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(w.busy());
  EXPECT_EQ(stored(*store, 0, 50), 0);  // all or nothing
  w.start(batch(50, 100));
  EXPECT_TRUE(w.done(true));
  EXPECT_EQ(stored(*store, 50, 100), 50);
}

TEST(CommitWriter, TheDestructorFinishesTheBatchInFlight) {
  TempDir dir{"torq-commitw"};
  {
    auto store = Store::open(dir.path() + "/db");
    {
      CommitWriter w(*store, kRun);
      w.start(batch(0, 2000));
    }  // not collected
    EXPECT_EQ(stored(*store, 0, 2000), 2000);
  }
  auto again = Store::open(dir.path() + "/db");
  EXPECT_EQ(stored(*again, 0, 2000), 2000);
}

}  // namespace
