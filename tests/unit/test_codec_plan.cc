// FlatBuffers codec (verified decoding of hostile bytes) and the planner's
// job order, skip mode and dedup.
#include <gtest/gtest.h>

#include <random>

#include "pipeline/model/model_import.h"
#include "pipeline/wire/codec.h"
#include "pipeline/plan/plan.h"

using namespace torq::pipeline;

TEST(Codec, JobAndResultRoundTrip) {
  JobSpec j;
  j.id = "abc/3/css";
  j.model_hash = "abc";
  j.first_node = j.last_node = 3;
  j.executor = Executor::kCss;
  j.tolerance.fp_max_tol = 0.25;
  j.random_inputs = true;
  j.seed = 42;
  JobSpec back = decode_job(encode_job(j).data(), encode_job(j).size());
  EXPECT_EQ(back.id, j.id);
  EXPECT_EQ(back.executor, Executor::kCss);
  EXPECT_EQ(back.tolerance.fp_max_tol, 0.25);
  EXPECT_TRUE(back.random_inputs);
  EXPECT_EQ(back.seed, 42u);
  ExecResult r;
  r.job_id = j.id;
  r.executor = Executor::kNss;
  r.status = Status::kDifference;
  r.outputs.push_back({"y", 1.5, 0.5, 0.7, 0.1, 0.99, 7, 100, 0});
  r.runtime_ms = 0.125;
  const std::string bytes = encode_result(r);
  ExecResult rb = decode_result(bytes.data(), bytes.size());
  EXPECT_EQ(rb.status, Status::kDifference);
  ASSERT_EQ(rb.outputs.size(), 1u);
  EXPECT_EQ(rb.outputs[0].over_tol, 7);
  EXPECT_EQ(rb.runtime_ms, 0.125);
  EXPECT_FALSE(rb.e2e);
}

// An assigned run of a converted model names its fp32 original; its result
// carries the end-to-end comparison, or why there is none.
TEST(Codec, EndToEndComparisonRoundTrips) {
  JobSpec j;
  j.id = "k/0/host";
  j.model_hash = "abc";
  j.last_node = 1;
  j.assignment = {Executor::kNss, Executor::kCss};
  j.executor_targets = {"", "", ""};
  j.original_hash = "def";
  std::string bytes = encode_job(j);
  EXPECT_EQ(decode_job(bytes.data(), bytes.size()).original_hash, "def");
  j.assignment.clear();
  j.executor_targets.clear();
  bytes = encode_job(j);
  EXPECT_THROW(decode_job(bytes.data(), bytes.size()), PipelineError);  // only an assigned run has one
  ExecResult r;
  r.e2e.emplace();
  r.e2e->reference = "fp32 original def on the same input";
  r.e2e->outputs.push_back({"y", 0.5, 0.1, 0.2, 3.0, 0.976, 40, 1000, 0});
  r.e2e->outputs.push_back({"z", 0.25, 0.1, 0.2, 4.0, 0.99, 4, 10, 0});
  bytes = encode_result(r);
  ExecResult back = decode_result(bytes.data(), bytes.size());
  ASSERT_TRUE(back.e2e);
  EXPECT_EQ(*back.e2e, *r.e2e);
  EXPECT_EQ(back.e2e->pcc(), 0.976);
  EXPECT_EQ(back.e2e->max_abs(), 0.5);
  EXPECT_EQ(back.e2e->max_rel(), 4.0);
  r.e2e->outputs.clear();
  r.e2e->error = "not measured";
  bytes = encode_result(r);
  back = decode_result(bytes.data(), bytes.size());
  EXPECT_EQ(back.e2e->error, "not measured");
  EXPECT_EQ(back.e2e->pcc(), -1);
  r.e2e->error.clear();  // neither figures nor a reason: not a result
  bytes = encode_result(r);
  EXPECT_THROW(decode_result(bytes.data(), bytes.size()), PipelineError);
}

// Frames from ZeroMQ and RocksDB slices come at any address: decoding one
// at an odd offset reads an aligned copy (UBSan checks this in the
// sanitizer build) and gives the same values.
TEST(Codec, MisalignedBuffersDecodeTheSame) {
  JobSpec j;
  j.id = "abc/3/css";
  j.model_hash = std::string(64, 'f');
  j.first_node = j.last_node = 3;
  j.executor = Executor::kCss;
  j.result_key = j.model_hash + "-0123abcd";
  ExecResult r;
  r.job_id = j.id;
  r.status = Status::kDifference;
  r.outputs.push_back(OutputDiff{"y", 0.5, 0.25, 0.3, 0.125, 0.98, 7, 64, 0});
  for (size_t offset = 1; offset < 8; ++offset) {
    for (const std::string& enc : {encode_job(j), encode_result(r), encode_layer_record({r, r})}) {
      std::string shifted(offset, '\0');
      shifted += enc;
      const char* p = shifted.data() + offset;
      if (enc == encode_job(j)) {
        const JobSpec back = decode_job(p, enc.size());
        EXPECT_EQ(back.id, j.id);
        EXPECT_EQ(back.result_key, j.result_key);
        EXPECT_EQ(back.executor, Executor::kCss);
      } else if (enc == encode_result(r)) {
        const ExecResult back = decode_result(p, enc.size());
        ASSERT_EQ(back.outputs.size(), 1u);
        EXPECT_EQ(back.outputs[0].pcc, 0.98);
        EXPECT_EQ(back.outputs[0].over_tol, 7);
      } else {
        EXPECT_EQ(decode_layer_record(p, enc.size()).size(), 2u);
      }
    }
  }
}

TEST(Codec, RandomTruncatedAndOversizeBytesAreRejectedNotCrashed) {
  std::mt19937 rng(1);
  int rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string junk(static_cast<size_t>(rng() % 200 + 1), '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    try {
      decode_result(junk.data(), junk.size());
    } catch (const PipelineError&) {
      ++rejected;
    }
  }
  EXPECT_GE(rejected, 1990);  // a rare random buffer may verify as a table of defaults
  JobSpec j;
  j.model_hash = "h";
  const std::string good = encode_job(j);
  EXPECT_THROW(decode_job(good.data(), good.size() / 2), PipelineError);
  EXPECT_THROW(decode_job(good.data(), kMaxMessageBytes + 1), PipelineError);
  EXPECT_THROW(decode_job(nullptr, 0), PipelineError);
}

namespace {
std::vector<LayerInfo> layers(int n) {
  std::vector<LayerInfo> out;
  for (int i = 0; i < n; ++i) out.push_back({i, "Relu_" + std::to_string(i), "Relu", ""});
  return out;
}
}  // namespace

TEST(Planner, AllExecutorsInPriorityOrder) {
  PlanOptions po;
  Planner p("hash", layers(2), {}, po, {});
  std::vector<std::string> ids;
  while (auto j = p.next()) ids.push_back(j->id);
  EXPECT_EQ(ids, (std::vector<std::string>{"hash/0/nss", "hash/0/css", "hash/0/host", "hash/1/nss", "hash/1/css",
                                           "hash/1/host"}));
}

TEST(Planner, SkipModeIssuesTheNextExecutorOnlyAfterAFailure) {
  PlanOptions po;
  po.skip_mode = true;
  Planner p("hash", layers(1), {}, po, {});
  auto j = p.next();
  ASSERT_TRUE(j);
  EXPECT_EQ(j->executor, Executor::kNss);
  EXPECT_FALSE(p.next());  // waits for nss
  ExecResult err;
  err.status = Status::kError;
  p.finished(*j, err);
  j = p.next();
  ASSERT_TRUE(j);
  EXPECT_EQ(j->executor, Executor::kCss);
  ExecResult ok;
  ok.status = Status::kSuccess;
  p.finished(*j, ok);
  EXPECT_FALSE(p.next());  // host never needed
}

// A failed layer's next executor goes before the layers the cursor comes
// to next, lowest layer first (a job process keeps the reference values of
// recent layers only): not on the next sweep from layer 0.
TEST(Planner, SkipModeIssuesAFollowUpBeforeNewLayersLowestFirst) {
  PlanOptions po;
  po.skip_mode = true;
  Planner p("hash", layers(6), {}, po, {});
  std::vector<JobSpec> first;
  for (int i = 0; i < 4; ++i) first.push_back(*p.next());  // nss of layers 0..3 in flight
  ExecResult err;
  err.status = Status::kError;
  p.finished(first[2], err);
  p.finished(first[0], err);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(p.next()->id);
  EXPECT_EQ(ids, (std::vector<std::string>{"hash/0/css", "hash/2/css", "hash/4/nss", "hash/5/nss"}));
  EXPECT_FALSE(p.next());
}

// all_done (the cue for the assigned full-model run) waits for every issued
// job, whatever order they finish in.
TEST(Planner, AllDoneOnlyWhenEveryIssuedJobFinished) {
  PlanOptions po;
  Planner p("hash", layers(1), {}, po, {});
  std::vector<JobSpec> jobs;
  while (auto j = p.next()) jobs.push_back(*j);
  ASSERT_EQ(jobs.size(), 3u);
  ExecResult ok;
  ok.status = Status::kSuccess;
  EXPECT_FALSE(p.all_done());
  p.finished(jobs[2], ok);  // host first: nothing left to issue, two in flight
  EXPECT_FALSE(p.all_done());
  p.finished(jobs[0], ok);
  EXPECT_FALSE(p.all_done());
  p.finished(jobs[1], ok);
  EXPECT_TRUE(p.all_done());
}

TEST(Planner, FilterSelectsLayerExecutorPairs) {
  PlanOptions po;
  po.filter = "Relu_1_css";
  Planner p("hash", layers(3), {}, po, {});
  auto j = p.next();
  ASSERT_TRUE(j);
  EXPECT_EQ(j->id, "hash/1/css");
  EXPECT_FALSE(p.next());
}

TEST(Planner, DedupCopiesBySignatureAndCountsSavedJobs) {
  PlanOptions po;
  po.dedup = DedupMode::kSignature;
  Planner p("hash", layers(3), {"a", "b", "a"}, po, {{1, Tolerance{0.5, 0.5, 0}}});
  EXPECT_EQ(p.dedup_of().at(2), 0);
  EXPECT_EQ(p.jobs_saved_by_dedup(), 3u);
  int n = 0;
  while (auto j = p.next()) {
    ++n;
    if (j->first_node == 1) {
      EXPECT_EQ(j->tolerance.fp_max_tol, 0.5);
    }
  }
  EXPECT_EQ(n, 6);
}

// The key's text is part of every store's content-addressed cache: the
// same job must keep its key across versions (written out here as the
// ostream of earlier versions formatted it).
TEST(Planner, CacheKeyTextIsStable) {
  JobSpec j;
  j.model_hash = "abc";
  j.first_node = 3;
  j.last_node = 7;
  j.executor = Executor::kCss;
  j.target = "sim";
  j.tolerance.fp_avg_tol = 0.0125;
  j.tolerance.fp_max_tol = 1e-7;
  j.tolerance.allowed_wrong = 0.5;
  j.timing_runs = 4;
  j.seed = 12345678901ull;
  j.input_lo = -1.5f;
  j.input_hi = 1234567.f;
  j.bf16_rne = true;
  EXPECT_EQ(cache_key(j, "pd", "eng 1"),
            sha256_hex("abc|3-7|css|sim|pd|0.0125,1e-07,0.5|4|activations,12345678901,-1.5,1.23457e+06|rne|eng 1"));
  j.collect_profile = true;
  j.random_inputs = true;
  j.assignment = {Executor::kNss, Executor::kHost};
  j.executor_targets = {"a", "", "c"};
  j.decide = {0, 1};
  EXPECT_EQ(cache_key(j, "pd", "eng 1"),
            sha256_hex("abc|3-7|css|sim|pd|0.0125,1e-07,0.5|4|random,12345678901,-1.5,1.23457e+06|rne|eng 1|profile"
                       "|assigned:02|a||c|decide:01"));
}

TEST(Planner, CacheKeyChangesWithEveryInput) {
  JobSpec j;
  j.model_hash = "h";
  const std::string base = cache_key(j, "p", "e");
  JobSpec k = j;
  k.tolerance.fp_max_tol = 0.02;
  EXPECT_NE(cache_key(k, "p", "e"), base);
  EXPECT_NE(cache_key(j, "p2", "e"), base);
  k = j;
  k.bf16_rne = true;
  EXPECT_NE(cache_key(k, "p", "e"), base);
  k = j;
  k.original_hash = "o";  // a run compared end to end is another result
  EXPECT_NE(cache_key(k, "p", "e"), base);
  EXPECT_EQ(cache_key(j, "p", "e"), base);
}
