// The durable store (pipeline/store/store.h) on a real RocksDB in a temp dir:
// per-executor merging and erasing, reopen, atomic commit, cache, corrupt
// values, open failures, and a writer killed with SIGKILL mid-run.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/merge_operator.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "pipeline/wire/codec.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_merge.h"
#include "tests/unit/temp_dir.h"

using namespace torq::pipeline;

using torq::test::TempDir;

namespace {

ExecResult result(Executor e, Status s, const std::string& job, double max_abs = 0) {
  ExecResult r;
  r.job_id = job;
  r.executor = e;
  r.status = s;
  r.max_abs = max_abs;
  r.worker_id = "w1";
  r.runtime_ms = 1.5;
  r.timing_runs = 3;
  OutputDiff d;
  d.name = "y";
  d.max_abs = max_abs;
  d.size = 16;
  r.outputs.push_back(d);
  if (s == Status::kError) {
    r.error_class = "unsupported";
    r.error_message = "bf16 MaxPool not supported on nss";
  }
  return r;
}

std::string job(const std::string& id, Executor e = Executor::kNss) {
  JobSpec j;
  j.id = id;
  j.model_hash = "abc123";
  j.executor = e;
  return encode_job(j);
}

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const PipelineError& e) {
    return e.what();
  }
  return "<no PipelineError>";
}

// Writes raw values into the store's column families, bypassing Store.
void raw_write(const std::string& dir, const std::function<void(rocksdb::DB*, rocksdb::ColumnFamilyHandle*)>& fn) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names).ok());
  rocksdb::ColumnFamilyOptions merged;
  merged.merge_operator = store_detail::make_layer_record_merge_operator();
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  size_t results = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    descs.emplace_back(names[i], names[i] == "results" ? merged : rocksdb::ColumnFamilyOptions());
    if (names[i] == "results") results = i;
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), dir, descs, &handles, &db).ok());
  fn(db, handles[results]);
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  delete db;
}

TEST(Store, MergeKeepsOneResultPerExecutorInPriorityOrder) {
  TempDir d{"torq-store"};
  auto s = Store::open(d.path());
  s->merge_result("run1", "h", 3, result(Executor::kNss, Status::kDifference, "j-nss-1", 0.5));
  s->merge_result("run1", "h", 3, result(Executor::kCss, Status::kSuccess, "j-css", 0.001));
  s->merge_result("run1", "h", 3, result(Executor::kNss, Status::kSuccess, "j-nss-2", 0.002));
  const auto rs = s->layer_results("run1", "h", 3);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].executor, Executor::kNss);
  EXPECT_EQ(rs[0].job_id, "j-nss-2");
  EXPECT_EQ(rs[0].status, Status::kSuccess);
  EXPECT_DOUBLE_EQ(rs[0].max_abs, 0.002);
  EXPECT_EQ(rs[1].executor, Executor::kCss);
  EXPECT_EQ(rs[1].job_id, "j-css");
  ASSERT_EQ(rs[1].outputs.size(), 1u);
  EXPECT_EQ(rs[1].outputs[0].name, "y");
  EXPECT_EQ(rs[1].outputs[0].size, 16);

  // host merged before nss still comes out after it.
  s->merge_result("run1", "h", 4, result(Executor::kHost, Status::kSuccess, "j-host"));
  s->merge_result("run1", "h", 4, result(Executor::kNss, Status::kError, "j-nss"));
  const auto rs4 = s->layer_results("run1", "h", 4);
  ASSERT_EQ(rs4.size(), 2u);
  EXPECT_EQ(rs4[0].executor, Executor::kNss);
  EXPECT_EQ(rs4[0].error_class, "unsupported");
  EXPECT_EQ(rs4[1].executor, Executor::kHost);

  EXPECT_TRUE(s->layer_results("run1", "h", 5).empty());
  EXPECT_TRUE(s->layer_results("run2", "h", 3).empty());
}

TEST(Store, ALayerCursorReadsWhatPointLookupsRead) {
  TempDir d{"torq-store"};
  auto s = Store::open(d.path());
  // Layers of run r, model h, with gaps, between neighbours the cursor must
  // not read: a model sorting before (g) and after (hx), another run (r2).
  for (int l = 0; l < 200; ++l) {
    if (l % 3 == 1) continue;
    s->merge_result("r", "h", l, result(Executor::kNss, Status::kSuccess, "n" + std::to_string(l)));
    if (l % 5 == 0) s->merge_result("r", "h", l, result(Executor::kHost, Status::kError, "x" + std::to_string(l)));
  }
  for (const char* other : {"g", "hx"}) s->merge_result("r", other, 1, result(Executor::kCss, Status::kSuccess, other));
  s->merge_result("r2", "h", 1, result(Executor::kCss, Status::kSuccess, "r2"));
  const auto same = [&](Store::LayerCursor& c, int l) {
    const auto a = c.at(l);
    const auto b = s->layer_results("r", "h", l);
    ASSERT_EQ(a.size(), b.size()) << "layer " << l;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].job_id, b[i].job_id) << "layer " << l;
      EXPECT_EQ(a[i].executor, b[i].executor) << "layer " << l;
      EXPECT_EQ(a[i].status, b[i].status) << "layer " << l;
    }
  };
  auto c = s->layer_cursor("r", "h");
  for (int l = 0; l < 230; ++l) same(*c, l);        // in order, past the last layer
  for (int l = 229; l >= 0; l -= 7) same(*c, l);    // backwards
  for (int l : {3, 150, 151, 4, 199, 0, 2, 1}) same(*c, l);  // jumps
  EXPECT_EQ(c->at(1).size(), 0u);
  EXPECT_EQ(c->at(0).size(), 2u);
  EXPECT_EQ(c->at(5).size(), 2u);
  EXPECT_EQ(c->at(5)[1].job_id, "x5");

  // It reads the store as it was when it last renewed itself, at most
  // kRenewAfterMs ago: a result merged since is there after that.
  s->merge_result("r", "h", 1, result(Executor::kCss, Status::kSuccess, "late"));
  std::this_thread::sleep_for(std::chrono::milliseconds(Store::LayerCursor::kRenewAfterMs + 100));
  ASSERT_EQ(c->at(1).size(), 1u);
  EXPECT_EQ(c->at(1)[0].job_id, "late");
  EXPECT_THROW(s->layer_cursor("r", "a/b"), PipelineError);
}

TEST(Store, EraseResultsInOneWriteRemovesTheGivenExecutorsOfTheGivenLayers) {
  TempDir d{"torq-store"};
  auto s = Store::open(d.path());
  for (int l = 0; l < 3; ++l)
    for (Executor e : {Executor::kNss, Executor::kCss, Executor::kHost})
      s->merge_result("r", "h", l, result(e, Status::kSuccess, std::to_string(l)));
  s->merge_result("r", "other", 0, result(Executor::kNss, Status::kSuccess, "x"));
  s->erase_results("r", "h", {0, 2}, {Executor::kNss, Executor::kHost});
  s->erase_results("r", "h", {}, {Executor::kCss});  // nothing to erase: no-op
  auto l0 = s->layer_results("r", "h", 0);
  ASSERT_EQ(l0.size(), 1u);
  EXPECT_EQ(l0[0].executor, Executor::kCss);
  EXPECT_EQ(s->layer_results("r", "h", 1).size(), 3u);
  auto l2 = s->layer_results("r", "h", 2);
  ASSERT_EQ(l2.size(), 1u);
  EXPECT_EQ(l2[0].executor, Executor::kCss);
  EXPECT_EQ(s->layer_results("r", "other", 0).size(), 1u);
}

TEST(Store, EraseRemovesOneExecutorAndEmptyLayersVanish) {
  TempDir d{"torq-store"};
  auto s = Store::open(d.path());
  s->merge_result("r", "h", 0, result(Executor::kNss, Status::kSuccess, "a"));
  s->merge_result("r", "h", 0, result(Executor::kCss, Status::kSuccess, "b"));
  s->merge_result("r", "h", 1, result(Executor::kHost, Status::kSuccess, "c"));
  s->erase_result("r", "h", 0, Executor::kNss);
  s->erase_result("r", "h", 0, Executor::kHost);  // absent: no-op
  auto rs = s->layer_results("r", "h", 0);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].executor, Executor::kCss);
  s->erase_result("r", "h", 0, Executor::kCss);
  EXPECT_TRUE(s->layer_results("r", "h", 0).empty());
  const auto all = s->model_results("r", "h");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all.begin()->first, 1);
  // A result merged after an erase is back.
  s->merge_result("r", "h", 0, result(Executor::kNss, Status::kDifference, "d"));
  rs = s->layer_results("r", "h", 0);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].job_id, "d");
}

TEST(Store, ReopenKeepsEverything) {
  TempDir d{"torq-store"};
  {
    auto s = Store::open(d.path());
    s->put_model("m1", std::string("\0onnx\xff bytes", 12));
    s->put_model("m1", std::string("\0onnx\xff bytes", 12));  // written once: same bytes is a no-op
    for (int layer : {0, 2, 10, 123})
      s->merge_result("run", "m1", layer, result(Executor::kCss, Status::kSuccess, "j" + std::to_string(layer)));
    s->merge_result("run", "m1", 2, result(Executor::kNss, Status::kError, "j2n"));
    s->merge_result("run", "m2", 0, result(Executor::kNss, Status::kError, "other model"));
    s->put_cache("deadbeef", result(Executor::kHost, Status::kSuccess, "cached", 0.25));
    s->put_job_state("run", "m1/0-0/css", 'Q', job("m1/0-0/css"));
    s->put_job_state("run", "m1/0-0/css", 'L', job("m1/0-0/css"));
    s->put_job_state("run", "m1/2-2/nss", 'D', job("m1/2-2/nss"));
    s->put_job_state("run2", "x", 'Q', job("x"));
    s->put_run_meta("run", R"({"model_name":"resnet18","finished":null})");
  }
  auto s = Store::open(d.path());
  EXPECT_EQ(s->get_model("m1"), std::string("\0onnx\xff bytes", 12));
  EXPECT_FALSE(s->get_model("m9").has_value());
  const auto all = s->model_results("run", "m1");
  ASSERT_EQ(all.size(), 4u);
  std::vector<int> layers;
  for (const auto& [l, rs] : all) layers.push_back(l);
  EXPECT_EQ(layers, (std::vector<int>{0, 2, 10, 123}));
  ASSERT_EQ(all.at(2).size(), 2u);
  EXPECT_EQ(all.at(2)[0].executor, Executor::kNss);
  EXPECT_EQ(all.at(2)[1].job_id, "j2");
  EXPECT_EQ(all.at(123)[0].job_id, "j123");
  EXPECT_EQ(s->model_results("run", "m2").size(), 1u);
  EXPECT_TRUE(s->model_results("run", "m3").empty());
  const auto c = s->get_cache("deadbeef");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->job_id, "cached");
  EXPECT_DOUBLE_EQ(c->max_abs, 0.25);
  const auto js = s->jobs("run");
  ASSERT_EQ(js.size(), 2u);
  EXPECT_EQ(js.at("m1/0-0/css").state, 'L');
  EXPECT_EQ(js.at("m1/2-2/nss").state, 'D');
  EXPECT_EQ(decode_job(js.at("m1/2-2/nss").encoded.data(), js.at("m1/2-2/nss").encoded.size()).id, "m1/2-2/nss");
  EXPECT_EQ(s->jobs("run2").size(), 1u);
  EXPECT_TRUE(s->jobs("run3").empty());
  EXPECT_EQ(s->get_run_meta("run"), R"({"model_name":"resnet18","finished":null})");
  EXPECT_FALSE(s->get_run_meta("run2").has_value());
}

TEST(Store, CommitResultWritesResultAndDoneStateTogether) {
  TempDir d{"torq-store"};
  {
    auto s = Store::open(d.path());
    s->put_job_state("r", "h/7-7/nss", 'L', job("h/7-7/nss"));
    s->commit_result("r", "h", 7, result(Executor::kNss, Status::kSuccess, "h/7-7/nss", 0.01), "h/7-7/nss",
                     job("h/7-7/nss"));
  }
  auto s = Store::open(d.path());
  const auto js = s->jobs("r");
  ASSERT_EQ(js.size(), 1u);
  EXPECT_EQ(js.at("h/7-7/nss").state, 'D');
  const auto rs = s->layer_results("r", "h", 7);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].job_id, "h/7-7/nss");
  EXPECT_DOUBLE_EQ(rs[0].max_abs, 0.01);
  // A commit that fails validation writes neither half.
  EXPECT_NE(message_of([&] { s->commit_result("r", "h", 8, result(Executor::kCss, Status::kSuccess, "j"), "j", "junk"); })
                .find("not a valid encoded job"),
            std::string::npos);
  EXPECT_TRUE(s->layer_results("r", "h", 8).empty());
  EXPECT_EQ(s->jobs("r").size(), 1u);
}

// A group commit of results of several models (a discover's layer jobs and
// its full-model run, or a matrix's models) is one batch: all or none.
TEST(Store, ACommitOfSeveralModelsIsOneBatch) {
  TempDir d{"torq-store"};
  auto commit = [](const std::string& model, int layer, const std::string& id) {
    return Store::KeyedCommit{model, {layer, result(Executor::kNss, Status::kSuccess, id, 0.25), id, job(id)}};
  };
  {
    auto s = Store::open(d.path());
    s->commit_results("r", {commit("m1", 3, "m1/3/nss"), commit("m2", 3, "m2/3/nss"), commit("m1", 4, "m1/4/nss")});
    // A bad model key in the batch: nothing of it is written.
    EXPECT_NE(message_of([&] { s->commit_results("r", {commit("m1", 5, "m1/5/nss"), commit("a/b", 5, "x/5/nss")}); })
                  .find("must not contain '/'"),
              std::string::npos);
  }
  auto s = Store::open(d.path());
  ASSERT_EQ(s->model_results("r", "m1").size(), 2u);
  ASSERT_EQ(s->layer_results("r", "m2", 3).size(), 1u);
  EXPECT_EQ(s->layer_results("r", "m2", 3)[0].job_id, "m2/3/nss");
  EXPECT_DOUBLE_EQ(s->layer_results("r", "m1", 4)[0].max_abs, 0.25);
  EXPECT_TRUE(s->layer_results("r", "m1", 5).empty());
  const auto js = s->jobs("r");
  EXPECT_EQ(js.size(), 3u);
  EXPECT_EQ(js.count("m1/5/nss"), 0u);
  EXPECT_EQ(js.at("m2/3/nss").state, 'D');
}

TEST(Store, ResultRunsListsEachRunWithResultsOnce) {
  TempDir d{"torq-store"};
  auto s = Store::open(d.path());
  EXPECT_TRUE(s->result_runs().empty());
  auto commit = [](const std::string& model, int layer, const std::string& id) {
    return Store::KeyedCommit{model, {layer, result(Executor::kNss, Status::kSuccess, id, 0.25), id, job(id)}};
  };
  s->commit_results("run2", {commit("m1", 3, "m1/3/nss"), commit("m2", 1, "m2/1/nss")});
  s->commit_results("run1", {commit("m1", 0, "m1/0/nss")});
  s->commit_results("run10", {commit("m1", 7, "m1/7/nss")});
  EXPECT_EQ(s->result_runs(), (std::vector<std::string>{"run1", "run10", "run2"}));
}

// Issue 30: a lease is stored with its holder, so that after a restart
// only that worker may claim the job; a lease without one (an older
// build's) reads back with an empty holder, and a done state replaces it.
TEST(Store, LeasesKeepTheirHolderAcrossAReopen) {
  TempDir d{"torq-store"};
  {
    auto s = Store::open(d.path());
    s->put_leases("r", {{"a", job("a"), "board-7"}, {"b", job("b"), ""}});
    s->put_job_states("r", 'L', {{"c", job("c")}});
    EXPECT_THROW(s->put_leases("r", {{"d", "junk", "w"}}), PipelineError);
    EXPECT_THROW(s->put_leases("r", {{"e", job("e"), std::string(70000, 'x')}}), PipelineError);
  }
  auto s = Store::open(d.path());
  auto js = s->jobs("r");
  ASSERT_EQ(js.size(), 3u);
  EXPECT_EQ(js.at("a").state, 'L');
  EXPECT_EQ(js.at("a").holder, "board-7");
  EXPECT_EQ(decode_job(js.at("a").encoded.data(), js.at("a").encoded.size()).id, "a");
  EXPECT_EQ(js.at("b").holder, "");
  EXPECT_EQ(js.at("c").state, 'L');
  EXPECT_EQ(js.at("c").holder, "");
  s->put_job_state("r", "a", 'D', job("a"));
  js = s->jobs("r");
  EXPECT_EQ(js.at("a").state, 'D');
  EXPECT_EQ(js.at("a").holder, "");
}

TEST(Store, BatchedJobStatesAndCacheEntriesAreAllOrNone) {
  TempDir d{"torq-store"};
  {
    auto s = Store::open(d.path());
    s->put_job_states("r", 'L', {{"a", job("a")}, {"b", job("b")}});
    s->put_caches({{"k1", result(Executor::kNss, Status::kSuccess, "a", 0.5)},
                   {"k2", result(Executor::kCss, Status::kSuccess, "b")}});
    // One bad job in a batch: nothing of the batch is written.
    EXPECT_NE(message_of([&] { s->put_job_states("r", 'L', {{"c", job("c")}, {"d", "junk"}}); })
                  .find("not a valid encoded job"),
              std::string::npos);
    EXPECT_THROW(s->put_job_states("r", 'X', {{"e", job("e")}}), PipelineError);
    EXPECT_THROW(s->put_caches({{"", result(Executor::kNss, Status::kSuccess, "a")}}), PipelineError);
  }
  auto s = Store::open(d.path());
  const auto js = s->jobs("r");
  ASSERT_EQ(js.size(), 2u);
  EXPECT_EQ(js.at("a").state, 'L');
  EXPECT_EQ(js.at("b").state, 'L');
  ASSERT_TRUE(s->get_cache("k1").has_value());
  EXPECT_DOUBLE_EQ(s->get_cache("k1")->max_abs, 0.5);
  EXPECT_EQ(s->get_cache("k2")->executor, Executor::kCss);
}

TEST(Store, CachePutGetAndOverwrite) {
  TempDir d{"torq-store"};
  auto s = Store::open(d.path());
  EXPECT_FALSE(s->get_cache("00ff").has_value());
  auto r = result(Executor::kCss, Status::kDifference, "j1", 3.5);
  r.cached = true;
  r.dedup_of = "Conv_conv1";
  s->put_cache("00ff", r);
  auto got = s->get_cache("00ff");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->executor, Executor::kCss);
  EXPECT_EQ(got->status, Status::kDifference);
  EXPECT_DOUBLE_EQ(got->max_abs, 3.5);
  EXPECT_DOUBLE_EQ(got->runtime_ms, 1.5);
  EXPECT_EQ(got->timing_runs, 3u);
  EXPECT_TRUE(got->cached);
  EXPECT_EQ(got->dedup_of, "Conv_conv1");
  s->put_cache("00ff", result(Executor::kHost, Status::kSuccess, "j2"));
  EXPECT_EQ(s->get_cache("00ff")->job_id, "j2");
}

TEST(Store, CorruptValuesAreErrorsNamingTheKeyNotCrashes) {
  TempDir d{"torq-store"};
  {
    auto s = Store::open(d.path());
    s->merge_result("r", "h", 1, result(Executor::kCss, Status::kSuccess, "ok"));
  }
  raw_write(d.path(), [](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* results) {
    rocksdb::WriteOptions w;
    ASSERT_TRUE(db->Put(w, results, "r/h/00000002", "not a flatbuffer").ok());
    ASSERT_TRUE(db->Put(w, results, "r/h/00000003", "also garbage").ok());
    // A corrupt operand between two valid ones on layer 1 is skipped.
    ASSERT_TRUE(db->Merge(w, results, "r/h/00000001", "\x01\x02garbage operand").ok());
    ASSERT_TRUE(db->Merge(w, results, "r/h/00000001", encode_result(result(Executor::kNss, Status::kSuccess, "n")))
                    .ok());
    // A corrupt record followed by a valid operand keeps the operand.
    ASSERT_TRUE(db->Put(w, results, "r/h/00000004", "garbage record").ok());
    ASSERT_TRUE(db->Merge(w, results, "r/h/00000004", encode_result(result(Executor::kHost, Status::kSuccess, "x")))
                    .ok());
  });
  auto s = Store::open(d.path());
  const std::string m = message_of([&] { s->layer_results("r", "h", 2); });
  EXPECT_NE(m.find("r/h/00000002"), std::string::npos) << m;
  EXPECT_NE(m.find("corrupt layer record"), std::string::npos) << m;
  EXPECT_NE(message_of([&] { s->model_results("r", "h"); }).find("r/h/00000002"), std::string::npos);
  const auto l1 = s->layer_results("r", "h", 1);
  ASSERT_EQ(l1.size(), 2u);
  EXPECT_EQ(l1[0].job_id, "n");
  EXPECT_EQ(l1[1].job_id, "ok");
  const auto l4 = s->layer_results("r", "h", 4);
  ASSERT_EQ(l4.size(), 1u);
  EXPECT_EQ(l4[0].job_id, "x");
  // Merging onto a corrupt record salvages the new result.
  s->merge_result("r", "h", 3, result(Executor::kCss, Status::kSuccess, "fresh"));
  const auto l3 = s->layer_results("r", "h", 3);
  ASSERT_EQ(l3.size(), 1u);
  EXPECT_EQ(l3[0].job_id, "fresh");
}

TEST(Store, FlushAndCompactionFoldOperandsToTheSameRecord) {
  TempDir d{"torq-store"};
  {
    auto s = Store::open(d.path());
    s->merge_result("r", "h", 0, result(Executor::kNss, Status::kError, "a"));
    s->merge_result("r", "h", 0, result(Executor::kCss, Status::kSuccess, "b"));
    s->merge_result("r", "h", 0, result(Executor::kNss, Status::kSuccess, "c"));
    s->erase_result("r", "h", 0, Executor::kCss);
    s->merge_result("r", "h", 0, result(Executor::kHost, Status::kSuccess, "d"));
    s->erase_result("r", "h", 1, Executor::kNss);
    s->erase_result("r", "h", 1, Executor::kNss);
  }
  // Flush and full compaction run PartialMerge and FullMergeV2 on disk.
  raw_write(d.path(), [](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* results) {
    ASSERT_TRUE(db->Flush(rocksdb::FlushOptions(), results).ok());
    ASSERT_TRUE(db->CompactRange(rocksdb::CompactRangeOptions(), results, nullptr, nullptr).ok());
  });
  auto s = Store::open(d.path());
  const auto rs = s->layer_results("r", "h", 0);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].job_id, "c");
  EXPECT_EQ(rs[1].job_id, "d");
  EXPECT_TRUE(s->layer_results("r", "h", 1).empty());
  EXPECT_EQ(s->model_results("r", "h").size(), 1u);
}

TEST(Store, CorruptJobsCacheAndRunValuesAreErrors) {
  TempDir d{"torq-store"};
  { auto s = Store::open(d.path()); }
  {
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), d.path(), &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> descs;
    for (const auto& n : names) descs.emplace_back(n, rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> hs;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), d.path(), descs, &hs, &db).ok());
    const std::map<std::string, std::pair<std::string, std::string>> junk = {
        {"jobs", {"r/j1", "Xjunk"}}, {"cache", {"cafe", "junk"}}, {"runs", {"r", "{junk"}}};
    for (size_t i = 0; i < names.size(); ++i) {
      const auto it = junk.find(names[i]);
      if (it != junk.end()) {
        ASSERT_TRUE(db->Put({}, hs[i], it->second.first, it->second.second).ok());
      }
    }
    for (auto* h : hs) db->DestroyColumnFamilyHandle(h);
    delete db;
  }
  auto s = Store::open(d.path());
  EXPECT_NE(message_of([&] { s->jobs("r"); }).find("'r/j1'"), std::string::npos);
  EXPECT_NE(message_of([&] { s->get_cache("cafe"); }).find("'cafe'"), std::string::npos);
  EXPECT_NE(message_of([&] { s->get_run_meta("r"); }).find("'r'"), std::string::npos);
}

TEST(Store, BadArgumentsAreRejectedBeforeWriting) {
  TempDir d{"torq-store"};
  auto s = Store::open(d.path());
  const auto r = result(Executor::kNss, Status::kSuccess, "j");
  EXPECT_NE(message_of([&] { s->merge_result("a/b", "h", 0, r); }).find("must not contain '/'"), std::string::npos);
  EXPECT_NE(message_of([&] { s->merge_result("a", "", 0, r); }).find("empty model hash"), std::string::npos);
  EXPECT_NE(message_of([&] { s->merge_result("a", "h", -1, r); }).find("out of range"), std::string::npos);
  EXPECT_NE(message_of([&] { s->put_job_state("a", "j", 'X', job("j")); }).find("is not Q, L or D"),
            std::string::npos);
  EXPECT_NE(message_of([&] { s->put_run_meta("a", "{not json"); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(message_of([&] { s->put_model("m", "one"); s->put_model("m", "two"); }).find("different bytes"),
            std::string::npos);
  EXPECT_TRUE(s->jobs("a").empty());
  EXPECT_TRUE(s->model_results("a", "h").empty());
  EXPECT_FALSE(s->get_run_meta("a").has_value());
}

TEST(Store, OpenInUnwritablePathNamesThePath) {
  const std::string m = message_of([] { Store::open("/proc/torq-test"); });
  EXPECT_NE(m.find("/proc/torq-test"), std::string::npos) << m;
  EXPECT_NE(m.find("cannot open store"), std::string::npos) << m;
}

TEST(Store, OpenTwiceSaysTheStoreIsLocked) {
  TempDir d{"torq-store"};
  auto s = Store::open(d.path());
  const std::string m = message_of([&] { Store::open(d.path()); });
  EXPECT_NE(m.find("already open (locked)"), std::string::npos) << m;
  EXPECT_NE(m.find(d.path() + "/LOCK"), std::string::npos) << m;
  s.reset();
  EXPECT_NO_THROW(Store::open(d.path()));  // released on close
}

TEST(Store, ConcurrentMergesFromThreads) {
  TempDir d{"torq-store"};
  auto s = Store::open(d.path());
  std::vector<std::thread> ts;
  for (Executor e : kExecutorPriority)
    ts.emplace_back([&, e] {
      for (int layer = 0; layer < 20; ++layer)
        s->merge_result("r", "h", layer, result(e, Status::kSuccess, std::string(executor_name(e))));
    });
  for (auto& t : ts) t.join();
  const auto all = s->model_results("r", "h");
  ASSERT_EQ(all.size(), 20u);
  for (const auto& [layer, rs] : all) {
    ASSERT_EQ(rs.size(), 3u) << layer;
    EXPECT_EQ(rs[0].job_id, "nss");
    EXPECT_EQ(rs[1].job_id, "css");
    EXPECT_EQ(rs[2].job_id, "host");
  }
}

// A child process commits results and reports each acknowledged commit
// through a pipe, then is SIGKILLed at a random moment (possibly inside a
// commit). Every acknowledged commit must survive, and no commit may be
// half applied.
// A writer killed with -9 at a random moment: every commit it reported is
// there (a synced one is on disk; an unsynced one in the write-ahead log
// the OS holds), whole.
void killed_writer_loses_no_reported_commit(bool sync) {
  TempDir d{"torq-store"};
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int kill_after_us = std::uniform_int_distribution<int>(2000, 150000)(rng);
  constexpr int kMaxCommits = 100000;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: no gtest assertions, never returns into the test runner.
    close(fds[0]);
    try {
      auto s = Store::open(d.path());
      std::thread([kill_after_us] {
        std::this_thread::sleep_for(std::chrono::microseconds(kill_after_us));
        raise(SIGKILL);
      }).detach();
      for (int i = 0; i < kMaxCommits; ++i) {
        const std::string id = "h/" + std::to_string(i) + "/nss";
        s->commit_results("r", "h", {Store::Commit{i, result(Executor::kNss, Status::kSuccess, id, i), id, job(id)}},
                          sync);
        if (write(fds[1], &i, sizeof i) != sizeof i) _exit(3);
      }
    } catch (...) {
      _exit(2);
    }
    raise(SIGKILL);
    _exit(4);
  }
  close(fds[1]);
  std::set<int> acked;
  int i = 0;
  while (read(fds[0], &i, sizeof i) == sizeof i) acked.insert(i);
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;

  auto s = Store::open(d.path());
  const auto js = s->jobs("r");
  const auto all = s->model_results("r", "h");
  for (int k : acked) {
    const std::string id = "h/" + std::to_string(k) + "/nss";
    ASSERT_TRUE(js.count(id)) << "acknowledged job " << id << " lost";
    EXPECT_EQ(js.at(id).state, 'D');
    ASSERT_TRUE(all.count(k)) << "acknowledged result " << k << " lost";
    ASSERT_EQ(all.at(k).size(), 1u);
    EXPECT_EQ(all.at(k)[0].job_id, id);
    EXPECT_DOUBLE_EQ(all.at(k)[0].max_abs, k);
  }
  // Atomicity: a job is done exactly when its result is there (at most one
  // commit beyond the acknowledged ones may have landed).
  EXPECT_EQ(js.size(), all.size());
  for (const auto& [layer, rs] : all) EXPECT_TRUE(js.count("h/" + std::to_string(layer) + "/nss")) << layer;
  EXPECT_LE(all.size(), acked.size() + 1);
  std::printf("[          ] %s, killed after %d us: %zu commits acknowledged, %zu found\n",
              sync ? "synced" : "unsynced", kill_after_us, acked.size(), all.size());
}

TEST(Store, KilledWriterLosesNoAcknowledgedCommit) { killed_writer_loses_no_reported_commit(true); }
TEST(Store, KilledWriterLosesNoUnsyncedCommit) { killed_writer_loses_no_reported_commit(false); }

}  // namespace
