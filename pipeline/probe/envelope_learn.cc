#include "pipeline/probe/envelope_learn.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <set>

#include "pipeline/probe/envelope_predict.h"
#include "pipeline/probe/envelope_rule_search.h"
#include "pipeline/probe/profile_writer.h"

namespace torq::pipeline::probe {

namespace {

// One learnable point on the executor learned.
struct LearnSample {
  const ProbeRow* row;
  const ProbeOutcome* out;
};

struct LearnInput {
  std::vector<LearnSample> samples;
  std::vector<std::string> excluded;
};

LearnInput learn_collect(Executor e, const std::vector<ProbeRow>& rows) {
  LearnInput in;
  for (const ProbeRow& row : rows) {
    if (!row.invalid.empty()) {
      in.excluded.push_back(row.point.id);
      continue;
    }
    auto it = std::find_if(row.outcomes.begin(), row.outcomes.end(),
                           [&](const ProbeOutcome& o) { return o.executor == e; });
    if (it == row.outcomes.end()) continue;
    if (it->infrastructure)
      in.excluded.push_back(row.point.id);
    else
      in.samples.push_back({&row, &*it});
  }
  return in;
}

// The failing points' messages, most frequent first.
std::vector<std::pair<std::string, int>> learn_messages(const std::vector<LearnSample>& s) {
  std::map<std::string, int> n;
  for (const LearnSample& x : s)
    if (!x.out->runs()) ++n[x.out->error_message];
  std::vector<std::pair<std::string, int>> v(n.begin(), n.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

// bf16 when f32 points were probed and none of them ran while a bf16 one
// did; f32 when one ran; otherwise (no f32 point, or no float point ran)
// the base profile's: what was not probed is not guessed.
void learn_numerics(DerivedProfile& d, const std::vector<LearnSample>& all, const targets::TargetProfile* base) {
  auto any = [&](base::DType t, bool must_run) {
    return std::any_of(all.begin(), all.end(), [&](const LearnSample& s) {
      return s.row->features.dtype == t && (!must_run || s.out->runs());
    });
  };
  d.float_type_measured =
      any(base::DType::kF32, false) && (any(base::DType::kF32, true) || any(base::DType::kBF16, true));
  if (!d.float_type_measured) d.float_type = base ? base->float_type() : base::DType::kF32;
  else d.float_type = any(base::DType::kF32, true) ? base::DType::kF32 : base::DType::kBF16;
  if (d.float_type != base::DType::kBF16) return;
  if (base && !any(base::DType::kF32, false)) d.fp32_error = base->fp32_error();
  if (d.float_type != base::DType::kBF16) return;
  std::vector<LearnSample> f32;
  for (const LearnSample& s : all)
    if (s.row->features.dtype == base::DType::kF32) f32.push_back(s);
  if (const auto m = learn_messages(f32); !m.empty()) d.fp32_error = m.front().first;
}

// The rule of one group of an op's points (float or integer ones).
LearnedRule learn_group_rule(const std::vector<LearnSample>& s, bool integer, const std::set<base::DType>& running) {
  std::vector<const PointFeatures*> runs, fails;
  std::vector<const std::string*> run_ids;
  for (const LearnSample& x : s) {
    const PointFeatures& f = x.row->features;
    if (f.integer() != integer) continue;
    if (x.out->runs()) {
      runs.push_back(&f);
      run_ids.push_back(&x.row->point.id);
    } else if (running.count(f.dtype)) {
      fails.push_back(&f);  // other dtypes: the dtypes key's
    }
  }
  LearnedRule rule = rule_search::search_rule(runs, fails);
  for (LearnedKey& k : rule.keys)
    if (k.bound_run >= 0) k.bound_point = *run_ids[static_cast<size_t>(k.bound_run)];
  return rule;
}

LearnedOp learn_op(const std::string& op, const std::vector<LearnSample>& s, const targets::OpCatalog& catalog) {
  LearnedOp l;
  l.op = op;
  std::set<base::DType> running;
  for (const LearnSample& x : s)
    if (x.out->runs()) running.insert(x.row->features.dtype);
  l.dtypes.assign(running.begin(), running.end());
  l.has_float = std::any_of(running.begin(), running.end(), [](base::DType t) { return !base::is_integer(t); });
  l.has_int = std::any_of(running.begin(), running.end(), [](base::DType t) { return base::is_integer(t); });
  if (running.empty()) {
    const auto m = learn_messages(s);
    l.omitted = "none of its " + std::to_string(s.size()) + " points ran" +
                (m.empty() ? "" : " (" + m.front().first + ": " + std::to_string(m.front().second) + ")");
    return l;
  }
  if (!catalog.knows(op) || !catalog.judged_as(op).empty()) {
    l.omitted = "an op the catalog does not know as a rule's op";
    return l;
  }
  if (l.has_float) l.main = learn_group_rule(s, false, running);
  if (l.has_int) (l.has_float ? l.int_rule : l.main) = learn_group_rule(s, true, running);
  return l;
}

}  // namespace

const LearnedKey* LearnedRule::find(const std::string& key) const {
  auto it = std::find_if(keys.begin(), keys.end(), [&](const LearnedKey& k) { return k.key == key; });
  return it == keys.end() ? nullptr : &*it;
}

namespace {

// Predicts every learned point with the profile as written and parsed back.
void learn_predict(DerivedProfile& d, const std::vector<LearnSample>& all, const targets::OpCatalog& catalog) {
  const targets::TargetProfile p = targets::TargetProfile::parse(d.yaml, d.executor + ".yaml", catalog);
  d.predicted.clear();
  d.explained_by_id.clear();
  d.points = d.explained = 0;
  for (const LearnSample& s : all) {
    const std::string key = refusing_key(p, s.row->features);
    const bool ok = key.empty() == s.out->runs();
    d.predicted[s.row->point.id] = key;
    d.explained_by_id[s.row->point.id] = ok;
    ++d.points;
    d.explained += ok;
  }
}

// The rule a group's points are judged by, or null when none of them ran.
const LearnedRule* learn_group_rule_of(const LearnedOp& op, bool integer) {
  if (!op.omitted.empty()) return nullptr;
  if (!integer) return op.has_float ? &op.main : nullptr;
  if (!op.has_int) return nullptr;
  return op.has_float ? &op.int_rule : &op.main;
}

std::string learn_join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const std::string& e : v) s += (s.empty() ? "" : sep) + e;
  return s;
}

// "<message> (<count>)" of the most frequent message, "" with none.
std::string learn_top_message(const std::vector<std::pair<std::string, int>>& m) {
  return m.empty() ? "" : m.front().first + " (" + std::to_string(m.front().second) + ")";
}

// The envelope sentence of a group judged by `rule` (null: none ran).
// `never`: its data types no point of ran; `otherwise`: the most frequent
// message of the failing points of the others (the rule's failures),
// `never_message` that of the never-running data types.
std::string learn_sentence(const OpEnvelope& e, const LearnedRule* rule, const std::string& executor,
                           const std::vector<std::string>& never, const std::string& otherwise,
                           const std::string& never_message) {
  std::vector<std::string> ran;
  for (const std::string& t : e.dtypes)
    if (std::find(never.begin(), never.end(), t) == never.end()) ran.push_back(t);
  std::string s = e.op + " " + learn_join(ran.empty() ? e.dtypes : ran, "/") + " on " + executor;
  if (!rule) {
    s += " never runs" + (never_message.empty() ? "" : "; error: " + never_message);
  } else {
    std::vector<std::string> conds;
    for (const std::string& key : rule_search::key_order())
      if (const LearnedKey* k = rule->find(key)) conds.push_back(rule_search::condition_text(*k));
    s += conds.empty() ? " runs on every point probed" : " runs iff " + learn_join(conds, " and ");
    if (!otherwise.empty()) s += (conds.empty() ? "; fails: " : "; otherwise error: ") + otherwise;
    if (!never.empty())
      s += "; " + learn_join(never, "/") + " never runs" + (never_message.empty() ? "" : ": " + never_message);
  }
  return s + "; explains " + std::to_string(e.explained) + "/" + std::to_string(e.points);
}

// Status counts of a group's points by the parameter of its rule's first key.
void learn_table(OpEnvelope& e, const LearnedRule* rule, const std::vector<LearnSample>& s) {
  const std::string key = rule && !rule->keys.empty() ? rule->keys.front().key : "";
  std::map<std::string, ParamCount> by;
  for (const LearnSample& x : s) {
    auto [param, value] = rule_search::key_param(key, x.row->features);
    e.table_param = param;
    ParamCount& c = by[value];
    c.value = value;
    (x.out->status == Status::kSuccess ? c.success : x.out->status == Status::kDifference ? c.difference : c.error)++;
  }
  for (auto& [v, c] : by) e.table.push_back(c);
  // Numbers by value, anything else after them in name order.
  auto num = [](const std::string& v) -> int64_t {
    int64_t n = 0;
    auto r = std::from_chars(v.data(), v.data() + v.size(), n);
    return r.ec == std::errc() && r.ptr == v.data() + v.size() ? n : INT64_MAX;
  };
  std::stable_sort(e.table.begin(), e.table.end(),
                   [&](const ParamCount& a, const ParamCount& b) { return num(a.value) < num(b.value); });
}

OpEnvelope learn_envelope(const DerivedProfile& d, const LearnedOp& op, bool integer,
                          const std::vector<LearnSample>& s) {
  OpEnvelope e;
  e.op = op.op;
  e.group = integer ? "int" : "float";
  std::set<base::DType> seen, ran;
  for (const LearnSample& x : s) {
    seen.insert(x.row->features.dtype);
    if (x.out->runs()) ran.insert(x.row->features.dtype);
    const bool ok = d.explained_by_id.at(x.row->point.id);
    ++e.points;
    e.explained += ok;
    if (!ok) e.residuals.push_back(x.row->point.id);
  }
  std::vector<std::string> never;
  for (base::DType t : seen) {
    e.dtypes.push_back(base::dtype_name(t));
    if (!ran.count(t)) never.push_back(base::dtype_name(t));
  }
  e.supported = !ran.empty();
  e.failing_messages = learn_messages(s);
  std::vector<LearnSample> rule_fails, never_fails;
  for (const LearnSample& x : s) (ran.count(x.row->features.dtype) ? rule_fails : never_fails).push_back(x);
  const LearnedRule* rule = learn_group_rule_of(op, integer);
  e.sentence = learn_sentence(e, rule, d.executor, rule ? never : std::vector<std::string>{},
                              learn_top_message(learn_messages(rule_fails)),
                              learn_top_message(learn_messages(never_fails)));
  learn_table(e, rule, s);
  return e;
}

// Envelopes of every op and group, and the notes the profile carries.
void learn_envelopes(DerivedProfile& d, const std::map<std::string, std::vector<LearnSample>>& by_op) {
  d.envelopes.clear();
  for (LearnedOp& op : d.ops) {
    std::vector<std::string> notes;
    for (bool integer : {false, true}) {
      std::vector<LearnSample> g;
      for (const LearnSample& x : by_op.at(op.op))
        if (x.row->features.integer() == integer) g.push_back(x);
      if (g.empty()) continue;
      d.envelopes.push_back(learn_envelope(d, op, integer, g));
      if (integer && op.has_float && op.has_int) op.int_note = d.envelopes.back().sentence;
      else notes.push_back(d.envelopes.back().sentence);
    }
    op.note = learn_join(notes, " / ");
  }
}

}  // namespace

DerivedProfile learn_profile(const std::string& executor, const std::vector<ProbeRow>& rows,
                             const targets::TargetProfile* base, const targets::OpCatalog& catalog) {
  const auto e = executor_from_name(executor);
  if (!e) throw PipelineError("learn_profile: unknown executor '" + executor + "' (nss, css or host)");
  LearnInput in = learn_collect(*e, rows);
  DerivedProfile d;
  d.executor = executor;
  d.base_name = base ? base->name() : "";
  d.excluded = in.excluded;
  learn_numerics(d, in.samples, base);
  std::map<std::string, std::vector<LearnSample>> by_op;
  for (const LearnSample& s : in.samples) by_op[s.row->features.op].push_back(s);
  for (const auto& [op, s] : by_op) d.ops.push_back(learn_op(op, s, catalog));
  d.all_ops = base && base->all_ops() &&
              std::all_of(in.samples.begin(), in.samples.end(), [](const LearnSample& s) { return s.out->runs(); });
  // Predictions do not depend on notes and totals: write, predict, then
  // write again with the envelope sentences and the explained counts.
  d.yaml = profile_yaml(d, base);
  learn_predict(d, in.samples, catalog);
  learn_envelopes(d, by_op);
  d.yaml = profile_yaml(d, base);
  learn_predict(d, in.samples, catalog);
  return d;
}

}  // namespace torq::pipeline::probe
