// Alignment and status comparison of two reports (`torq-gen-config compare`).
#include "pipeline/report/report_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <unordered_map>

namespace torq::pipeline {
namespace {

using ojson = nlohmann::ordered_json;

// Equivalent op types map to one representative (documented in the header).
const std::string& canonical_op(const std::string& op) {
  static const std::map<std::string, std::string> kEquivalent = {
      {"ReduceMean", "GlobalAveragePool"}, {"MatMul", "Gemm"}, {"Reshape", "Flatten"}, {"Relu6", "Clip"}};
  auto it = kEquivalent.find(op);
  return it == kEquivalent.end() ? op : it->second;
}

// ---- alignment ----

std::vector<std::string> op_types(const ModelReport& r) {
  std::vector<std::string> out;
  out.reserve(r.layers.size());
  for (const LayerReport& l : r.layers) out.push_back(canonical_op(layer_op_type(l)));
  return out;
}

// Pairs of layers with the same id, in A's order.
std::vector<std::pair<int, int>> align_by_id(const ModelReport& a, const ModelReport& b) {
  std::unordered_map<std::string, int> in_b;
  for (size_t j = 0; j < b.layers.size(); ++j) in_b.emplace(b.layers[j].info.id, static_cast<int>(j));
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    auto it = in_b.find(a.layers[i].info.id);
    if (it != in_b.end()) pairs.emplace_back(static_cast<int>(i), it->second);
  }
  return pairs;
}

// Needleman-Wunsch over op types: +2 match, -1 mismatch, -1 gap. Two score
// rows and one byte of traceback per cell (0 diagonal, 1 gap in B, 2 gap in A).
std::vector<std::pair<int, int>> align_by_sequence(const std::vector<std::string>& x,
                                                   const std::vector<std::string>& y) {
  const size_t n = x.size(), m = y.size();
  std::vector<uint8_t> trace((n + 1) * (m + 1), 0);
  std::vector<int> prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = -static_cast<int>(j), trace[j] = 2;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = -static_cast<int>(i);
    trace[i * (m + 1)] = 1;
    for (size_t j = 1; j <= m; ++j) {
      const int diag = prev[j - 1] + (x[i - 1] == y[j - 1] ? 2 : -1);
      const int up = prev[j] - 1, left = cur[j - 1] - 1;
      uint8_t t = 0;
      int best = diag;
      if (up > best) best = up, t = 1;
      if (left > best) best = left, t = 2;
      cur[j] = best;
      trace[i * (m + 1) + j] = t;
    }
    std::swap(prev, cur);
  }
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = n, j = m; i > 0 && j > 0;) {
    const uint8_t t = trace[i * (m + 1) + j];
    if (t == 0) pairs.emplace_back(static_cast<int>(--i), static_cast<int>(--j));
    else if (t == 1) --i;
    else --j;
  }
  std::reverse(pairs.begin(), pairs.end());
  return pairs;
}

void choose_alignment(const ModelReport& a, const ModelReport& b, CompareResult* r) {
  auto by_id = align_by_id(a, b);
  if (10 * by_id.size() >= 9 * a.layers.size()) {
    r->method = AlignMethod::kById;
    r->pairs = std::move(by_id);
  } else if (a.layers.size() > kMaxSequenceLayers || b.layers.size() > kMaxSequenceLayers) {
    r->method = AlignMethod::kById;
    r->pairs = std::move(by_id);
    r->note = "more than " + std::to_string(kMaxSequenceLayers) +
              " layers: aligned by id although fewer than 90% of A's ids are in B";
  } else {
    r->method = AlignMethod::kByOpSequence;
    r->pairs = align_by_sequence(op_types(a), op_types(b));
  }
}

std::vector<std::string> unaligned(const ModelReport& r, const std::vector<bool>& aligned) {
  std::vector<std::string> out;
  for (size_t i = 0; i < r.layers.size(); ++i)
    if (!aligned[i]) out.push_back(r.layers[i].info.id);
  return out;
}

void fill_sides(const ModelReport& a, const ModelReport& b, const CompareOptions& o, CompareResult* r) {
  std::vector<bool> in_a(a.layers.size()), in_b(b.layers.size());
  for (auto [i, j] : r->pairs) in_a[i] = in_b[j] = true;
  r->a = {o.a_label.empty() ? a.model_name : o.a_label, a.model_name, static_cast<int>(a.layers.size()),
          unaligned(a, in_a)};
  r->b = {o.b_label.empty() ? b.model_name : o.b_label, b.model_name, static_cast<int>(b.layers.size()),
          unaligned(b, in_b)};
  for (auto [i, j] : r->pairs) {
    const std::string x = layer_op_type(a.layers[i]), y = layer_op_type(b.layers[j]);
    if (!op_types_equivalent(x, y)) r->mismatches.push_back({a.layers[i].info.id, b.layers[j].info.id, x, y});
  }
}

// ---- statuses ----

bool has_executor(const ModelReport& r, Executor e) {
  return std::any_of(r.layers.begin(), r.layers.end(), [e](const LayerReport& l) { return l.results.count(e); });
}

std::vector<Executor> executors_compared(const ModelReport& a, const ModelReport& b, const CompareOptions& o) {
  if (o.executor) return {*o.executor};
  std::vector<Executor> out;
  for (Executor e : kExecutorPriority)
    if (has_executor(a, e) && has_executor(b, e)) out.push_back(e);
  return out;
}

// One line, at most ~100 characters.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  if (s.size() > 100) s = s.substr(0, 97) + "...";
  return s;
}

std::string failure_of(const ExecResult& r) {
  return r.status == Status::kError ? one_line(r.error_message.empty() ? r.error_class : r.error_message) : "";
}

void compare_pair(const LayerReport& la, const LayerReport& lb, ExecutorCompare* ec) {
  auto ia = la.results.find(ec->executor), ib = lb.results.find(ec->executor);
  if (ia == la.results.end() || ib == lb.results.end()) return;
  const int fa = ia->second.status == Status::kError, fb = ib->second.status == Status::kError;
  const std::string op = layer_op_type(la), op_b = layer_op_type(lb);
  ++ec->total.counts[fa][fb];
  ++ec->by_op_type[op].counts[fa][fb];
  if (fa == fb) return;
  ec->disagreements.push_back({la.info.id, lb.info.id, op == op_b ? op : op + "/" + op_b, ia->second.status,
                               ib->second.status, failure_of(ia->second), failure_of(ib->second)});
}

// ---- rendering ----

constexpr size_t kMaxShown = 50;  // disagreeing layers listed in the text

std::string percent(double f) {
  if (std::isnan(f)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * f);
  return buf;
}

void list_ids(std::ostringstream& out, const char* title, const std::vector<std::string>& ids) {
  if (ids.empty()) return;
  out << "  " << title << ":";
  const size_t shown = std::min<size_t>(ids.size(), 20);
  for (size_t i = 0; i < shown; ++i) out << (i ? ", " : " ") << ids[i];
  if (shown < ids.size()) out << ", ... (" << ids.size() - shown << " more)";
  out << "\n";
}

void render_alignment(std::ostringstream& out, const CompareResult& r) {
  out << "alignment: by " << (r.method == AlignMethod::kById ? "layer id" : "op-type sequence") << ": "
      << r.pairs.size() << " aligned, " << r.a.only_here.size() << " only in A, " << r.b.only_here.size()
      << " only in B, " << r.mismatches.size() << " op-type mismatch(es)\n";
  if (!r.note.empty()) out << "  note: " << r.note << "\n";
  list_ids(out, "only in A", r.a.only_here);
  list_ids(out, "only in B", r.b.only_here);
  std::vector<std::string> mism;
  for (const auto& m : r.mismatches) mism.push_back(m.a_id + " ~ " + m.b_id);
  list_ids(out, "op-type mismatches (A ~ B)", mism);
}

void matrix_row(std::ostringstream& out, const std::string& name, const Confusion& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "    %-22s %7d %7d %7d %7d  %s\n", name.substr(0, 22).c_str(), c.counts[0][0],
                c.counts[0][1], c.counts[1][0], c.counts[1][1],
                percent(c.total() ? double(c.agreed()) / c.total() : std::nan("")).c_str());
  out << buf;
}

void render_disagreements(std::ostringstream& out, const ExecutorCompare& e) {
  out << "  disagreeing layers: " << (e.disagreements.empty() ? "none" : std::to_string(e.disagreements.size()))
      << "\n";
  const size_t shown = std::min<size_t>(e.disagreements.size(), kMaxShown);
  for (size_t i = 0; i < shown; ++i) {
    const Disagreement& d = e.disagreements[i];
    out << "    " << d.a_id;
    if (d.b_id != d.a_id) out << " ~ " << d.b_id;
    out << " [" << d.op_type << "]: A " << status_name(d.a_status) << ", B " << status_name(d.b_status);
    if (!d.a_failure.empty()) out << "; A: " << d.a_failure;
    if (!d.b_failure.empty()) out << "; B: " << d.b_failure;
    out << "\n";
  }
  if (shown < e.disagreements.size())
    out << "    ... (" << e.disagreements.size() - shown << " more; --json lists all)\n";
}

void render_executor(std::ostringstream& out, const ExecutorCompare& e) {
  out << "\nexecutor " << executor_name(e.executor) << ": agreement " << percent(e.agreement()) << " ("
      << e.total.agreed() << "/" << e.total.total() << " aligned layers tested in both)\n";
  if (e.total.total() == 0) return;
  char head[160];
  std::snprintf(head, sizeof head, "    %-22s %7s %7s %7s %7s  %s\n", "op type (A/B)", "ok/ok", "ok/err", "err/ok",
                "err/err", "agree");
  out << "  (ok = success or difference, err = error)\n" << head;
  for (const auto& [op, c] : e.by_op_type) matrix_row(out, op, c);
  matrix_row(out, "(total)", e.total);
  render_disagreements(out, e);
}

ojson matrix_json(const Confusion& c) {
  return {{"a_runs_b_runs", c.counts[0][0]},
          {"a_runs_b_fails", c.counts[0][1]},
          {"a_fails_b_runs", c.counts[1][0]},
          {"a_fails_b_fails", c.counts[1][1]}};
}

ojson executor_json(const ExecutorCompare& e) {
  ojson by_op = ojson::object();
  for (const auto& [op, c] : e.by_op_type) by_op[op] = matrix_json(c);
  ojson dis = ojson::array();
  for (const Disagreement& d : e.disagreements)
    dis.push_back({{"a_id", d.a_id}, {"b_id", d.b_id}, {"op_type", d.op_type},
                   {"a_status", status_name(d.a_status)}, {"b_status", status_name(d.b_status)},
                   {"a_failure", d.a_failure}, {"b_failure", d.b_failure}});
  const double f = e.agreement();
  return {{"compared", e.total.total()},
          {"agreed", e.total.agreed()},
          {"agreement", std::isnan(f) ? ojson(nullptr) : ojson(f)},
          {"confusion", {{"total", matrix_json(e.total)}, {"by_op_type", std::move(by_op)}}},
          {"disagreements", std::move(dis)}};
}

ojson alignment_json(const CompareResult& r) {
  ojson j = {{"method", align_method_name(r.method)}};
  if (!r.note.empty()) j["note"] = r.note;
  ojson mism = ojson::array();
  for (const auto& m : r.mismatches)
    mism.push_back({{"a_id", m.a_id}, {"b_id", m.b_id}, {"a_op_type", m.a_op}, {"b_op_type", m.b_op}});
  j["aligned"] = r.pairs.size();
  j["only_in_a"] = r.a.only_here.size();
  j["only_in_b"] = r.b.only_here.size();
  j["op_type_mismatches"] = r.mismatches.size();
  j["only_in_a_ids"] = r.a.only_here;
  j["only_in_b_ids"] = r.b.only_here;
  j["mismatched"] = std::move(mism);
  return j;
}

}  // namespace

double ExecutorCompare::agreement() const {
  return total.total() ? double(total.agreed()) / total.total() : std::numeric_limits<double>::quiet_NaN();
}

const char* align_method_name(AlignMethod m) { return m == AlignMethod::kById ? "id" : "op_sequence"; }

std::string layer_op_type(const LayerReport& l) {
  return l.info.op_type.empty() ? l.info.id.substr(0, l.info.id.find('_')) : l.info.op_type;
}

bool op_types_equivalent(const std::string& x, const std::string& y) { return canonical_op(x) == canonical_op(y); }

CompareResult compare_reports(const ModelReport& a, const ModelReport& b, const CompareOptions& o) {
  CompareResult r;
  choose_alignment(a, b, &r);
  fill_sides(a, b, o, &r);
  for (Executor e : executors_compared(a, b, o)) {
    ExecutorCompare ec;
    ec.executor = e;
    for (auto [i, j] : r.pairs) compare_pair(a.layers[i], b.layers[j], &ec);
    r.executors.push_back(std::move(ec));
  }
  return r;
}

std::string render_compare(const CompareResult& r) {
  std::ostringstream out;
  out << "A: " << r.a.label << " (model " << r.a.model_name << ", " << r.a.layers << " layers)\n"
      << "B: " << r.b.label << " (model " << r.b.model_name << ", " << r.b.layers << " layers)\n";
  render_alignment(out, r);
  if (r.executors.empty()) out << "\nno executor tested in both reports\n";
  for (const ExecutorCompare& e : r.executors) render_executor(out, e);
  return out.str();
}

nlohmann::ordered_json compare_json(const CompareResult& r) {
  auto side = [](const CompareSide& s) {
    return ojson{{"label", s.label}, {"model_name", s.model_name}, {"layers", s.layers}};
  };
  ojson ex = ojson::object();
  for (const ExecutorCompare& e : r.executors) ex[executor_name(e.executor)] = executor_json(e);
  return {{"a", side(r.a)}, {"b", side(r.b)}, {"alignment", alignment_json(r)}, {"executors", std::move(ex)}};
}

}  // namespace torq::pipeline
