// The op-support matrix (op_matrix.h): occurrences grouped by (target, op
// key), statuses per executor, blocked / falling-back models, CSV.
#include "pipeline/report/op_matrix.h"

#include <algorithm>
#include <tuple>

namespace torq::pipeline {

namespace {

// "QDQ com.microsoft::QLinearAdd(...) ..." -> "com.microsoft::QLinearAdd"
std::string op_type_of(const std::string& key) {
  std::string s = key.rfind("QDQ ", 0) == 0 ? key.substr(4) : key;
  return s.substr(0, s.find('('));
}

void add_occurrence(OpRow& row, const std::string& model, const history::LayerRecord& l) {
  ++row.occurrences;
  row.models.insert(model);
  bool any_runs = false, first_errors = false, first = true;
  for (const Executor e : kExecutorPriority) {
    const auto it = l.executors.find(e);
    if (it == l.executors.end()) continue;
    OpCell& cell = row.executors[e];
    ++cell.counts[it->second.status];
    const bool error = it->second.status == Status::kError;
    if (error && cell.error.empty()) cell.error = it->second.error;
    if (first) first_errors = error;
    any_runs = any_runs || !error;
    first = false;
  }
  if (l.executors.empty()) return;
  if (!any_runs)
    row.blocked.insert(model);
  else if (first_errors)
    row.falls_back.insert(model);
}

bool before(const OpRow& a, const OpRow& b) {
  auto rank = [](const OpRow& r) {
    return std::make_tuple(-static_cast<int>(r.blocked.size()), -static_cast<int>(r.falls_back.size()),
                           -static_cast<int>(r.models.size()), -r.occurrences);
  };
  const auto ra = rank(a), rb = rank(b);
  if (ra != rb) return ra < rb;
  return std::tie(a.target, a.op) < std::tie(b.target, b.op);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string joined(const std::set<std::string>& items) {
  std::string s;
  for (const auto& x : items) s += (s.empty() ? "" : ";") + x;
  return s;
}

}  // namespace

void OpMatrixBuilder::add(const history::TestRecord& t) {
  for (const auto& l : t.layers) {
    if (l.op.empty() || !seen_.insert(t.model + "|" + t.variant + "|" + t.target + "|" + l.id).second) continue;
    OpRow& row = rows_[{t.target, l.op}];
    row.target = t.target;
    row.op = l.op;
    row.op_type = op_type_of(l.op);
    add_occurrence(row, t.model, l);
    for (const auto& [e, r] : l.executors) executors_.insert(e);
  }
}

OpMatrix OpMatrixBuilder::finish() {
  OpMatrix m;
  for (const Executor e : kExecutorPriority)
    if (executors_.count(e)) m.executors.push_back(e);
  for (auto& [key, row] : rows_) m.rows.push_back(std::move(row));
  std::sort(m.rows.begin(), m.rows.end(), before);
  rows_.clear();
  seen_.clear();
  executors_.clear();
  return m;
}

OpMatrix op_matrix(const std::vector<history::TestRecord>& tests) {
  OpMatrixBuilder b;
  for (const auto& t : tests) b.add(t);
  return b.finish();
}

std::string cell_text(const OpCell& c) {
  if (c.counts.empty()) return "-";
  if (c.counts.size() == 1) return status_name(c.counts.begin()->first);
  std::string s;
  for (const auto& [status, n] : c.counts)
    s += (s.empty() ? "" : ", ") + std::string(status_name(status)) + " " + std::to_string(n);
  return s;
}

std::string ops_csv(const OpMatrix& m) {
  std::string s = "target,op_type,op";
  for (const Executor e : m.executors) s += std::string(",") + executor_name(e);
  s += ",occurrences,models,blocked_models,fallback_models";
  for (const Executor e : m.executors) s += std::string(",") + executor_name(e) + "_error";
  s += "\n";
  for (const OpRow& r : m.rows) {
    s += csv_field(r.target) + "," + csv_field(r.op_type) + "," + csv_field(r.op);
    for (const Executor e : m.executors) {
      const auto it = r.executors.find(e);
      s += "," + csv_field(it == r.executors.end() ? "-" : cell_text(it->second));
    }
    s += "," + std::to_string(r.occurrences) + "," + csv_field(joined(r.models)) + "," + csv_field(joined(r.blocked)) +
         "," + csv_field(joined(r.falls_back));
    for (const Executor e : m.executors) {
      const auto it = r.executors.find(e);
      s += "," + csv_field(it == r.executors.end() ? "" : it->second.error);
    }
    s += "\n";
  }
  return s;
}

}  // namespace torq::pipeline
