// probe.csv: writing and reading (envelope_report.h).
#include <algorithm>
#include <charconv>
#include <map>

#include "pipeline/probe/envelope_report.h"

namespace torq::pipeline::probe {

namespace {

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> c = {
      "point_id", "op", "dtype", "params", "seed", "executor", "status", "error_class", "error_message",
      "runtime_ms", "host_ms", "infrastructure", "invalid", "feature_op", "feature_dtype", "input_shape",
      "max_rank", "group_kind", "kernel", "strides", "dilations", "explained", "predicted_key"};
  return c;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? "\"\"" : std::string(1, c);
  return out + "\"";
}

std::string csv_number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string csv_list(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t e : v) s += (s.empty() ? "" : "x") + std::to_string(e);
  return s;
}

// The fields of a point and its features, around the outcome's.
std::vector<std::string> csv_point_fields(const ProbeRow& r) {
  return {r.point.id, r.point.op, r.point.dtype, r.point.params_text(), std::to_string(r.point.seed)};
}
std::vector<std::string> csv_feature_fields(const ProbeRow& r) {
  const PointFeatures& f = r.features;
  return {r.invalid, f.op, base::dtype_name(f.dtype), csv_list(f.input_shape), std::to_string(f.max_rank),
          f.group_kind, csv_list(f.kernel), csv_list(f.strides), csv_list(f.dilations)};
}

std::vector<std::string> csv_outcome_fields(const ProbeOutcome& o) {
  return {executor_name(o.executor), status_name(o.status), o.error_class, o.error_message,
          csv_number(o.runtime_ms), csv_number(o.host_ms), o.infrastructure ? "1" : "0"};
}

void csv_line(std::string& out, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  out += "\r\n";
}

}  // namespace

std::string probe_csv(const std::vector<ProbeRow>& rows, const std::vector<DerivedProfile>& profiles) {
  std::string out;
  csv_line(out, csv_columns());
  for (const ProbeRow& r : rows) {
    std::vector<ProbeOutcome> outcomes = r.outcomes;
    if (outcomes.empty()) {  // an invalid point: no executor ran it
      std::vector<std::string> f = csv_point_fields(r);
      // The outcome's columns empty (executor ... host_ms), infrastructure 0.
      for (int i = 0; i < 7; ++i) f.emplace_back(i == 6 ? "0" : "");
      for (const std::string& e : csv_feature_fields(r)) f.push_back(e);
      f.insert(f.end(), {"", ""});
      csv_line(out, f);
      continue;
    }
    for (const ProbeOutcome& o : outcomes) {
      std::vector<std::string> f = csv_point_fields(r);
      for (const std::string& e : csv_outcome_fields(o)) f.push_back(e);
      for (const std::string& e : csv_feature_fields(r)) f.push_back(e);
      std::string explained, key;
      auto p = std::find_if(profiles.begin(), profiles.end(),
                            [&](const DerivedProfile& d) { return d.executor == executor_name(o.executor); });
      if (p != profiles.end() && p->predicted.count(r.point.id)) {
        explained = p->explained_by_id.at(r.point.id) ? "1" : "0";
        key = p->predicted.at(r.point.id);
      }
      f.insert(f.end(), {explained, key});
      csv_line(out, f);
    }
  }
  return out;
}

namespace {

// RFC 4180 records, each with the line it starts on.
struct CsvRecord {
  int line = 0;
  std::vector<std::string> fields;
};

std::vector<CsvRecord> csv_records(const std::string& text, const std::string& filename) {
  std::vector<CsvRecord> out;
  CsvRecord rec{1, {""}};
  int line = 1;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') rec.fields.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else rec.fields.back() += c, line += c == '\n';
      continue;
    }
    if (c == '"') {
      if (!rec.fields.back().empty())
        throw PipelineError(filename + ":" + std::to_string(line) + ": a quote inside an unquoted field");
      quoted = any = true;
    } else if (c == ',') {
      rec.fields.emplace_back(), any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !rec.fields.back().empty()) out.push_back(rec);
      rec = CsvRecord{++line, {""}};
      any = false;
    } else {
      rec.fields.back() += c, any = true;
    }
  }
  if (quoted) throw PipelineError(filename + ":" + std::to_string(rec.line) + ": unterminated quoted field");
  if (any || !rec.fields.back().empty()) out.push_back(rec);
  return out;
}

// One record's fields by column name, failing with the file and line.
struct CsvLine {
  const std::string& filename;
  const CsvRecord& rec;
  const std::map<std::string, size_t>& col;
  [[noreturn]] void fail(const std::string& m) const {
    throw PipelineError(filename + ":" + std::to_string(rec.line) + ": " + m);
  }
  const std::string& get(const std::string& name) const {
    static const std::string empty;
    auto it = col.find(name);
    return it == col.end() ? empty : rec.fields[it->second];
  }
  template <class T>
  T number(const std::string& name) const {
    const std::string& s = get(name);
    T v{};
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
      fail(name + " must be a number, got '" + s + "'");
    return v;
  }
  bool flag(const std::string& name) const {
    const std::string& s = get(name);
    if (s == "1" || s == "true") return true;
    if (s == "0" || s == "false" || s.empty()) return false;
    fail(name + " must be 1 or 0, got '" + s + "'");
  }
  std::vector<int64_t> list(const std::string& name) const {
    std::vector<int64_t> v;
    const std::string& s = get(name);
    size_t at = 0;
    while (!s.empty() && at <= s.size()) {
      const size_t x = std::min(s.find('x', at), s.size());
      int64_t e = 0;
      auto r = std::from_chars(s.data() + at, s.data() + x, e);
      if (x == at || r.ec != std::errc() || r.ptr != s.data() + x)
        fail(name + " must be integers joined by 'x', got '" + s + "'");
      v.push_back(e);
      at = x + 1;
    }
    return v;
  }
};

std::vector<std::pair<std::string, std::string>> csv_params(const CsvLine& l) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string& s = l.get("params");
  size_t at = 0;
  while (at < s.size()) {
    size_t end = std::min(s.find(' ', at), s.size());
    const std::string kv = s.substr(at, end - at);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) l.fail("params must be 'key=value ...', got '" + s + "'");
    out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    at = end + 1;
  }
  return out;
}

ProbeRow csv_row(const CsvLine& l) {
  ProbeRow r;
  r.point.id = l.get("point_id");
  if (r.point.id.empty()) l.fail("point_id is empty");
  r.point.op = l.get("op");
  r.point.dtype = l.get("dtype");
  r.point.params = csv_params(l);
  r.point.seed = l.number<uint64_t>("seed");
  r.invalid = l.get("invalid");
  PointFeatures& f = r.features;
  f.op = l.get("feature_op");
  f.dtype = base::dtype_from_name(l.get("feature_dtype"));
  if (f.dtype == base::DType::kUndefined) l.fail("unknown feature_dtype '" + l.get("feature_dtype") + "'");
  f.input_shape = l.list("input_shape");
  f.max_rank = l.number<int64_t>("max_rank");
  f.group_kind = l.get("group_kind");
  f.kernel = l.list("kernel");
  f.strides = l.list("strides");
  f.dilations = l.list("dilations");
  return r;
}

ProbeOutcome csv_outcome(const CsvLine& l) {
  ProbeOutcome o;
  const auto e = executor_from_name(l.get("executor"));
  if (!e) l.fail("unknown executor '" + l.get("executor") + "'");
  const auto s = status_from_name(l.get("status"));
  if (!s) l.fail("unknown status '" + l.get("status") + "' (success, difference or error)");
  o.executor = *e;
  o.status = *s;
  o.error_class = l.get("error_class");
  o.error_message = l.get("error_message");
  o.runtime_ms = l.number<double>("runtime_ms");
  o.host_ms = l.number<double>("host_ms");
  o.infrastructure = l.flag("infrastructure");
  return o;
}

}  // namespace

std::vector<ProbeRow> read_probe_csv(const std::string& text, const std::string& filename) {
  const std::vector<CsvRecord> recs = csv_records(text, filename);
  if (recs.empty()) throw PipelineError(filename + ":1: empty file (expected a probe.csv header)");
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < recs[0].fields.size(); ++i) col[recs[0].fields[i]] = i;
  for (const std::string& c : csv_columns())
    if (!col.count(c) && c != "explained" && c != "predicted_key")
      throw PipelineError(filename + ":1: the header lacks column '" + c + "'");
  std::vector<ProbeRow> rows;
  std::map<std::string, size_t> index;
  for (size_t i = 1; i < recs.size(); ++i) {
    const CsvLine l{filename, recs[i], col};
    if (recs[i].fields.size() != recs[0].fields.size())
      l.fail(std::to_string(recs[i].fields.size()) + " fields, the header has " +
             std::to_string(recs[0].fields.size()));
    ProbeRow r = csv_row(l);
    auto [it, fresh] = index.emplace(r.point.id, rows.size());
    if (fresh) rows.push_back(r);
    if (l.get("executor").empty()) continue;  // an invalid point: no outcome
    ProbeOutcome o = csv_outcome(l);
    auto& outs = rows[it->second].outcomes;
    if (std::any_of(outs.begin(), outs.end(), [&](const ProbeOutcome& x) { return x.executor == o.executor; }))
      l.fail("point " + r.point.id + " on " + executor_name(o.executor) + " given twice");
    outs.push_back(o);
  }
  return rows;
}

}  // namespace torq::pipeline::probe
