#include "worker/runner/job_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <onnx/onnx_pb.h>

#include "pipeline/plan/compare.h"
#include "pipeline/model/layer_nodes.h"
#include "pipeline/core/sha256.h"
#include "worker/runner/compare_outputs.h"
#include "worker/runner/model_state.h"
#include "worker/runner/reference_release.h"
#include "pipeline/base/error.h"
#include "pipeline/base/onnx_scope.h"
#include "worker/engine/session.h"
#include "worker/engine/tensor_io.h"

namespace torq::runner {

using engine::DType;
using engine::Tensor;
using pipeline::ExecResult;
using pipeline::JobSpec;

namespace {

using Clock = std::chrono::steady_clock;

// The reference's profile: the built-in fp32 host profile.
std::shared_ptr<const engine::ExecutorProfile> host_profile() {
  static const auto p =
      std::make_shared<const engine::ExecutorProfile>(engine::ExecutorProfile::resolve("host"));
  return p;
}

void set_type(onnx::ValueInfoProto* v, const std::string& name, const Tensor* t, const onnx::ValueInfoProto* known) {
  v->set_name(name);
  if (t) {
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(engine::dtype_to_onnx(t->dtype()));
    for (int64_t d : t->shape()) tt->mutable_shape()->add_dim()->set_dim_value(d);
  } else if (known) {
    *v->mutable_type() = known->type();
  } else {
    v->mutable_type()->mutable_tensor_type()->set_elem_type(0);
  }
}

Tensor random_like(const Tensor& like, float lo, float hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor f(DType::kF32, like.shape());
  float* p = f.data<float>();
  for (int64_t i = 0; i < f.numel(); ++i) p[i] = u(rng);
  return engine::cast_tensor(f, like.dtype(), engine::Rounding::kNearestEven);
}

// An executor's output as the next layer receives it: in the type the model
// gives the tensor. nss widens a bf16 MatMul/Gemm to f32; in a bf16 model the
// tensor is bf16, and the compiler narrows it before the next op (without
// this, an nss op after it refuses the f32 tensor in the chained run, though
// every layer passes alone).
Tensor in_model_type(const std::optional<Tensor>& reference, Tensor t, bool rne) {
  if (!reference || !engine::is_float(t.dtype()) || !engine::is_float(reference->dtype()) ||
      t.dtype() == reference->dtype())
    return t;
  return engine::cast_tensor(t, reference->dtype(), rne ? engine::Rounding::kNearestEven : engine::Rounding::kTruncate);
}

// A job's layers [first, last] marked running in its model's state for as
// long as it lives (the reference's release window, reference_release.h).
template <class State>
class JobWindow {
 public:
  JobWindow(State& ms, uint32_t first, uint32_t last) : ms_(ms), first_(first) { ms_.job_started(first, last); }
  ~JobWindow() { ms_.job_ended(first_); }
  JobWindow(const JobWindow&) = delete;
  JobWindow& operator=(const JobWindow&) = delete;

 private:
  State& ms_;
  uint32_t first_;
};

// `r` as an error of class `cls`, with the time since `t0`.
ExecResult failed(ExecResult r, const std::string& cls, const std::string& msg, Clock::time_point t0) {
  r.status = pipeline::Status::kError;
  r.error_class = cls;
  r.error_message = msg;
  r.host_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return r;
}

}  // namespace

struct JobRunner::SubModel {
  onnx::ModelProto proto;
  std::vector<Tensor> feeds;
  std::vector<std::string> outs;
  std::string error;
};

JobRunner::JobRunner(FetchModel fetch, std::string worker_id, std::unique_ptr<Backend> backend, int threads)
    : fetch_(std::move(fetch)), worker_id_(std::move(worker_id)), backend_(std::move(backend)), threads_(threads) {}
JobRunner::~JobRunner() = default;

std::shared_ptr<JobRunner::ModelState> JobRunner::model(const JobSpec& job) {
  const std::string key = job.model_hash + "/" + std::to_string(job.seed) + (job.bf16_rne ? "/rne" : "/trunc");
  std::shared_ptr<Loading> slot;
  {
    std::lock_guard<std::mutex> lk(models_mu_);
    auto it = models_.find(key);
    if (it == models_.end()) {
      // Bound memory: a worker serves few models at once (a job still
      // running on an evicted model keeps it alive).
      if (models_.size() >= 4) models_.clear();
      it = models_.emplace(key, std::make_shared<Loading>()).first;
    }
    slot = it->second;
  }
  // One thread loads a model; the others wait for it (or for its error).
  std::call_once(slot->once, [&] {
    try {
      slot->state = load_model(job);
    } catch (const std::exception& e) {
      slot->error = e.what();
    }
  });
  if (!slot->state) {
    std::lock_guard<std::mutex> lk(models_mu_);
    auto it = models_.find(key);
    if (it != models_.end() && it->second == slot) models_.erase(it);  // the next job tries again
    throw pipeline::PipelineError(slot->error);
  }
  return slot->state;
}

void JobRunner::expect_preload() {
  std::lock_guard<std::mutex> lk(preload_mu_);
  preload_pending_ = true;
}

void JobRunner::preload_failed() {
  {
    std::lock_guard<std::mutex> lk(preload_mu_);
    preload_pending_ = false;
  }
  preload_cv_.notify_all();
}

void JobRunner::preload(std::unique_ptr<onnx::ModelProto> proto, uint64_t seed, bool bf16_rne) {
  auto st = std::make_shared<ModelState>();
  st->proto = std::move(*proto);
  proto.reset();
  // Its identity (the SHA-256 of its serialisation, tens of ms) is taken on
  // another thread while its reference run is set up: both only read it.
  std::string hash, hash_error;
  std::thread hasher([&] {
    try {
      hash = pipeline::sha256_hex_of(st->proto);
    } catch (const std::exception& e) {
      hash_error = e.what();
    }
  });
  set_up(*st, seed, bf16_rne);
  hasher.join();
  if (!hash_error.empty()) throw pipeline::PipelineError(hash_error);
  {
    std::lock_guard<std::mutex> lk(preload_mu_);
    preloaded_[hash] = Preloaded{std::move(st), seed, bf16_rne};
    preload_pending_ = false;
  }
  preload_cv_.notify_all();
  JobSpec job;
  job.model_hash = hash;
  job.seed = seed;
  job.bf16_rne = bf16_rne;
  auto ms = model(job);  // or waits for a job loading it already
  for (int i = 0; i < 8; ++i) ms->step_ahead();  // the first nodes (and their kernels' compilation)
}

std::shared_ptr<JobRunner::ModelState> JobRunner::load_model(const JobSpec& job) {
  {
    std::unique_lock<std::mutex> lk(preload_mu_);
    preload_cv_.wait(lk, [&] { return !preload_pending_; });
    auto it = preloaded_.find(job.model_hash);
    if (it != preloaded_.end() && it->second.seed == job.seed && it->second.bf16_rne == job.bf16_rne) {
      auto st = std::move(it->second.state);
      preloaded_.erase(it);
      return st;
    }
  }
  auto st = std::make_shared<ModelState>();
  const std::string bytes = fetch_(job.model_hash);
  if (!st->proto.ParseFromString(bytes)) throw pipeline::PipelineError("model " + job.model_hash + " is not ONNX");
  set_up(*st, job.seed, job.bf16_rne);
  return st;
}

void JobRunner::set_up(ModelState& st, uint64_t seed, bool bf16_rne) {
  const auto& g = st.proto.graph();
  st.layers = pipeline::layer_nodes(g);
  st.outputs_of.emplace(g, st.layers);
  for (const auto& v : g.value_info()) st.value_info[v.name()] = &v;
  for (const auto& v : g.input()) st.value_info[v.name()] = &v;
  for (const auto& v : g.output()) st.value_info[v.name()] = &v;
  // The reference run on a seeded input gives every layer its real inputs.
  try {
    engine::SessionOptions so;
    so.threads = threads_;
    so.rounding = bf16_rne ? engine::Rounding::kNearestEven : engine::Rounding::kTruncate;
    auto s = engine::Session::from_proto(st.proto, so);
    for (const auto& init : g.initializer())
      if (s->is_constant(init.name())) st.constants.insert(init.name());
    for (const auto& n : g.node())
      for (const auto& o : n.output())
        if (!o.empty() && s->is_constant(o)) st.constants.insert(o);
    // The run's steps on the seeded input: the first run's, and a rewind's.
    const auto start_run = [seed](engine::Session& session) {
      return session.start_steps(session.random_inputs(seed, -1.f, 1.f));
    };
    if (release_window() >= 0)  // (below 0 everything is kept: nothing to track)
      st.release_behind(ReferenceRelease(last_readers(st.proto.graph(), st.layers, *st.outputs_of), release_window()),
                        [&proto = st.proto, so, start_run] {
                          // (A test's fault: the second run fails at once.)
                          if (const char* f = std::getenv("TORQ_REFERENCE_REWIND_FAULT"); f && std::string(f) == "1")
                            throw std::runtime_error("injected by TORQ_REFERENCE_REWIND_FAULT=1");
                          auto again = engine::Session::from_proto(proto, so);
                          auto steps = start_run(*again);
                          return std::make_pair(std::move(again), std::move(steps));
                        });
    auto steps = start_run(*s);
    st.start(std::move(s), std::move(steps));
  } catch (const std::exception& e) {
    st.stopped(e.what());
    // Keep what is fixed regardless of the run: initializers and Constant nodes.
    for (const auto& init : g.initializer()) {
      st.keep(init.name(), engine::tensor_from_proto(init));
      st.constants.insert(init.name());
    }
    for (const auto& n : g.node())
      if (n.op_type() == "Constant" && n.output_size())
        for (const auto& a : n.attribute())
          if (a.name() == "value" && a.has_t()) {
            st.keep(n.output(0), engine::tensor_from_proto(a.t()));
            st.constants.insert(n.output(0));
          }
  }
}

// The value layer `layer`'s input `in` takes in a layer job: a constant, a
// real activation of the full run, a random stand-in past a node the full
// run could not execute, or (job.random_inputs) a seeded random tensor.
// nullopt with *error set when there is none.
std::optional<Tensor> JobRunner::input_value(ModelState& ms, const JobSpec& job, const std::string& in,
                                             uint32_t layer, uint64_t input_no, std::string* error) {
  std::optional<Tensor> v = ms.value(in);
  if (!v) {
    auto vi = ms.value_info.find(in);
    std::optional<Tensor> stand_in;
    if (vi != ms.value_info.end() && vi->second->type().has_tensor_type()) {
      const auto& tt = vi->second->type().tensor_type();
      const DType dt = engine::dtype_from_onnx(tt.elem_type());
      engine::Shape shape;
      bool known = dt != DType::kUndefined && tt.has_shape();
      for (const auto& d : tt.shape().dim()) {
        known = known && d.has_dim_value();
        shape.push_back(d.dim_value());
      }
      if (known) stand_in = random_like(Tensor(dt, shape), -1.f, 1.f, job.seed * 7919 + layer);
    }
    if (!stand_in) {
      *error = "no value for input '" + in + "' (the full-model run stopped: " + ms.finish() +
               ") and no static shape to stand in";
      return std::nullopt;
    }
    v = ms.stand_in(in, *stand_in);
  }
  if (ms.constants.count(in) || !job.random_inputs || !engine::is_float(v->dtype())) return v;
  return random_like(*v, job.input_lo, job.input_hi, job.seed * 1000003 + layer * 131 + input_no);
}

bool JobRunner::materialise(ModelState& ms, const JobSpec& job, uint32_t first, uint32_t last,
                            const std::map<std::string, Tensor>* assigned, SubModel* out) {
  onnx::ModelProto& sub = out->proto;
  sub.set_ir_version(ms.proto.ir_version());
  *sub.mutable_opset_import() = ms.proto.opset_import();
  auto* g = sub.mutable_graph();
  g->set_name("layer");
  // The first layer of the range each node runs for (seeds inputs by layer).
  std::map<int, uint32_t> layer_of;
  for (uint32_t i = last + 1; i-- > first;)
    for (int p : ms.layers[i].nodes) layer_of[p] = i;
  std::set<std::string> produced, fed;
  uint64_t input_no = 0;
  for (int pos : pipeline::range_nodes(ms.layers, first, last)) {
    const auto& node = ms.proto.graph().node(pos);
    for (const auto& in : base::node_reads(node)) {  // an If's outer-scope reads are fed too
      if (produced.count(in) || fed.count(in)) continue;
      fed.insert(in);
      // An assigned run feeds the layers' own outputs (constants stay).
      if (assigned && !ms.constants.count(in)) {
        auto a = assigned->find(in);
        if (a == assigned->end()) {
          out->error = "no assigned value for input '" + in + "'";
          return false;
        }
        ++input_no;
        set_type(g->add_input(), in, &a->second, nullptr);
        out->feeds.push_back(a->second);
        continue;
      }
      std::optional<Tensor> t = input_value(ms, job, in, layer_of[pos], input_no, &out->error);
      if (!t) return false;
      if (ms.constants.count(in)) {
        engine::tensor_to_proto(*t, g->add_initializer(), in);
        continue;
      }
      ++input_no;
      set_type(g->add_input(), in, &*t, nullptr);
      out->feeds.push_back(std::move(*t));
    }
    *g->add_node() = node;
    for (const auto& o : node.output())
      if (!o.empty()) produced.insert(o);
  }
  out->outs = (*ms.outputs_of)(first, last);
  for (const auto& o : out->outs) {
    const std::optional<Tensor> v = ms.value(o);
    auto vi = ms.value_info.find(o);
    set_type(g->add_output(), o, v ? &*v : nullptr,
             vi == ms.value_info.end() ? nullptr : vi->second);
  }
  return true;
}

// The values an assigned run of [first, last] starts from: the graph inputs
// and every activation that enters the range from before it, as the fp32
// host reference computed them (constants stay baked into the layers).
std::map<std::string, Tensor> JobRunner::range_inputs(ModelState& ms, uint32_t first, uint32_t last) const {
  std::map<std::string, Tensor> in;
  std::set<std::string> produced;
  for (int pos : pipeline::range_nodes(ms.layers, first, last)) {
    const auto& node = ms.proto.graph().node(pos);
    for (const auto& name : base::node_reads(node)) {
      if (produced.count(name) || ms.constants.count(name)) continue;
      if (auto v = ms.value(name)) in.emplace(name, *v);
    }
    for (const auto& o : node.output()) produced.insert(o);
  }
  return in;
}

BackendResult JobRunner::run_on(const JobSpec& job, pipeline::Executor e, const SubModel& sm, uint32_t runs) {
  BackendRequest req;
  req.model = &sm.proto;
  req.feeds = &sm.feeds;
  req.executor = e;
  req.target = job.target;
  if (job.executor_targets.size() == 3 && !job.executor_targets[static_cast<size_t>(e)].empty())
    req.target = job.executor_targets[static_cast<size_t>(e)];
  req.bf16_rne = job.bf16_rne;
  req.runs = std::max<uint32_t>(1, runs);
  req.timeout_ms = job.timeout_ms;
  req.label = job.id;
  req.collect_profile = job.collect_profile;
  return backend_->run(req);
}

ExecResult JobRunner::run_assigned(const JobSpec& job, ModelState& ms, ExecResult r,
                                   std::chrono::steady_clock::time_point t0) {
  auto fail = [&](const std::string& cls, const std::string& msg) { return failed(std::move(r), cls, msg, t0); };
  if (const std::string stopped = ms.finish(); !stopped.empty()) {
    // host is an executor too: an op its reference engine lacks runs nowhere.
    const bool unsupported = stopped.find("not supported") != std::string::npos;
    return fail(unsupported ? "unsupported" : "reference",
                "the fp32 host reference run of the model failed: " + stopped +
                    (unsupported ? " (no executor accepts it: host, the reference, does not run it either)" : ""));
  }
  std::map<std::string, Tensor> assigned = range_inputs(ms, job.first_node, job.last_node);
  if (backend_->compiles_assigned()) return run_assigned_whole(job, ms, std::move(r), t0, assigned);
  double sim_ms = 0;
  for (uint32_t i = job.first_node; i <= job.last_node; ++i) {
    const size_t k = i - job.first_node;
    const bool decide = k < job.decide.size() && job.decide[k];
    const auto& node = ms.proto.graph().node(ms.layers[i].compute);
    const std::string what = "layer " + std::to_string(i) + " (" + node.op_type() + " '" +
                             (node.name().empty() ? node.output(0) : node.name()) + "')";
    SubModel sm;
    if (!materialise(ms, job, i, i, &assigned, &sm)) return fail("runtime", what + ": " + sm.error);
    BackendResult lr;
    std::string rejected;
    std::optional<pipeline::Executor> ran;
    for (pipeline::Executor e : pipeline::kExecutorPriority) {
      if (!decide && e != job.assignment[k]) continue;
      lr = run_on(job, e, sm, 1);
      if (lr.ok) {
        ran = e;
        break;
      }
      if (!decide || lr.accepted)  // an assigned executor, or the one the compiler chose, failed
        return fail(lr.error_class, what + " on " + pipeline::executor_name(e) + ": " + lr.error_message);
      rejected += std::string(rejected.empty() ? "" : "; ") + pipeline::executor_name(e) + ": " + lr.error_message;
    }
    if (!ran) return fail("unsupported", what + ": no executor accepts it (" + rejected + ")");
    if (r.chip.empty()) r.chip = lr.chip;
    if (job.collect_profile) r.profiles.push_back({lr.device_csv, lr.host_csv});
    r.placed.push_back(*ran);
    r.layer_ms.push_back(std::max(0.0, lr.runtime_ms));
    sim_ms += std::max(0.0, lr.runtime_ms);
    for (size_t o = 0; o < lr.outputs.size() && o < sm.outs.size(); ++o)
      assigned.insert_or_assign(sm.outs[o], in_model_type(ms.value(sm.outs[o]), lr.outputs[o], job.bf16_rne));
  }
  for (const auto& name : (*ms.outputs_of)(job.first_node, job.last_node)) {
    auto a = assigned.find(name);
    const std::optional<Tensor> x = ms.value(name);
    if (a == assigned.end() || !x) return fail("runtime", "output '" + name + "' was not computed by the assigned run");
    r.outputs.push_back(diff_output(name, a->second, *x, job.tolerance));
  }
  r.runtime_ms = sim_ms;
  r.timing_runs = 1;
  pipeline::judge(&r, job.tolerance);
  if (!job.original_hash.empty()) try {
      r.e2e = end_to_end(job, ms, assigned);
    } catch (const std::exception& e) {
      return fail("fetch", e.what());
    }
  r.host_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return r;
}

// An assigned run as the real tool makes it: the range's sub-model compiled
// once with the assignment handed to the compiler (layers it may decide
// left out), run once, its outputs compared with the fp32 host reference.
// Where the compiler put each op is the compiler's: `placed` stays empty.
ExecResult JobRunner::run_assigned_whole(const JobSpec& job, ModelState& ms, ExecResult r,
                                         std::chrono::steady_clock::time_point t0,
                                         const std::map<std::string, Tensor>& assigned) {
  auto fail = [&](const std::string& cls, const std::string& msg) { return failed(std::move(r), cls, msg, t0); };
  const std::string what = "layers " + std::to_string(job.first_node) + ".." + std::to_string(job.last_node);
  SubModel sm;
  if (!materialise(ms, job, job.first_node, job.last_node, &assigned, &sm)) return fail("runtime", what + ": " + sm.error);
  BackendRequest req;
  req.model = &sm.proto;
  req.feeds = &sm.feeds;
  req.target = job.target;
  req.bf16_rne = job.bf16_rne;
  req.runs = 1;
  req.timeout_ms = job.timeout_ms;
  req.label = job.id;
  req.collect_profile = job.collect_profile;
  req.assigned_run = true;
  for (uint32_t i = job.first_node; i <= job.last_node; ++i) {
    const size_t k = i - job.first_node;
    const bool decide = k < job.decide.size() && job.decide[k];
    const auto& node = ms.proto.graph().node(ms.layers[i].compute);
    if (!decide && k < job.assignment.size() && node.output_size() > 0) req.assignment[node.output(0)] = job.assignment[k];
  }
  const BackendResult lr = backend_->run(req);
  if (!lr.ok) return fail(lr.error_class, what + " compiled with their executor map: " + lr.error_message);
  r.chip = lr.chip;
  if (job.collect_profile) r.profiles.push_back({lr.device_csv, lr.host_csv});
  std::map<std::string, Tensor> values = assigned;  // the inputs, then the outputs (end_to_end)
  for (size_t o = 0; o < sm.outs.size(); ++o) {
    const std::optional<Tensor> x = ms.value(sm.outs[o]);
    if (o >= lr.outputs.size() || !x) return fail("runtime", "output '" + sm.outs[o] + "' was not computed by the assigned run");
    Tensor got = in_model_type(x, lr.outputs[o], job.bf16_rne);
    r.outputs.push_back(diff_output(sm.outs[o], got, *x, job.tolerance));
    values.insert_or_assign(sm.outs[o], std::move(got));
  }
  r.runtime_ms = lr.runtime_ms;
  r.timing_runs = 1;
  pipeline::judge(&r, job.tolerance);
  if (!job.original_hash.empty()) try {
      r.e2e = end_to_end(job, ms, values);
    } catch (const std::exception& e) {
      return fail("fetch", e.what());
    }
  r.host_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return r;
}

ExecResult::EndToEnd JobRunner::end_to_end(const JobSpec& job, ModelState& ms,
                                           const std::map<std::string, Tensor>& values) {
  ExecResult::EndToEnd e;
  e.reference = "fp32 original " + job.original_hash.substr(0, 12) + " on the same input";
  if (job.first_node != 0 || job.last_node + 1 != ms.layers.size()) {
    e.error = "not measured: the run covers layers " + std::to_string(job.first_node) + ".." +
              std::to_string(job.last_node) + ", not the whole model";
    return e;
  }
  const std::string bytes = fetch_(job.original_hash);  // throws: the job's fetch error
  onnx::ModelProto original;
  if (!original.ParseFromString(bytes)) throw pipeline::PipelineError("the fp32 original " + job.original_hash + " is not ONNX");
  const auto& g = ms.proto.graph();
  std::set<std::string> inits;
  for (const auto& i : g.initializer()) inits.insert(i.name());
  std::vector<std::string> fed;  // the variant's graph inputs, in order
  for (const auto& i : g.input())
    if (!inits.count(i.name())) fed.push_back(i.name());
  try {
    engine::SessionOptions so;
    so.threads = threads_;
    so.profile = host_profile();
    auto s = engine::Session::from_proto(original, so);
    std::vector<Tensor> feeds;
    for (size_t i = 0; i < s->inputs().size(); ++i) {
      const engine::ValueInfo& vi = s->inputs()[i];
      auto v = values.find(vi.name);
      if (v == values.end() && i < fed.size()) v = values.find(fed[i]);
      if (v == values.end()) {
        e.error = "the fp32 original's input '" + vi.name + "' is not one of this model's inputs";
        return e;
      }
      const Tensor& t = v->second;
      feeds.push_back(vi.dtype == DType::kUndefined || vi.dtype == t.dtype()
                          ? t
                          : engine::cast_tensor(t, vi.dtype, engine::Rounding::kNearestEven));
    }
    const std::vector<Tensor> expected = s->run(feeds);
    if (expected.size() != static_cast<size_t>(g.output_size())) {
      e.error = "the fp32 original has " + std::to_string(expected.size()) + " outputs, this model " +
                std::to_string(g.output_size());
      return e;
    }
    for (size_t o = 0; o < expected.size(); ++o) {
      const std::string& name = g.output(static_cast<int>(o)).name();
      auto v = values.find(name);
      if (v == values.end()) {
        e.error = "output '" + name + "' was not computed by the assigned run";
        return e;
      }
      const Tensor& got = v->second;
      const bool widen = engine::is_float(got.dtype()) && engine::is_float(expected[o].dtype()) &&
                         got.dtype() != expected[o].dtype();
      e.outputs.push_back(diff_output(
          name, widen ? engine::cast_tensor(got, expected[o].dtype(), engine::Rounding::kNearestEven) : got,
          expected[o], job.tolerance));
    }
  } catch (const std::exception& x) {
    e.outputs.clear();
    e.error = std::string("the fp32 original's run failed: ") + x.what();
  }
  return e;
}

// The reference outputs of a layer job taken from the worker's full-model
// run when the job's inputs are that run's activations: the same engine
// computing the same node on the same values (discover of mobilenetv2 and
// the demo in fp32, bf16 and int8 gives reports equal in every metric either
// way), and one session run less per job. Empty when the inputs are not
// those (random inputs, an output the run did not reach), or when TORQ_REFERENCE_PER_JOB=1 asks for the per-job reference
// run (to check exactly that equality).
std::vector<Tensor> JobRunner::full_run_outputs(ModelState& ms, const JobSpec& job, const std::vector<std::string>& outs) {
  static const bool per_job = [] {
    const char* e = std::getenv("TORQ_REFERENCE_PER_JOB");
    return e && std::string(e) == "1";
  }();
  std::vector<Tensor> out;
  if (per_job || job.random_inputs) return out;
  for (const auto& name : outs) {
    std::optional<Tensor> v = ms.value(name);
    if (!v) return {};
    out.push_back(std::move(*v));
  }
  return out;
}

ExecResult JobRunner::run(const JobSpec& job) {
  const auto t0 = Clock::now();
  ExecResult r;
  r.job_id = job.id;
  r.executor = job.executor;
  r.worker_id = worker_id_;
  r.toolchain = backend_->identity();
  r.tolerance_used = job.tolerance;
  auto fail = [&](const std::string& cls, const std::string& msg) { return failed(r, cls, msg, t0); };
  std::shared_ptr<ModelState> ms;
  try {
    ms = model(job);
  } catch (const std::exception& e) {
    return fail("fetch", e.what());
  }
  if (job.last_node >= ms->layers.size())
    return fail("import", "node " + std::to_string(job.last_node) + " out of range (model has " +
                              std::to_string(ms->layers.size()) + " layers)");
  const JobWindow window(*ms, job.first_node, job.last_node);
  try {
    return job.assignment.empty() ? run_layers(job, *ms, r, t0) : run_assigned(job, *ms, r, t0);
  } catch (const ReferenceLost& e) {  // a rewind that failed (reference_release.h)
    return fail("reference", e.what());
  }
}

JobRunner::LayerCase JobRunner::layer_case(const JobSpec& job) {
  std::shared_ptr<ModelState> ms = model(job);
  if (job.last_node >= ms->layers.size() || job.first_node > job.last_node)
    throw pipeline::PipelineError("layers " + std::to_string(job.first_node) + ".." + std::to_string(job.last_node) +
                                  " out of range (model has " + std::to_string(ms->layers.size()) + " layers)");
  const JobWindow window(*ms, job.first_node, job.last_node);
  SubModel sm;
  if (!materialise(*ms, job, job.first_node, job.last_node, nullptr, &sm)) throw pipeline::PipelineError(sm.error);
  LayerCase c;
  c.expected = full_run_outputs(*ms, job, sm.outs);
  if (c.expected.empty()) {
    engine::SessionOptions so;
    so.threads = threads_;
    so.rounding = job.bf16_rne ? engine::Rounding::kNearestEven : engine::Rounding::kTruncate;
    so.profile = host_profile();
    c.expected = engine::Session::from_proto(sm.proto, so)->run(sm.feeds);
  }
  c.model = std::make_unique<onnx::ModelProto>(std::move(sm.proto));
  c.feeds = std::move(sm.feeds);
  c.outs = std::move(sm.outs);
  return c;
}

ExecResult JobRunner::run_layers(const JobSpec& job, ModelState& ms, ExecResult r, Clock::time_point t0) {
  auto fail = [&](const std::string& cls, const std::string& msg) { return failed(r, cls, msg, t0); };
  SubModel sm;
  if (!materialise(ms, job, job.first_node, job.last_node, nullptr, &sm)) return fail("reference", sm.error);
  const onnx::ModelProto& sub = sm.proto;
  const std::vector<Tensor>& feeds = sm.feeds;
  const std::vector<std::string>& outs = sm.outs;
  const engine::Rounding rounding = job.bf16_rne ? engine::Rounding::kNearestEven : engine::Rounding::kTruncate;
  // Reference: the fp32 host computation of the same sub-model (kept from
  // the full-model run when that computed it on these inputs).
  std::vector<Tensor> expected = full_run_outputs(ms, job, outs);
  if (expected.empty()) try {
    engine::SessionOptions so;
    so.threads = threads_;
    so.rounding = rounding;
    so.profile = host_profile();
    auto ref = engine::Session::from_proto(sub, so);
    expected = ref->run(feeds);
  } catch (const std::exception& e) {
    return fail("reference", std::string("reference (host fp32) failed: ") + e.what());
  }
  // The executor, by the backend.
  BackendResult br = run_on(job, job.executor, sm, job.timing_runs);
  r.chip = br.chip;
  if (!br.ok) return fail(br.error_class, br.error_message);
  const std::vector<Tensor>& actual = br.outputs;
  if (actual.size() != expected.size())
    return fail("runtime", "the executor produced " + std::to_string(actual.size()) + " outputs, the reference " +
                               std::to_string(expected.size()));
  r.runtime_ms = br.runtime_ms;
  r.timing_runs = br.runs;
  if (job.collect_profile) r.profiles.push_back({br.device_csv, br.host_csv});
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i)
    r.outputs.push_back(diff_output(outs[i], actual[i], expected[i], job.tolerance));
  pipeline::judge(&r, job.tolerance);
  ms.step_ahead();  // for the next jobs: part of this one's time
  r.host_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return r;
}

}  // namespace torq::runner
