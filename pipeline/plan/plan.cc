#include "pipeline/plan/plan.h"

#include <charconv>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "pipeline/model/model_import.h"

namespace torq::pipeline {

namespace {

void describe_type(std::ostringstream& os, const onnx::TypeProto& t) {
  if (!t.has_tensor_type()) {
    os << "?";
    return;
  }
  os << t.tensor_type().elem_type() << "[";
  for (const auto& d : t.tensor_type().shape().dim()) os << (d.has_dim_value() ? std::to_string(d.dim_value()) : "?") << ",";
  os << "]";
}

}  // namespace

namespace {

struct SignatureContext {
  std::map<std::string, const onnx::TypeProto*> types;
  std::map<std::string, const onnx::TensorProto*> inits;
  explicit SignatureContext(const onnx::GraphProto& g) {
    for (const auto& v : g.input()) types[v.name()] = &v.type();
    for (const auto& v : g.value_info()) types[v.name()] = &v.type();
    for (const auto& v : g.output()) types[v.name()] = &v.type();
    for (const auto& t : g.initializer()) inits[t.name()] = &t;
    for (const auto& n : g.node())
      if (n.op_type() == "Constant" && n.output_size())
        for (const auto& a : n.attribute())
          if (a.name() == "value" && a.has_t()) inits[n.output(0)] = &a.t();
  }
};

void describe_initializer(std::ostringstream& os, const onnx::TensorProto& t, DedupMode mode) {
  os << "init:" << t.data_type() << "[";
  for (int64_t d : t.dims()) os << d << ",";
  os << "]";
  // Small initializers are parameters, not weights (Clip bounds, Pad
  // values, shapes since opset 11 moved them from attributes to inputs,
  // quantization scales and zero points): their values are part of the
  // signature.
  int64_t numel = 1;
  for (int64_t d : t.dims()) numel *= d;
  if (mode == DedupMode::kExact || numel <= 16) os << "#" << sha256_hex(t.SerializeAsString()).substr(0, 16);
}

void describe_node(std::ostringstream& os, const onnx::NodeProto& node, const SignatureContext& c, DedupMode mode) {
  os << node.domain() << "::" << node.op_type() << "|attrs:";
  // Attributes, in a canonical (name-sorted) order, with their values.
  std::map<std::string, std::string> attrs;
  for (const auto& a : node.attribute()) attrs[a.name()] = a.SerializeAsString();
  for (const auto& [k, v] : attrs) os << k << "=" << sha256_hex(v).substr(0, 16) << ";";
  os << "|in:";
  for (const auto& in : node.input()) {
    auto init = c.inits.find(in);
    auto type = c.types.find(in);
    if (in.empty()) os << "-";
    else if (init != c.inits.end()) describe_initializer(os, *init->second, mode);
    else if (type != c.types.end()) describe_type(os, *type->second);
    else os << "?";
    os << ";";
  }
  os << "|out:";
  for (const auto& o : node.output()) {
    auto type = c.types.find(o);
    if (type != c.types.end()) describe_type(os, *type->second);
    os << ";";
  }
}

}  // namespace

namespace {

std::string signature_of(const onnx::GraphProto& g, const LayerNodes& l, const SignatureContext& c, DedupMode mode) {
  std::ostringstream os;
  // A QDQ layer: every node, with the compute node's signature first.
  describe_node(os, g.node(l.compute), c, mode);
  for (int p : l.nodes)
    if (p != l.compute) {
      os << "||";
      describe_node(os, g.node(p), c, mode);
    }
  return os.str();
}

}  // namespace

std::string layer_signature(const onnx::ModelProto& model, const std::vector<LayerNodes>& layers, int index,
                            DedupMode mode) {
  return signature_of(model.graph(), layers[static_cast<size_t>(index)], SignatureContext(model.graph()), mode);
}

std::vector<std::string> layer_signatures(const onnx::ModelProto& model, const std::vector<LayerNodes>& layers,
                                          DedupMode mode) {
  const SignatureContext c(model.graph());
  std::vector<std::string> out;
  out.reserve(layers.size());
  for (const auto& l : layers) out.push_back(signature_of(model.graph(), l, c, mode));
  return out;
}

std::string Planner::job_id(const std::string& key, int layer, Executor e) {
  // A model hash: its first 16 hex digits; a result key "<hash>-<suffix>":
  // the same with the suffix kept.
  const size_t dash = key.find('-');
  const std::string prefix = dash == std::string::npos ? key.substr(0, 16) : key.substr(0, 16) + key.substr(dash);
  return prefix + "/" + std::to_string(layer) + "/" + executor_name(e);
}

Planner::Planner(const std::string& model_hash, const std::vector<LayerInfo>& layers,
                 const std::vector<std::string>& signatures, PlanOptions opts,
                 const std::map<int, Tolerance>& layer_tolerances)
    : hash_(model_hash), layers_(layers), opts_(std::move(opts)), tolerances_(layer_tolerances) {
  state_.resize(layers_.size());
  std::map<std::string, int> first_with;
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto& st = state_[i];
    for (Executor e : opts_.executors) {
      const std::string key = layers_[i].id + "_" + executor_name(e);
      const std::string seed_case = opts_.case_prefix + "_layer_" + layers_[i].op_type + "_" +
                                    std::to_string(layers_[i].index) + "_" + executor_name(e);
      if (opts_.filter.empty() || key.find(opts_.filter) != std::string::npos ||
          seed_case.find(opts_.filter) != std::string::npos)
        st.pending.push_back(e);
    }
    if (opts_.dedup != DedupMode::kOff && !st.pending.empty() && i < signatures.size()) {
      auto [it, fresh] = first_with.emplace(signatures[i], static_cast<int>(i));
      if (!fresh) {
        dedup_of_[static_cast<int>(i)] = it->second;
        saved_ += st.pending.size();
        st.pending.clear();
      }
    }
    estimate_ += opts_.skip_mode ? std::min<size_t>(1, st.pending.size()) : st.pending.size();
    if (st.pending.empty()) st.done = true;
    if (ready(st)) ++ready_;
  }
}

void Planner::skip_layer(int layer) {
  auto& st = state_[static_cast<size_t>(layer)];
  if (ready(st)) --ready_;
  if (!st.done) estimate_ -= opts_.skip_mode ? std::min<size_t>(1, st.pending.size()) : st.pending.size();
  st.pending.clear();
  st.done = true;
}

std::optional<JobSpec> Planner::next() {
  // The broker asks whenever it has room; at the end of a run every layer
  // is in flight or done, and a scan per ask would make the run quadratic.
  if (ready_ == 0) return std::nullopt;
  while (!followups_.empty()) {
    const size_t i = *followups_.begin();
    followups_.erase(followups_.begin());
    if (ready(state_[i])) return issue(i);
  }
  for (size_t n = 0; n < state_.size(); ++n) {
    const size_t i = (cursor_ + n) % state_.size();
    if (!ready(state_[i])) continue;
    cursor_ = opts_.skip_mode ? i + 1 : i;
    return issue(i);
  }
  return std::nullopt;
}

JobSpec Planner::issue(size_t i) {
  auto& st = state_[i];
  const Executor e = st.pending.front();
  st.pending.erase(st.pending.begin());
  st.in_flight = true;
  if (!ready(st)) --ready_;
  JobSpec j = opts_.job_template;
  j.model_hash = hash_;
  j.first_node = j.last_node = static_cast<uint32_t>(i);
  j.executor = e;
  if (auto tt = opts_.executor_targets.find(e); tt != opts_.executor_targets.end()) j.target = tt->second;
  j.id = job_id(j.result_key.empty() ? hash_ : j.result_key, static_cast<int>(i), e);
  auto t = tolerances_.find(static_cast<int>(i));
  if (t != tolerances_.end()) j.tolerance = t->second;
  ++issued_;
  return j;
}

bool Planner::all_done() const {
  if (finished_ < issued_) return false;
  for (const auto& st : state_)
    if (!st.done) return false;
  return true;
}

void Planner::finished(const JobSpec& job, const ExecResult& r) {
  ++finished_;
  auto& st = state_[job.first_node];
  const bool was_ready = ready(st);
  st.in_flight = false;
  if (opts_.skip_mode) {
    if (r.status == Status::kSuccess || st.pending.empty()) {
      st.pending.clear();
      st.done = true;
    } else {
      ++estimate_;
      followups_.insert(job.first_node);
    }
  } else if (st.pending.empty()) {
    st.done = true;
  }
  const bool now_ready = ready(st);
  if (now_ready && !was_ready) ++ready_;
  if (was_ready && !now_ready) --ready_;
}

JobSpec range_job(const JobSpec& job_template, const std::string& model_hash, uint32_t first, uint32_t last,
                  const std::vector<std::optional<Executor>>& assignment,
                  const std::map<Executor, std::string>& executor_targets, const std::string& result_key) {
  JobSpec f = job_template;
  f.model_hash = model_hash;
  f.first_node = first;
  f.last_node = last;
  bool any_decided = false;
  for (const auto& a : assignment) {
    f.assignment.push_back(a ? *a : Executor::kNss);
    f.decide.push_back(a ? 0 : 1);
    any_decided = any_decided || !a;
  }
  if (!any_decided) f.decide.clear();
  f.executor = Executor::kHost;  // names the result; the layers run where assigned
  f.executor_targets.assign(3, "");
  for (const auto& [e, target] : executor_targets) f.executor_targets[static_cast<size_t>(e)] = target;
  f.result_key = result_key;
  f.id = Planner::job_id(result_key, 0, f.executor);
  return f;
}

namespace {

// A double as an ostream writes it by default (6 significant digits, %g).
// std::to_chars with a precision is specified as printf's "%.6g" in the C
// locale, without snprintf's format parsing (half of a cache key's cost,
// which a coordinator pays once per job).
void append_g(std::string& s, double v) {
  char b[32];
  const auto r = std::to_chars(b, b + sizeof b, v, std::chars_format::general, 6);
  s.append(b, r.ptr);
}

}  // namespace

std::string cache_key(const JobSpec& j, const std::string& profile_digest, const std::string& engine_identity) {
  // Built by appending (a coordinator computes one per job; an ostringstream
  // with its locale-aware number formatting was a tenth of its time).
  std::string s;
  s.reserve(256);
  s += j.model_hash;
  s += '|';
  s += std::to_string(j.first_node) + "-" + std::to_string(j.last_node);
  s += '|';
  s += executor_name(j.executor);
  s += '|';
  s += j.target;
  s += '|';
  s += profile_digest;
  s += '|';
  append_g(s, j.tolerance.fp_avg_tol);
  s += ',';
  append_g(s, j.tolerance.fp_max_tol);
  s += ',';
  append_g(s, j.tolerance.allowed_wrong);
  s += '|';
  s += std::to_string(j.timing_runs);
  s += '|';
  s += j.random_inputs ? "random" : "activations";
  s += ',';
  s += std::to_string(j.seed);
  s += ',';
  append_g(s, j.input_lo);
  s += ',';
  append_g(s, j.input_hi);
  s += '|';
  s += j.bf16_rne ? "rne" : "trunc";
  s += '|';
  s += engine_identity;
  if (j.collect_profile) s += "|profile";
  if (!j.original_hash.empty()) s += "|original:" + j.original_hash;
  if (!j.assignment.empty()) {  // an assigned full-model run: where each layer ran
    s += "|assigned:";
    for (Executor e : j.assignment) s += std::to_string(static_cast<int>(e));
    for (const auto& t : j.executor_targets) s += "|" + t;
    if (!j.decide.empty()) {
      s += "|decide:";
      for (uint8_t d : j.decide) s += d ? '1' : '0';
    }
  }
  return sha256_hex(s);
}

}  // namespace torq::pipeline
