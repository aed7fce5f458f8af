// Encoding and verified decoding of the fleet envelope (schema/fleet.fbs).
#include "pipeline/wire/fleet_codec.h"

#include <flatbuffers/flatbuffers.h>

#include "pipeline/core/aligned.h"
#include "pipeline/wire/flat_string.h"
#include "schema/fleet_generated.h"

namespace fb = torq::schema;

namespace torq::pipeline {

namespace {

std::string finish(flatbuffers::FlatBufferBuilder& b, fb::Message type, flatbuffers::Offset<void> body) {
  fb::EnvelopeBuilder eb(b);
  eb.add_version(kFleetProtocolVersion);
  eb.add_message_type(type);
  eb.add_message(body);
  fb::FinishEnvelopeBuffer(b, eb.Finish());
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

// A byte vector holding a nested FlatBuffer, aligned so that its scalars are
// naturally aligned relative to the nested buffer's start.
flatbuffers::Offset<flatbuffers::Vector<uint8_t>> nested(flatbuffers::FlatBufferBuilder& b, const std::string& bytes) {
  b.ForceVectorAlignment(bytes.size(), sizeof(uint8_t), 8);
  return b.CreateVector(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

Executor checked_executor(int v, const char* what) {
  if (v < 0 || v > 2) throw PipelineError(std::string(what) + " names an unknown executor " + std::to_string(v));
  return static_cast<Executor>(v);
}

void require_hash(const std::string& h, const char* what) {
  if (!is_sha256_hex(h))
    throw PipelineError(std::string(what) + " carries a bad model hash (expected 64 lowercase hex digits)");
}

}  // namespace

const char* fleet_type_name(FleetType t) {
  switch (t) {
    case FleetType::kReady: return "READY";
    case FleetType::kJob: return "JOB";
    case FleetType::kResult: return "RESULT";
    case FleetType::kResultAck: return "RESULT_ACK";
    case FleetType::kHeartbeat: return "HEARTBEAT";
    case FleetType::kDisconnect: return "DISCONNECT";
    case FleetType::kBlobRequest: return "BLOB_REQUEST";
    case FleetType::kBlobReply: return "BLOB_REPLY";
    case FleetType::kStarted: return "STARTED";
    case FleetType::kModelHint: return "MODEL_HINT";
  }
  return "?";
}

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_health_state(const std::string& s) {
  return s == "Good" || s == "Unknown" || s == "Bad" || s == "Maintenance";
}

std::string encode_ready(const WorkerInfo& w) {
  flatbuffers::FlatBufferBuilder b(256);
  std::vector<fb::Executor> ex;
  for (Executor e : w.executors) ex.push_back(static_cast<fb::Executor>(e));
  auto id = b.CreateString(w.worker_id);
  auto target = b.CreateString(w.target);
  auto exv = b.CreateVector(ex);
  auto tc = b.CreateString(w.toolchain);
  auto running = b.CreateVectorOfStrings(w.running);
  auto tags = b.CreateVectorOfStrings(w.tags);
  auto health = b.CreateString(w.health);
  auto reason = b.CreateString(w.health_reason);
  auto since = b.CreateString(w.health_since);
  auto body = fb::CreateReady(b, id, target, exv, tc, w.capacity, running, tags, health, reason, since,
                              w.prefetch);
  return finish(b, fb::Message::Ready, body.Union());
}

std::string encode_job_message(const std::string& encoded_job) {
  flatbuffers::FlatBufferBuilder b(encoded_job.size() + 64);
  auto v = nested(b, encoded_job);
  return finish(b, fb::Message::JobMsg, fb::CreateJobMsg(b, v).Union());
}

std::string encode_result_message(const ExecResult& r) {
  const std::string inner = encode_result(r);
  flatbuffers::FlatBufferBuilder b(inner.size() + 64);
  auto v = nested(b, inner);
  return finish(b, fb::Message::ResultMsg, fb::CreateResultMsg(b, v).Union());
}

std::string encode_result_ack(const std::string& job_id) {
  flatbuffers::FlatBufferBuilder b(128);
  auto id = b.CreateString(job_id);
  return finish(b, fb::Message::ResultAck, fb::CreateResultAck(b, id).Union());
}

std::string encode_heartbeat() {
  flatbuffers::FlatBufferBuilder b(64);
  return finish(b, fb::Message::Heartbeat, fb::CreateHeartbeat(b).Union());
}

std::string encode_job_started(const std::string& job_id) {
  flatbuffers::FlatBufferBuilder b(128);
  auto id = b.CreateString(job_id);
  return finish(b, fb::Message::JobStarted, fb::CreateJobStarted(b, id).Union());
}

std::string encode_model_hint(const std::string& hash) {
  flatbuffers::FlatBufferBuilder b(128);
  auto h = b.CreateString(hash);
  return finish(b, fb::Message::ModelHint, fb::CreateModelHint(b, h).Union());
}

std::string encode_disconnect(const std::string& reason) {
  flatbuffers::FlatBufferBuilder b(128);
  auto r = b.CreateString(reason);
  return finish(b, fb::Message::Disconnect, fb::CreateDisconnect(b, r).Union());
}

std::string encode_blob_request(const std::string& hash, uint64_t offset, uint32_t max_bytes) {
  flatbuffers::FlatBufferBuilder b(128);
  auto h = b.CreateString(hash);
  return finish(b, fb::Message::BlobRequest, fb::CreateBlobRequest(b, h, offset, max_bytes).Union());
}

std::string encode_blob_reply(const std::string& hash, const std::string* bytes) {
  if (!bytes) {
    flatbuffers::FlatBufferBuilder b(128);
    auto h = b.CreateString(hash);
    return finish(b, fb::Message::BlobReply, fb::CreateBlobReply(b, h, false).Union());
  }
  return encode_blob_chunk(hash, bytes->size(), 0, bytes->data(), bytes->size());
}

std::string encode_blob_chunk(const std::string& hash, uint64_t total, uint64_t offset, const char* data,
                              size_t size) {
  flatbuffers::FlatBufferBuilder b(size + 256);
  auto v = b.CreateVector(reinterpret_cast<const uint8_t*>(data), size);
  auto h = b.CreateString(hash);
  return finish(b, fb::Message::BlobReply, fb::CreateBlobReply(b, h, true, v, offset, total).Union());
}

FleetMessage decode_fleet_message(const void* data, size_t size, size_t max_bytes) {
  if (!data || size == 0) throw PipelineError("empty fleet message");
  if (size > max_bytes)
    throw PipelineError("fleet message of " + std::to_string(size) + " bytes exceeds the cap of " +
                        std::to_string(max_bytes));
  const AlignedBytes aligned(data, size);
  const uint8_t* bytes = aligned.data();
  if (size < 8 || !flatbuffers::BufferHasIdentifier(bytes, fb::EnvelopeIdentifier()))
    throw PipelineError("not a fleet message (no TQFL identifier)");
  flatbuffers::Verifier v(bytes, size, 64, 100000);
  if (!fb::VerifyEnvelopeBuffer(v)) throw PipelineError("malformed fleet message (verifier failed)");
  const fb::Envelope* env = fb::GetEnvelope(bytes);
  if (env->version() != kFleetProtocolVersion)
    throw PipelineError("fleet protocol version " + std::to_string(env->version()) + " (this build speaks " +
                        std::to_string(kFleetProtocolVersion) + ")");
  FleetMessage m;
  switch (env->message_type()) {
    case fb::Message::Ready: {
      const auto* r = env->message_as_Ready();
      m.type = FleetType::kReady;
      m.ready.worker_id = flat_string(r->worker_id());
      m.ready.target = flat_string(r->target());
      m.ready.toolchain = flat_string(r->toolchain());
      m.ready.capacity = r->capacity();
      m.ready.prefetch = r->prefetch();
      if (r->executors())
        for (auto e : *r->executors()) m.ready.executors.push_back(checked_executor(static_cast<int>(e), "READY"));
      if (r->running())
        for (const auto* s : *r->running()) m.ready.running.push_back(flat_string(s));
      if (r->tags())
        for (const auto* s : *r->tags()) m.ready.tags.push_back(flat_string(s));
      if (r->health()) m.ready.health = flat_string(r->health());
      m.ready.health_reason = flat_string(r->health_reason());
      m.ready.health_since = flat_string(r->health_since());
      if (!is_health_state(m.ready.health))
        throw PipelineError("READY health '" + m.ready.health + "' (expected Good, Unknown, Bad or Maintenance)");
      if (m.ready.worker_id.empty()) throw PipelineError("READY without a worker id");
      if (m.ready.target.empty()) throw PipelineError("READY without a target");
      if (m.ready.executors.empty()) throw PipelineError("READY offers no executor");
      if (m.ready.capacity > 4096) throw PipelineError("READY capacity " + std::to_string(m.ready.capacity) + " > 4096");
      if (m.ready.prefetch > 4096) throw PipelineError("READY prefetch " + std::to_string(m.ready.prefetch) + " > 4096");
      return m;
    }
    case fb::Message::JobMsg: {
      const auto* j = env->message_as_JobMsg();
      if (!j->job()) throw PipelineError("JOB without a job");
      m.type = FleetType::kJob;
      m.job_bytes.assign(reinterpret_cast<const char*>(j->job()->data()), j->job()->size());
      m.job = decode_job(m.job_bytes.data(), m.job_bytes.size());
      require_hash(m.job.model_hash, "JOB");
      // (The worker fetches the original as a blob too: a hostile path
      // there would name a file outside its cache.)
      if (!m.job.original_hash.empty()) require_hash(m.job.original_hash, "JOB original");
      if (m.job.id.empty()) throw PipelineError("JOB without a job id");
      return m;
    }
    case fb::Message::ResultMsg: {
      const auto* r = env->message_as_ResultMsg();
      if (!r->result()) throw PipelineError("RESULT without a result");
      m.type = FleetType::kResult;
      m.result = decode_result(r->result()->data(), r->result()->size());
      if (m.result.job_id.empty()) throw PipelineError("RESULT without a job id");
      return m;
    }
    case fb::Message::ResultAck: {
      m.type = FleetType::kResultAck;
      m.job_id = flat_string(env->message_as_ResultAck()->job_id());
      if (m.job_id.empty()) throw PipelineError("RESULT_ACK without a job id");
      return m;
    }
    case fb::Message::Heartbeat:
      m.type = FleetType::kHeartbeat;
      return m;
    case fb::Message::JobStarted:
      m.type = FleetType::kStarted;
      m.job_id = flat_string(env->message_as_JobStarted()->job_id());
      if (m.job_id.empty()) throw PipelineError("STARTED without a job id");
      return m;
    case fb::Message::ModelHint:
      m.type = FleetType::kModelHint;
      m.hash = flat_string(env->message_as_ModelHint()->hash());
      require_hash(m.hash, "MODEL_HINT");
      return m;
    case fb::Message::Disconnect:
      m.type = FleetType::kDisconnect;
      m.reason = flat_string(env->message_as_Disconnect()->reason());
      return m;
    case fb::Message::BlobRequest:
      m.type = FleetType::kBlobRequest;
      m.hash = flat_string(env->message_as_BlobRequest()->hash());
      require_hash(m.hash, "BLOB_REQUEST");
      m.blob_offset = env->message_as_BlobRequest()->offset();
      m.blob_max = env->message_as_BlobRequest()->max_bytes();
      return m;
    case fb::Message::BlobReply: {
      const auto* r = env->message_as_BlobReply();
      m.type = FleetType::kBlobReply;
      m.hash = flat_string(r->hash());
      require_hash(m.hash, "BLOB_REPLY");
      m.blob_known = r->known();
      if (m.blob_known) {
        if (!r->bytes()) throw PipelineError("BLOB_REPLY marked known without bytes");
        m.blob.assign(reinterpret_cast<const char*>(r->bytes()->data()), r->bytes()->size());
        m.blob_offset = r->offset();
        // A whole blob from a coordinator that did not say its size: the bytes are all of it.
        m.blob_total = r->total() || r->offset() ? r->total() : m.blob.size();
        if (m.blob_offset > m.blob_total || m.blob.size() > m.blob_total - m.blob_offset)
          throw PipelineError("BLOB_REPLY chunk of " + std::to_string(m.blob.size()) + " bytes at offset " +
                              std::to_string(m.blob_offset) + " exceeds the blob's " + std::to_string(m.blob_total) +
                              " bytes");
      }
      return m;
    }
    default:
      break;
  }
  throw PipelineError("fleet message of unknown type " + std::to_string(static_cast<int>(env->message_type())));
}

}  // namespace torq::pipeline
