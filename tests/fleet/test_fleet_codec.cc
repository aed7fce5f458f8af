// The fleet envelope: round trips, and every kind of malformed buffer is a
// PipelineError (never a crash or an out-of-bounds read).
#include <gtest/gtest.h>

#include <flatbuffers/flatbuffers.h>

#include <random>

#include "pipeline/wire/fleet_codec.h"
#include "pipeline/model/model_import.h"
#include "schema/fleet_generated.h"

using namespace torq::pipeline;

namespace {

const std::string kHash = sha256_hex("model");

JobSpec sample_job() {
  JobSpec j;
  j.id = kHash.substr(0, 16) + "/3/css";
  j.model_hash = kHash;
  j.first_node = j.last_node = 3;
  j.executor = Executor::kCss;
  j.timing_runs = 5;
  return j;
}

}  // namespace

TEST(FleetCodec, EveryMessageTypeRoundTrips) {
  WorkerInfo w;
  w.worker_id = "board-7";
  w.target = "astra";
  w.executors = {Executor::kNss, Executor::kHost};
  w.toolchain = "tc 1.2";
  w.capacity = 4;
  w.prefetch = 2;
  w.running = {"a/1/nss"};
  auto m = decode_fleet_message(encode_ready(w).data(), encode_ready(w).size());
  ASSERT_EQ(m.type, FleetType::kReady);
  EXPECT_EQ(m.ready.worker_id, "board-7");
  EXPECT_EQ(m.ready.target, "astra");
  EXPECT_EQ(m.ready.executors, (std::vector<Executor>{Executor::kNss, Executor::kHost}));
  EXPECT_EQ(m.ready.capacity, 4u);
  EXPECT_EQ(m.ready.prefetch, 2u);
  EXPECT_EQ(m.ready.running, std::vector<std::string>{"a/1/nss"});

  const std::string job = encode_job(sample_job());
  const std::string jm = encode_job_message(job);
  m = decode_fleet_message(jm.data(), jm.size());
  ASSERT_EQ(m.type, FleetType::kJob);
  EXPECT_EQ(m.job.id, sample_job().id);
  EXPECT_EQ(m.job.executor, Executor::kCss);
  EXPECT_EQ(m.job.timing_runs, 5u);
  EXPECT_EQ(m.job_bytes, job);

  ExecResult r;
  r.job_id = "x/1/nss";
  r.executor = Executor::kNss;
  r.status = Status::kError;
  r.error_class = "timeout";
  const std::string rm = encode_result_message(r);
  m = decode_fleet_message(rm.data(), rm.size());
  ASSERT_EQ(m.type, FleetType::kResult);
  EXPECT_EQ(m.result.job_id, "x/1/nss");
  EXPECT_EQ(m.result.error_class, "timeout");

  const std::string blob = "onnx bytes";
  const std::string br = encode_blob_reply(kHash, &blob);
  m = decode_fleet_message(br.data(), br.size());
  ASSERT_EQ(m.type, FleetType::kBlobReply);
  EXPECT_TRUE(m.blob_known);
  EXPECT_EQ(m.blob, blob);
  EXPECT_EQ(m.blob_offset, 0u);
  EXPECT_EQ(m.blob_total, blob.size());
  const std::string unknown = encode_blob_reply(kHash, nullptr);
  EXPECT_FALSE(decode_fleet_message(unknown.data(), unknown.size()).blob_known);
  const std::string chunk = encode_blob_chunk(kHash, 10, 4, "abc", 3);
  m = decode_fleet_message(chunk.data(), chunk.size());
  EXPECT_TRUE(m.blob_known);
  EXPECT_EQ(m.blob, "abc");
  EXPECT_EQ(m.blob_offset, 4u);
  EXPECT_EQ(m.blob_total, 10u);
  const std::string chunk_req = encode_blob_request(kHash, 5, 1024);
  m = decode_fleet_message(chunk_req.data(), chunk_req.size());
  EXPECT_EQ(m.blob_offset, 5u);
  EXPECT_EQ(m.blob_max, 1024u);
  const std::string past = encode_blob_chunk(kHash, 5, 4, "abc", 3);
  try {
    decode_fleet_message(past.data(), past.size());
    ADD_FAILURE() << "a chunk past its blob's end decoded";
  } catch (const PipelineError& e) {
    EXPECT_STREQ(e.what(), "BLOB_REPLY chunk of 3 bytes at offset 4 exceeds the blob's 5 bytes");
  }

  const std::string ack = encode_result_ack("x/1/nss");
  EXPECT_EQ(decode_fleet_message(ack.data(), ack.size()).job_id, "x/1/nss");
  const std::string d = encode_disconnect("bye");
  EXPECT_EQ(decode_fleet_message(d.data(), d.size()).reason, "bye");
  const std::string hb = encode_heartbeat();
  EXPECT_EQ(decode_fleet_message(hb.data(), hb.size()).type, FleetType::kHeartbeat);
  const std::string st = encode_job_started("x/1/nss");
  m = decode_fleet_message(st.data(), st.size());
  EXPECT_EQ(m.type, FleetType::kStarted);
  EXPECT_EQ(m.job_id, "x/1/nss");
  EXPECT_STREQ(fleet_type_name(m.type), "STARTED");
  const std::string st_empty = encode_job_started("");
  EXPECT_THROW(decode_fleet_message(st_empty.data(), st_empty.size()), PipelineError);
  const std::string req = encode_blob_request(kHash);
  EXPECT_EQ(decode_fleet_message(req.data(), req.size()).hash, kHash);
  const std::string hint = encode_model_hint(kHash);
  m = decode_fleet_message(hint.data(), hint.size());
  EXPECT_EQ(m.type, FleetType::kModelHint);
  EXPECT_EQ(m.hash, kHash);
  EXPECT_STREQ(fleet_type_name(m.type), "MODEL_HINT");
  // A hint's hash names a file in the worker's cache: only 64 hex digits.
  for (const std::string& bad : {std::string(), std::string("../../etc/passwd"), std::string(64, 'g')}) {
    const std::string h = encode_model_hint(bad);
    EXPECT_THROW(decode_fleet_message(h.data(), h.size()), PipelineError) << bad;
  }
}

TEST(FleetCodec, RandomTruncatedAndOversizeBuffersAreErrors) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(8 + rng() % 300, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    if (i % 2) junk.replace(4, 4, "TQFL");  // past the identifier check, into the verifier
    EXPECT_THROW(decode_fleet_message(junk.data(), junk.size()), PipelineError);
  }
  const std::string job = encode_job_message(encode_job(sample_job()));
  for (size_t n = 0; n < job.size(); ++n) EXPECT_THROW(decode_fleet_message(job.data(), n), PipelineError) << n;
  EXPECT_THROW(decode_fleet_message(job.data(), job.size(), job.size() - 1), PipelineError);
}

TEST(FleetCodec, ValidEnvelopesWithBadContentsAreErrors) {
  auto envelope = [](uint16_t version, torq::schema::Message type, bool garbage_nested) {
    flatbuffers::FlatBufferBuilder b;
    flatbuffers::Offset<void> body;
    if (type == torq::schema::Message::ResultMsg) {
      const std::string junk = garbage_nested ? std::string(40, '\x7f') : encode_result(ExecResult{});
      body = torq::schema::CreateResultMsg(b, b.CreateVector(reinterpret_cast<const uint8_t*>(junk.data()), junk.size()))
                 .Union();
    } else {
      body = torq::schema::CreateHeartbeat(b).Union();
    }
    torq::schema::EnvelopeBuilder eb(b);
    eb.add_version(version);
    eb.add_message_type(type);
    eb.add_message(body);
    torq::schema::FinishEnvelopeBuffer(b, eb.Finish());
    return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  };
  const std::string nested = envelope(kFleetProtocolVersion, torq::schema::Message::ResultMsg, true);
  EXPECT_THROW(decode_fleet_message(nested.data(), nested.size()), PipelineError);
  const std::string no_job_id = envelope(kFleetProtocolVersion, torq::schema::Message::ResultMsg, false);
  EXPECT_THROW(decode_fleet_message(no_job_id.data(), no_job_id.size()), PipelineError);
  const std::string old = envelope(kFleetProtocolVersion + 1, torq::schema::Message::Heartbeat, false);
  EXPECT_THROW(decode_fleet_message(old.data(), old.size()), PipelineError);
  const std::string unknown = envelope(kFleetProtocolVersion, static_cast<torq::schema::Message>(99), false);
  EXPECT_THROW(decode_fleet_message(unknown.data(), unknown.size()), PipelineError);
  // A blob request whose hash could name a path.
  const std::string evil = encode_blob_request("../../etc/passwd");
  EXPECT_THROW(decode_fleet_message(evil.data(), evil.size()), PipelineError);
  WorkerInfo w;
  w.worker_id = "x";
  const std::string none = encode_ready(w);  // offers no executor
  EXPECT_THROW(decode_fleet_message(none.data(), none.size()), PipelineError);
}
