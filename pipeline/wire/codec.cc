#include "pipeline/wire/codec.h"

#include <flatbuffers/flatbuffers.h>

#include "pipeline/core/aligned.h"
#include "pipeline/wire/flat_string.h"
#include "schema/torq_generated.h"

namespace fb = torq::schema;

namespace torq::pipeline {

namespace {

flatbuffers::Offset<fb::Tolerance> put_tol(flatbuffers::FlatBufferBuilder& b, const Tolerance& t) {
  return fb::CreateTolerance(b, t.fp_avg_tol, t.fp_max_tol, t.allowed_wrong);
}

Tolerance get_tol(const fb::Tolerance* t) {
  Tolerance out;
  if (t) {
    out.fp_avg_tol = t->fp_avg_tol();
    out.fp_max_tol = t->fp_max_tol();
    out.allowed_wrong = t->allowed_wrong();
  }
  return out;
}

// The verified root of `bytes` (an aligned view of the caller's buffer,
// which must outlive the returned pointer).
template <class T>
const T* verified_root(const AlignedBytes& bytes, size_t size, const char* what) {
  const uint8_t* data = bytes.data();
  if (!data || size == 0) throw PipelineError(std::string("empty ") + what + " message");
  if (size > kMaxMessageBytes)
    throw PipelineError(std::string(what) + " message of " + std::to_string(size) + " bytes exceeds the cap");
  flatbuffers::Verifier v(data, size, 64, 1000000);
  if (!v.VerifyBuffer<T>(nullptr)) throw PipelineError(std::string("malformed ") + what + " message (verifier failed)");
  return flatbuffers::GetRoot<T>(data);
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::OutputDiff>>> put_diffs(
    flatbuffers::FlatBufferBuilder& b, const std::vector<OutputDiff>& diffs) {
  std::vector<flatbuffers::Offset<fb::OutputDiff>> outs;
  for (const auto& o : diffs)
    outs.push_back(fb::CreateOutputDiff(b, b.CreateString(o.name), o.max_abs, o.mean_abs, o.rmse, o.max_rel, o.pcc,
                                        o.over_tol, o.size, o.nan_mismatch));
  return b.CreateVector(outs);
}

std::vector<OutputDiff> get_diffs(const flatbuffers::Vector<flatbuffers::Offset<fb::OutputDiff>>* v) {
  std::vector<OutputDiff> out;
  if (v)
    for (const auto* o : *v) {
      OutputDiff d;
      d.name = flat_string(o->name());
      d.max_abs = o->max_abs();
      d.mean_abs = o->mean_abs();
      d.rmse = o->rmse();
      d.max_rel = o->max_rel();
      d.pcc = o->pcc();
      d.over_tol = o->over_tol();
      d.size = o->size();
      d.nan_mismatch = o->nan_mismatch();
      out.push_back(d);
    }
  return out;
}

flatbuffers::Offset<fb::Result> put_result(flatbuffers::FlatBufferBuilder& b, const ExecResult& r) {
  auto ov = put_diffs(b, r.outputs);
  flatbuffers::Offset<flatbuffers::String> e2e_ref, e2e_err;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::OutputDiff>>> e2e_outs;
  if (r.e2e) {
    e2e_ref = b.CreateString(r.e2e->reference);
    e2e_err = b.CreateString(r.e2e->error);
    e2e_outs = put_diffs(b, r.e2e->outputs);
  }
  auto job_id = b.CreateString(r.job_id);
  auto ec = b.CreateString(r.error_class);
  auto em = b.CreateString(r.error_message);
  auto tol = put_tol(b, r.tolerance_used);
  auto wid = b.CreateString(r.worker_id);
  auto tc = b.CreateString(r.toolchain);
  auto dd = b.CreateString(r.dedup_of);
  auto chip = r.chip.empty() ? flatbuffers::Offset<flatbuffers::String>() : b.CreateString(r.chip);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::LayerProfile>>> profiles;
  if (!r.profiles.empty()) {
    std::vector<flatbuffers::Offset<fb::LayerProfile>> v;
    for (const auto& p : r.profiles)
      v.push_back(fb::CreateLayerProfile(b, b.CreateString(p.device_csv), b.CreateString(p.host_csv)));
    profiles = b.CreateVector(v);
  }
  flatbuffers::Offset<flatbuffers::Vector<fb::Executor>> placed;
  flatbuffers::Offset<flatbuffers::Vector<double>> layer_ms;
  if (!r.placed.empty()) {
    std::vector<fb::Executor> p;
    for (Executor e : r.placed) p.push_back(static_cast<fb::Executor>(e));
    placed = b.CreateVector(p);
    layer_ms = b.CreateVector(r.layer_ms);
  }
  fb::ResultBuilder rb(b);
  rb.add_job_id(job_id);
  rb.add_executor(static_cast<fb::Executor>(r.executor));
  rb.add_status(static_cast<fb::Status>(r.status));
  rb.add_error_class(ec);
  rb.add_error_message(em);
  rb.add_outputs(ov);
  rb.add_max_abs(r.max_abs);
  rb.add_max_rel(r.max_rel);
  rb.add_pcc(r.pcc);
  rb.add_tolerance_used(tol);
  rb.add_runtime_ms(r.runtime_ms);
  rb.add_timing_runs(r.timing_runs);
  rb.add_host_ms(r.host_ms);
  rb.add_worker_id(wid);
  rb.add_toolchain(tc);
  rb.add_attempts(r.attempts);
  rb.add_cached(r.cached);
  rb.add_dedup_of(dd);
  if (!r.placed.empty()) {
    rb.add_placed(placed);
    rb.add_layer_ms(layer_ms);
  }
  if (!r.chip.empty()) rb.add_chip(chip);
  if (!r.profiles.empty()) rb.add_profiles(profiles);
  if (r.e2e) {
    rb.add_e2e_reference(e2e_ref);
    rb.add_e2e_outputs(e2e_outs);
    rb.add_e2e_error(e2e_err);
  }
  return rb.Finish();
}

ExecResult get_result(const fb::Result* r) {
  ExecResult out;
  out.job_id = flat_string(r->job_id());
  const int ex = static_cast<int>(r->executor());
  const int st = static_cast<int>(r->status());
  if (ex < 0 || ex > 2) throw PipelineError("result has an unknown executor " + std::to_string(ex));
  if (st < 0 || st > 2) throw PipelineError("result has an unknown status " + std::to_string(st));
  out.executor = static_cast<Executor>(ex);
  out.status = static_cast<Status>(st);
  out.error_class = flat_string(r->error_class());
  out.error_message = flat_string(r->error_message());
  out.outputs = get_diffs(r->outputs());
  out.max_abs = r->max_abs();
  out.max_rel = r->max_rel();
  out.pcc = r->pcc();
  out.tolerance_used = get_tol(r->tolerance_used());
  out.runtime_ms = r->runtime_ms();
  out.timing_runs = r->timing_runs();
  out.host_ms = r->host_ms();
  out.worker_id = flat_string(r->worker_id());
  out.toolchain = flat_string(r->toolchain());
  out.attempts = r->attempts();
  out.cached = r->cached();
  out.dedup_of = flat_string(r->dedup_of());
  if (r->placed())
    for (const auto e : *r->placed()) {
      const int v = static_cast<int>(e);
      if (v < 0 || v > 2) throw PipelineError("result placed a layer on an unknown executor " + std::to_string(v));
      out.placed.push_back(static_cast<Executor>(v));
    }
  if (r->layer_ms()) out.layer_ms.assign(r->layer_ms()->begin(), r->layer_ms()->end());
  out.chip = flat_string(r->chip());
  if (r->profiles())
    for (const auto* p : *r->profiles()) out.profiles.push_back({flat_string(p->device_csv()), flat_string(p->host_csv())});
  if (r->e2e_reference()) {
    out.e2e.emplace();
    out.e2e->reference = flat_string(r->e2e_reference());
    out.e2e->outputs = get_diffs(r->e2e_outputs());
    out.e2e->error = flat_string(r->e2e_error());
    if (out.e2e->outputs.empty() == out.e2e->error.empty())
      throw PipelineError("result's end-to-end comparison has " +
                          std::string(out.e2e->outputs.empty() ? "neither outputs nor an error" : "both outputs and an error"));
  }
  if (out.layer_ms.size() != out.placed.size())
    throw PipelineError("result has " + std::to_string(out.layer_ms.size()) + " layer times for " +
                        std::to_string(out.placed.size()) + " placed layers");
  return out;
}

}  // namespace

std::string serving_target(const JobSpec& j) {
  return j.target.find('/') != std::string::npos ? std::string("sim") : j.target;
}

std::string encode_job(const JobSpec& j) {
  flatbuffers::FlatBufferBuilder b(256);
  auto id = b.CreateString(j.id);
  auto hash = b.CreateString(j.model_hash);
  auto target = b.CreateString(j.target);
  auto rkey = j.result_key.empty() ? flatbuffers::Offset<flatbuffers::String>() : b.CreateString(j.result_key);
  auto tol = put_tol(b, j.tolerance);
  flatbuffers::Offset<flatbuffers::Vector<fb::Executor>> assignment;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> exec_targets;
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> decide;
  if (!j.assignment.empty()) {
    std::vector<fb::Executor> a;
    for (Executor e : j.assignment) a.push_back(static_cast<fb::Executor>(e));
    assignment = b.CreateVector(a);
    exec_targets = b.CreateVectorOfStrings(j.executor_targets);
    if (!j.decide.empty()) decide = b.CreateVector(j.decide);
  }
  auto original = j.original_hash.empty() ? flatbuffers::Offset<flatbuffers::String>() : b.CreateString(j.original_hash);
  auto tags = j.tags.empty() ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>>()
                             : b.CreateVectorOfStrings(j.tags);
  fb::JobBuilder jb(b);
  jb.add_id(id);
  jb.add_model_hash(hash);
  jb.add_first_node(j.first_node);
  jb.add_last_node(j.last_node);
  jb.add_executor(static_cast<fb::Executor>(j.executor));
  jb.add_target(target);
  jb.add_tolerance(tol);
  jb.add_timing_runs(j.timing_runs);
  jb.add_timeout_ms(j.timeout_ms);
  jb.add_input_mode(j.random_inputs ? fb::InputMode::random : fb::InputMode::activations);
  jb.add_seed(j.seed);
  jb.add_input_lo(j.input_lo);
  jb.add_input_hi(j.input_hi);
  jb.add_bf16_rounding_rne(j.bf16_rne);
  if (!j.result_key.empty()) jb.add_result_key(rkey);
  if (!j.tags.empty()) jb.add_tags(tags);
  if (j.collect_profile) jb.add_collect_profile(true);
  if (!j.original_hash.empty()) jb.add_original_model_hash(original);
  if (!j.assignment.empty()) {
    jb.add_assignment(assignment);
    jb.add_executor_targets(exec_targets);
    if (!j.decide.empty()) jb.add_decide(decide);
  }
  b.Finish(jb.Finish());
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

namespace {

// What makes a verified job message a job: every check decode_job makes,
// on the message itself (no JobSpec built).
void check_job(const fb::Job* j) {
  const int ex = static_cast<int>(j->executor());
  if (ex < 0 || ex > 2) throw PipelineError("job has an unknown executor " + std::to_string(ex));
  if (j->result_key() && j->result_key()->string_view().find('/') != std::string_view::npos)
    throw PipelineError("job result key contains '/'");
  const size_t assigned = j->assignment() ? j->assignment()->size() : 0;
  if (j->assignment())
    for (const auto e : *j->assignment()) {
      const int v = static_cast<int>(e);
      if (v < 0 || v > 2) throw PipelineError("job assignment has an unknown executor " + std::to_string(v));
    }
  const size_t decided = j->decide() ? j->decide()->size() : 0;
  if (decided != 0 && decided != assigned)
    throw PipelineError("job decide has " + std::to_string(decided) + " entries for " + std::to_string(assigned) +
                        " assigned layers");
  if (!j->model_hash() || j->model_hash()->size() == 0) throw PipelineError("job has no model hash");
  if (j->last_node() < j->first_node()) throw PipelineError("job has an empty node range");
  if (assigned != 0 && assigned != j->last_node() - j->first_node() + 1)
    throw PipelineError("job assignment has " + std::to_string(assigned) + " executors for " +
                        std::to_string(j->last_node() - j->first_node() + 1) + " layers");
  if (j->original_model_hash() && j->original_model_hash()->size() != 0 && assigned == 0)
    throw PipelineError("job names an fp32 original but is not an assigned run");
  const size_t targets = j->executor_targets() ? j->executor_targets()->size() : 0;
  if (targets != 0 && targets != 3) throw PipelineError("job executor_targets must name 0 or 3 targets");
}

}  // namespace

void validate_job(const void* data, size_t size) {
  const AlignedBytes bytes(data, size);
  check_job(verified_root<fb::Job>(bytes, size, "job"));
}

JobSpec decode_job(const void* data, size_t size) {
  const AlignedBytes bytes(data, size);
  const auto* j = verified_root<fb::Job>(bytes, size, "job");
  check_job(j);
  JobSpec out;
  out.id = flat_string(j->id());
  out.model_hash = flat_string(j->model_hash());
  out.first_node = j->first_node();
  out.last_node = j->last_node();
  out.executor = static_cast<Executor>(j->executor());
  out.target = flat_string(j->target());
  out.tolerance = get_tol(j->tolerance());
  out.timing_runs = j->timing_runs();
  out.timeout_ms = j->timeout_ms();
  out.random_inputs = j->input_mode() == fb::InputMode::random;
  out.seed = j->seed();
  out.input_lo = j->input_lo();
  out.input_hi = j->input_hi();
  out.bf16_rne = j->bf16_rounding_rne();
  out.result_key = flat_string(j->result_key());
  if (j->assignment())
    for (const auto e : *j->assignment()) out.assignment.push_back(static_cast<Executor>(e));
  if (j->executor_targets())
    for (const auto* t : *j->executor_targets()) out.executor_targets.push_back(flat_string(t));
  if (j->decide())
    for (const auto d : *j->decide()) out.decide.push_back(d ? 1 : 0);
  if (j->tags())
    for (const auto* t : *j->tags()) out.tags.push_back(flat_string(t));
  out.collect_profile = j->collect_profile();
  out.original_hash = flat_string(j->original_model_hash());
  return out;
}

std::string encode_result(const ExecResult& r) {
  flatbuffers::FlatBufferBuilder b(512);
  b.Finish(put_result(b, r));
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

ExecResult decode_result(const void* data, size_t size) {
  const AlignedBytes bytes(data, size);
  return get_result(verified_root<fb::Result>(bytes, size, "result"));
}

std::string encode_layer_record(const std::vector<ExecResult>& results) {
  flatbuffers::FlatBufferBuilder b(1024);
  std::vector<flatbuffers::Offset<fb::Result>> rs;
  for (const auto& r : results) rs.push_back(put_result(b, r));
  auto v = b.CreateVector(rs);
  b.Finish(fb::CreateLayerRecord(b, v));
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

std::vector<ExecResult> decode_layer_record(const void* data, size_t size) {
  const AlignedBytes bytes(data, size);
  const auto* rec = verified_root<fb::LayerRecord>(bytes, size, "layer record");
  std::vector<ExecResult> out;
  if (rec->results())
    for (const auto* r : *rec->results()) out.push_back(get_result(r));
  return out;
}

}  // namespace torq::pipeline
