// The fleet protocol's messages (schema/fleet.fbs, DESIGN.md §6) as plain
// structs, and their FlatBuffers encoding. One ZeroMQ frame carries one
// envelope. This room knows bytes, not sockets: the coordinator's broker and
// the fleet worker both use it.
//
// Contracts:
//  - decode_fleet_message verifies every buffer (and the nested job/result
//    buffer) with flatbuffers::Verifier under a size cap before reading it,
//    then checks values (protocol version, enum ranges, hashes are 64
//    lowercase hex digits, non-empty ids, a blob chunk within its blob). Any violation is a PipelineError
//    whose message says what was wrong; nothing is read out of bounds.
//  - Encoders never throw for valid inputs and produce buffers that
//    decode_fleet_message accepts.
//  - Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/wire/codec.h"
#include "pipeline/core/types.h"

namespace torq::pipeline {

// Version of the envelope; a message of another version is refused.
// 2: a RESULT may carry error class "declined" (below), which a version-1
// coordinator would record as the op's error.
// 3: a worker says when each job starts (STARTED); the lease of a job runs
// for its own timeout from then (issue 30).
// 4: the coordinator names the models of queued jobs (MODEL_HINT), so
// workers fetch them ahead of the jobs (issue 32).
inline constexpr uint16_t kFleetProtocolVersion = 4;
// Largest fleet message a worker accepts (a whole model blob may travel in
// one BLOB_REPLY). The coordinator accepts only kMaxMessageBytes and less.
inline constexpr size_t kMaxFleetBlobBytes = size_t{1} << 30;
// Largest chunk of a blob one BLOB_REPLY carries when a chunk is asked for.
inline constexpr uint32_t kMaxBlobChunkBytes = uint32_t{4} << 20;

// Error classes of a RESULT that is not the op's outcome: the job goes
// back to the queue and the lease is not an attempt.
//  - infrastructure: lost to the device's link (ssh, board unreachable,
//    runner missing); the device checks its health again.
//  - declined: given back unrun, the lease having arrived while the
//    device was not Good (sent before the coordinator heard of the change).
inline constexpr const char* kInfrastructureClass = "infrastructure";
inline constexpr const char* kDeclinedClass = "declined";
// True for a result that says nothing about the op (issue 30): the two
// classes above, and `fetch` (a model that could not be fetched or cached,
// e.g. on a full disk), which older workers send. It is never stored as
// the op's result: a broker requeues it, a local run stops on it, and a
// resume runs a job whose stored result is one again.
inline bool infrastructure_error(const ExecResult& r) {
  return r.status == Status::kError && (r.error_class == kInfrastructureClass || r.error_class == kDeclinedClass ||
                                        r.error_class == "fetch");
}

enum class FleetType {
  kReady,        // worker -> coordinator: registration / capacity change
  kJob,          // coordinator -> worker: one job
  kResult,       // worker -> coordinator: one result
  kResultAck,    // coordinator -> worker: result committed
  kHeartbeat,    // both ways
  kDisconnect,   // both ways
  kBlobRequest,  // worker -> coordinator: model blob by hash
  kBlobReply,    // coordinator -> worker: the blob, or unknown
  kStarted,      // worker -> coordinator: a job left the local queue and runs
  kModelHint,    // coordinator -> worker: jobs on this model are queued
};
// "READY", "JOB", "RESULT", "RESULT_ACK", "HEARTBEAT", "DISCONNECT",
// "BLOB_REQUEST", "BLOB_REPLY", "STARTED", "MODEL_HINT".
const char* fleet_type_name(FleetType t);

// What a worker offers (READY).
struct WorkerInfo {
  std::string worker_id;
  std::string target = "sim";
  std::vector<Executor> executors;
  std::string toolchain;
  uint32_t capacity = 1;               // 0: draining, send no more jobs
  uint32_t prefetch = 0;               // jobs queued beyond capacity (fleet.fbs Ready)
  std::vector<std::string> running;    // job ids still running after a reconnect
  std::vector<std::string> tags;       // device tags offered
  std::string health = "Good";         // Good | Unknown | Bad | Maintenance
  std::string health_reason, health_since;
};

// True for the four health states of LAVA's model.
bool is_health_state(const std::string& s);

// One decoded message; only the fields of `type` are set.
struct FleetMessage {
  FleetType type = FleetType::kHeartbeat;
  WorkerInfo ready;         // kReady
  JobSpec job;              // kJob (decoded)
  std::string job_bytes;    // kJob: the nested encoded job, as sent
  ExecResult result;        // kResult
  std::string job_id;       // kResultAck, kStarted
  std::string reason;       // kDisconnect
  std::string hash;         // kBlobRequest, kBlobReply
  uint64_t blob_offset = 0;  // kBlobRequest: first byte wanted; kBlobReply: where `blob` starts
  uint32_t blob_max = 0;     // kBlobRequest: chunk size asked for (0: the whole blob)
  uint64_t blob_total = 0;   // kBlobReply, when known: the whole blob's size
  bool blob_known = false;  // kBlobReply
  std::string blob;         // kBlobReply, when known: the blob or the chunk asked for
};

// True when `s` is 64 lowercase hex digits (a SHA-256 as sha256_hex gives).
bool is_sha256_hex(const std::string& s);

std::string encode_ready(const WorkerInfo& w);
// `encoded_job` is encode_job's output (e.g. as kept in the store).
std::string encode_job_message(const std::string& encoded_job);
std::string encode_result_message(const ExecResult& r);
std::string encode_result_ack(const std::string& job_id);
std::string encode_heartbeat();
std::string encode_job_started(const std::string& job_id);
std::string encode_model_hint(const std::string& hash);
std::string encode_disconnect(const std::string& reason);
// The whole blob (max_bytes 0), or the chunk of at most max_bytes at offset.
std::string encode_blob_request(const std::string& hash, uint64_t offset = 0, uint32_t max_bytes = 0);
// The whole blob; `bytes` == nullptr: the hash is unknown to the coordinator.
std::string encode_blob_reply(const std::string& hash, const std::string* bytes);
// One chunk: `size` bytes at `offset` of a blob of `total` bytes.
std::string encode_blob_chunk(const std::string& hash, uint64_t total, uint64_t offset, const char* data,
                              size_t size);

// Verifies and decodes one envelope of at most `max_bytes` bytes.
// Throws PipelineError on anything malformed (see the contracts above).
FleetMessage decode_fleet_message(const void* data, size_t size, size_t max_bytes = kMaxMessageBytes);

}  // namespace torq::pipeline
