// FlatBuffers encoding of jobs, results and layer records (schema/torq.fbs).
// Every decode verifies the buffer with flatbuffers::Verifier and a size cap
// first; a bad buffer is a PipelineError, never undefined behaviour.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace torq::pipeline {

// A job as the scheduler and the runner see it.
struct JobSpec {
  std::string id;
  std::string model_hash;
  uint32_t first_node = 0, last_node = 0;
  Executor executor = Executor::kHost;
  std::string target = "sim";
  Tolerance tolerance;
  uint32_t timing_runs = 1;
  uint32_t timeout_ms = 60000;
  bool random_inputs = false;
  uint64_t seed = 0;
  float input_lo = -40, input_hi = 40;
  bool bf16_rne = false;
  // Store key of this job's results: empty means model_hash. A matrix run
  // that tests one model several ways (two targets, two input modes) gives
  // each way its own key so their results do not merge.
  std::string result_key;
  // An assigned full-model run: one executor per layer of [first_node,
  // last_node]; executor_targets (indexed by Executor, size 0 or 3) names
  // each executor's target, empty entries meaning `target`.
  std::vector<Executor> assignment;
  std::vector<std::string> executor_targets;
  // decide[i] != 0: the compiler decides layer first_node + i (assignment[i]
  // is ignored): the first executor in priority order whose profile accepts
  // it. Empty, or one entry per assignment entry.
  std::vector<uint8_t> decide;
  // Device tags the serving worker must offer (sorted, unique); empty: any.
  std::vector<std::string> tags;
  bool collect_profile = false;  // return the profiling CSVs with the result
  // An assigned run of a whole converted model: the model hash of the fp32
  // original it was converted from (the worker runs it on the same input
  // and compares the graph outputs with it too: ExecResult::e2e). Empty: none.
  std::string original_hash;
};

// The key a job's results are stored under (result_key, else model_hash).
inline const std::string& result_key_of(const JobSpec& j) { return j.result_key.empty() ? j.model_hash : j.result_key; }

// The worker target that serves a job: a job whose target names a profile
// file (a sim profile set: it contains '/') is served by `sim` workers;
// otherwise the target itself (sim, astra, a board class).
std::string serving_target(const JobSpec& j);

// Largest message accepted by decode (64 MiB).
inline constexpr size_t kMaxMessageBytes = size_t{64} << 20;

std::string encode_job(const JobSpec& job);
JobSpec decode_job(const void* data, size_t size);
// Throws PipelineError where decode_job would, without decoding.
void validate_job(const void* data, size_t size);

std::string encode_result(const ExecResult& r);
ExecResult decode_result(const void* data, size_t size);

std::string encode_layer_record(const std::vector<ExecResult>& results);
std::vector<ExecResult> decode_layer_record(const void* data, size_t size);

}  // namespace torq::pipeline
