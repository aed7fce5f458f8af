#include "pipeline/report/profile_trace.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "pipeline/base/file_bytes.h"
#include "pipeline/core/types.h"

namespace torq::pipeline {
namespace {

// ---- CSV lines -------------------------------------------------------------

[[noreturn]] void fail(const std::string& file, size_t line, const std::string& reason) {
  throw PipelineError(file + ":" + std::to_string(line) + ": " + reason);
}

struct Line {
  size_t number = 0;
  std::vector<std::string> fields;
  std::string text;   // the line as written (without its newline)
  std::string error;  // why it is no clean CSV line (then `fields` is empty)
};

// Splits one line (no newline) into fields; a quoted field may hold commas
// and "" for a quote. Returns an error message, empty when fine.
std::string split_csv(const std::string& s, std::vector<std::string>& out) {
  out.assign(1, "");
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ',') {
      out.emplace_back();
      ++i;
    } else if (s[i] == '"' && out.back().empty()) {
      size_t j = i + 1;
      for (;; ++j) {
        if (j >= s.size()) return "unterminated quoted field";
        if (s[j] != '"') { out.back() += s[j]; continue; }
        if (j + 1 < s.size() && s[j + 1] == '"') { out.back() += '"'; ++j; continue; }
        break;
      }
      i = j + 1;
      if (i < s.size() && s[i] != ',') return "text after a closing quote";
    } else if (s[i] == '"') {
      return "quote inside an unquoted field";
    } else {
      out.back() += s[i++];
    }
  }
  return {};
}

// Non-blank lines after the header, split into `ncols` fields each.
std::vector<Line> read_rows(const std::string& text, const std::string& file, const char* header) {
  std::istringstream in(text);
  std::string s;
  std::vector<Line> rows;
  size_t n = 0;
  bool seen_header = false;
  while (std::getline(in, s)) {
    ++n;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    if (n == 1 && s.rfind("\xEF\xBB\xBF", 0) == 0) s.erase(0, 3);
    if (s.find_first_not_of(" \t") == std::string::npos) continue;
    if (!seen_header) {
      auto squeeze = [](std::string t) {  // ", " and "," alike
        for (size_t p = t.find(", "); p != std::string::npos; p = t.find(", ", p)) t.erase(p + 1, 1);
        return t;
      };
      if (squeeze(s) != squeeze(header))
        fail(file, n, "expected the header '" + std::string(header) + "', got '" + s + "'");
      seen_header = true;
      continue;
    }
    Line row{n, {}, s, {}};
    // A row that is no clean CSV (the compiler's unquoted MLIR location) is
    // split by its reader.
    if (std::string err = split_csv(s, row.fields); !err.empty()) {
      row.fields.clear();
      row.error = err;
    }
    rows.push_back(std::move(row));
  }
  if (!seen_header) fail(file, std::max<size_t>(n, 1), "empty file, expected the header '" + std::string(header) + "'");
  return rows;
}

void expect_fields(const Line& row, size_t count, const std::string& file) {
  if (row.fields.size() != count)
    fail(file, row.number, "expected " + std::to_string(count) + " fields, got " + std::to_string(row.fields.size()));
}

// ---- numbers ---------------------------------------------------------------

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "12", "12.5", "0.0004" (µs) -> ns, rounded half up below 1 ns.
int64_t parse_us(const std::string& s, const std::string& what, const std::string& file, size_t line) {
  const size_t dot = s.find('.');
  const std::string whole = s.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : s.substr(dot + 1);
  if (!all_digits(whole) || (dot != std::string::npos && !all_digits(frac)))
    fail(file, line, what + " '" + s + "' is not a non-negative decimal number of microseconds");
  // Up to ~3e15 us: the runtime's absolute steady-clock microseconds fit.
  if (whole.size() > 15) fail(file, line, what + " '" + s + "' is too large");
  int64_t ns = std::stoll(whole) * 1000;
  std::string digits = (frac + "0000").substr(0, 4);
  ns += std::stoll(digits.substr(0, 3)) + (digits[3] >= '5' ? 1 : 0);
  return ns;
}

int64_t parse_int(const std::string& s, const std::string& what, const std::string& file, size_t line) {
  const bool neg = !s.empty() && s[0] == '-';
  const std::string digits = neg ? s.substr(1) : s;
  if (!all_digits(digits) || digits.size() > 18) fail(file, line, what + " '" + s + "' is not an integer");
  return neg ? -std::stoll(digits) : std::stoll(digits);
}

uint64_t parse_uint(const std::string& s, const std::string& what, const std::string& file, size_t line) {
  if (!all_digits(s) || s.size() > 19) fail(file, line, what + " '" + s + "' is not a non-negative integer");
  return std::stoull(s);
}

// ---- compile-time trace ----------------------------------------------------

void classify_event(DeviceTask& t, const std::string& file) {
  static const std::map<std::string, DeviceEngine> fixed = {
      {"DMA In", DeviceEngine::kDmaIn}, {"DMA Out", DeviceEngine::kDmaOut},
      {"CDMA", DeviceEngine::kCdma}, {"CSS", DeviceEngine::kCss}};
  if (auto it = fixed.find(t.event); it != fixed.end()) {
    t.engine = it->second;
    return;
  }
  if (t.event.rfind("CDMA ", 0) == 0) {  // CDMA LRAM to DTCM, CDMA DTCM to LRAM...
    t.engine = DeviceEngine::kCdma;
    return;
  }
  const std::string n = t.event.rfind("Slice ", 0) == 0 ? t.event.substr(6) : "";
  if (!all_digits(n) || n.size() > 3)
    fail(file, t.line, "unknown event '" + t.event + "' (expected DMA In, DMA Out, CDMA ..., CSS or Slice <n>)");
  t.engine = DeviceEngine::kSlice;
  t.slice = std::stoi(n);
}

// A CSV field as written, quoted ("" for a quote) or bare.
std::string unquote(const std::string& s) {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') return s;
  std::vector<std::string> one;
  if (!split_csv(s, one).empty() || one.size() != 1) return s;
  return one[0];
}

// A device-trace row: the real compiler writes the location unquoted, as
// MLIR prints it (loc("model.mlir":20:11), or a fused/callsite location
// with commas and quotes), so the fields are taskId, elapsed, timestamp and
// event from the left, bytes from the right, and the location is what lies
// between; a location written as a quoted CSV field is unquoted.
DeviceTask device_task(const Line& row, const std::string& file) {
  std::vector<std::string> f;
  for (size_t p = 0;;) {
    const size_t q = row.text.find(',', p);
    f.push_back(row.text.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (f.size() < 6) fail(file, row.number, "expected 6 fields, got " + std::to_string(f.size()));
  std::string location = f[4];
  for (size_t i = 5; i + 1 < f.size(); ++i) location += "," + f[i];
  f = {unquote(f[0]), f[1], f[2], unquote(f[3]), unquote(location), f.back()};
  DeviceTask t;
  t.line = row.number;
  t.task_id = f[0];
  if (t.task_id.empty()) fail(file, row.number, "empty taskId");
  t.dur_ns = parse_us(f[1], "elapsed_time(us)", file, row.number);
  t.start_ns = parse_us(f[2], "timestamp(us)", file, row.number);
  t.event = f[3];
  classify_event(t, file);
  t.location = f[4];
  t.bytes = f[5].empty() ? 0 : parse_uint(f[5], "bytes", file, row.number);
  return t;
}

// ---- runtime host profile --------------------------------------------------

struct HostEvent {
  HostSpan key;   // dispatch, ids, type; start_ns holds the timestamp
  bool begin = false;
};

HostEvent host_event(const Line& row, const std::string& file) {
  if (!row.error.empty()) fail(file, row.number, row.error);
  expect_fields(row, 5, file);
  const auto& f = row.fields;
  HostEvent e;
  e.key.line = row.number;
  e.key.dispatch_name = f[0];
  e.key.invocation_id = parse_uint(f[1], "invocation_id", file, row.number);
  e.key.action_id = parse_int(f[2], "action_id", file, row.number);
  e.key.start_ns = parse_us(f[3], "timestamp_us", file, row.number);
  const std::string& ev = f[4];
  const bool begin = ev.size() > 6 && ev.compare(ev.size() - 6, 6, "_BEGIN") == 0;
  const bool end = !begin && ev.size() > 4 && ev.compare(ev.size() - 4, 4, "_END") == 0;
  e.key.type = begin ? ev.substr(0, ev.size() - 6) : end ? ev.substr(0, ev.size() - 4) : "";
  const bool type_ok = std::all_of(e.key.type.begin(), e.key.type.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (e.key.type.empty() || !type_ok) fail(file, row.number, "event '" + ev + "' is not <TYPE>_BEGIN or <TYPE>_END");
  e.begin = begin;
  return e;
}

using SpanKey = std::tuple<std::string, uint64_t, uint64_t, std::string>;

SpanKey key_of(const HostSpan& s) { return {s.dispatch_name, s.invocation_id, s.action_id, s.type}; }

std::string describe(const HostSpan& s) {
  return s.type + " of dispatch '" + s.dispatch_name + "' invocation " + std::to_string(s.invocation_id) +
         " action " + std::to_string(s.action_id);
}

// Pairs BEGIN/END events; spans come out in BEGIN-line order.
std::vector<HostSpan> pair_events(const std::vector<HostEvent>& events, const std::string& file) {
  std::map<SpanKey, size_t> open;  // key -> index into spans
  std::vector<HostSpan> spans;
  std::vector<bool> closed;
  for (const HostEvent& e : events) {
    const SpanKey k = key_of(e.key);
    auto it = open.find(k);
    if (e.begin) {
      if (it != open.end())
        fail(file, e.key.line, "second " + e.key.type + "_BEGIN of " + describe(e.key) + " (the one at line " +
                                   std::to_string(spans[it->second].line) + " has no END)");
      open[k] = spans.size();
      spans.push_back(e.key);
      closed.push_back(false);
      continue;
    }
    if (it == open.end()) fail(file, e.key.line, e.key.type + "_END without a BEGIN: " + describe(e.key));
    HostSpan& s = spans[it->second];
    if (e.key.start_ns < s.start_ns)
      fail(file, e.key.line, e.key.type + "_END before its BEGIN (line " + std::to_string(s.line) + ")");
    s.end_ns = e.key.start_ns;
    closed[it->second] = true;
    open.erase(it);
  }
  for (size_t i = 0; i < spans.size(); ++i)
    if (!closed[i]) fail(file, spans[i].line, spans[i].type + "_BEGIN never ends: " + describe(spans[i]));
  return spans;
}

std::string read_file(const std::string& path) {
  if (const std::string why = base::not_a_regular_file(path); !why.empty())
    throw PipelineError(path + ": cannot open: " + why);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PipelineError(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

HostKind host_kind(const std::string& type) {
  if (type == "HOST" || type == "HOST_PROGRAM") return HostKind::kHost;
  if (type == "HOST_COPY") return HostKind::kHostCopy;
  return HostKind::kDispatch;
}

std::vector<DeviceTask> parse_device_trace_csv(const std::string& text, const std::string& filename) {
  std::vector<DeviceTask> tasks;
  for (const Line& row : read_rows(text, filename, kDeviceTraceCsvHeader)) tasks.push_back(device_task(row, filename));
  return tasks;
}

std::vector<HostSpan> parse_host_profile_csv(const std::string& text, const std::string& filename) {
  std::vector<HostEvent> events;
  for (const Line& row : read_rows(text, filename, kHostProfileCsvHeader)) events.push_back(host_event(row, filename));
  return pair_events(events, filename);
}

std::vector<DeviceTask> load_device_trace_csv(const std::string& path) {
  return parse_device_trace_csv(read_file(path), path);
}

std::vector<HostSpan> load_host_profile_csv(const std::string& path) {
  return parse_host_profile_csv(read_file(path), path);
}

ProfileData align_starts(ProfileData data) {
  int64_t d0 = std::numeric_limits<int64_t>::max(), h0 = d0;
  for (const DeviceTask& t : data.device) d0 = std::min(d0, t.start_ns);
  for (const HostSpan& s : data.host) h0 = std::min(h0, s.start_ns);
  for (DeviceTask& t : data.device) t.start_ns -= d0;
  for (HostSpan& s : data.host) {
    s.start_ns -= h0;
    s.end_ns -= h0;
  }
  return data;
}

// ---- interval maths ----------------------------------------------------------

std::vector<Interval> merge_intervals(std::vector<Interval> in) {
  std::erase_if(in, [](const Interval& i) { return i.second <= i.first; });
  std::sort(in.begin(), in.end());
  std::vector<Interval> out;
  for (const Interval& i : in) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

int64_t total_length(const std::vector<Interval>& merged) {
  int64_t sum = 0;
  for (const Interval& i : merged) sum += i.second - i.first;
  return sum;
}

int64_t intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t sum = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    sum += std::max<int64_t>(0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second) ++i; else ++j;
  }
  return sum;
}

// ---- overview ----------------------------------------------------------------

namespace {

struct EngineIntervals {
  std::vector<Interval> dma, compute, slice0, slice1, css, host, host_copy, all;
};

void add_device(EngineIntervals& e, const DeviceTask& t) {
  const Interval iv{t.start_ns, t.start_ns + t.dur_ns};
  switch (t.engine) {
    case DeviceEngine::kDmaIn:
    case DeviceEngine::kDmaOut:
    case DeviceEngine::kCdma: e.dma.push_back(iv); break;
    case DeviceEngine::kCss: e.css.push_back(iv); e.compute.push_back(iv); break;
    case DeviceEngine::kSlice:
      e.compute.push_back(iv);
      if (t.slice == 0) e.slice0.push_back(iv);
      if (t.slice == 1) e.slice1.push_back(iv);
      break;
  }
}

EngineIntervals collect(const ProfileData& data) {
  EngineIntervals e;
  for (const DeviceTask& t : data.device) add_device(e, t);
  for (const HostSpan& s : data.host) {
    if (host_kind(s.type) == HostKind::kHost) e.host.push_back({s.start_ns, s.end_ns});
    if (host_kind(s.type) == HostKind::kHostCopy) e.host_copy.push_back({s.start_ns, s.end_ns});
  }
  for (auto* v : {&e.dma, &e.compute, &e.slice0, &e.slice1, &e.css, &e.host, &e.host_copy}) {
    *v = merge_intervals(std::move(*v));
    e.all.insert(e.all.end(), v->begin(), v->end());
  }
  e.all = merge_intervals(std::move(e.all));
  return e;
}

// Earliest start and latest end over both files; {0, 0} when empty.
Interval span_of(const ProfileData& data) {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const DeviceTask& t : data.device) lo = std::min(lo, t.start_ns), hi = std::max(hi, t.start_ns + t.dur_ns);
  for (const HostSpan& s : data.host) lo = std::min(lo, s.start_ns), hi = std::max(hi, s.end_ns);
  return lo > hi ? Interval{0, 0} : Interval{lo, hi};
}

}  // namespace

double HostProfileOverview::percent(int64_t ns) const {
  return overall_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(overall_ns) : 0.0;
}

HostProfileOverview compute_overview(const ProfileData& data, std::optional<int64_t> wall_time_ns) {
  const EngineIntervals e = collect(data);
  const Interval span = span_of(data);
  HostProfileOverview ov;
  ov.overall_ns = span.second - span.first;
  ov.wall_time_ns = wall_time_ns.value_or(ov.overall_ns);
  ov.dma_ns = total_length(e.dma);
  ov.compute_ns = total_length(e.compute);
  ov.slice0_ns = total_length(e.slice0);
  ov.slice1_ns = total_length(e.slice1);
  ov.css_ns = total_length(e.css);
  ov.host_ns = total_length(e.host);
  ov.host_copy_ns = total_length(e.host_copy);
  ov.overlap_ns = intersection_length(e.dma, e.compute);
  ov.idle_ns = ov.overall_ns - total_length(e.all);
  return ov;
}

std::string format_duration(int64_t ns) {
  char buf[64];
  const double v = static_cast<double>(ns);
  if (ns >= 1'000'000'000) std::snprintf(buf, sizeof buf, "%.3fs", v / 1e9);
  else if (ns >= 1'000'000) std::snprintf(buf, sizeof buf, "%.3fms", v / 1e6);
  else if (ns >= 1'000) std::snprintf(buf, sizeof buf, "%.3f\xC2\xB5s", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%lldns", static_cast<long long>(ns));
  return buf;
}

namespace {

struct OverviewRow {
  const char* key;    // JSON key
  const char* label;  // text label
  int64_t ns;
  bool share;         // has a percent
};

std::vector<OverviewRow> rows_of(const HostProfileOverview& ov) {
  return {{"WALL_TIME", "WALL_TIME", ov.wall_time_ns, false}, {"OVERALL", "OVERALL", ov.overall_ns, false},
          {"DMA", "Dma", ov.dma_ns, true},                     {"COMPUTE", "Compute", ov.compute_ns, true},
          {"SLICE_0", "Slice 0", ov.slice0_ns, true},          {"SLICE_1", "Slice 1", ov.slice1_ns, true},
          {"CSS", "Css", ov.css_ns, true},                     {"OVERLAP", "Overlap", ov.overlap_ns, true},
          {"IDLE", "Idle", ov.idle_ns, true},                  {"HOST", "Host", ov.host_ns, true},
          {"HOST_COPY", "Host Copy", ov.host_copy_ns, true}};
}

// Display width of UTF-8 text (code points; the µ counts one).
size_t width(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string pad_left(const std::string& s, size_t w) { return std::string(w > width(s) ? w - width(s) : 0, ' ') + s; }
std::string pad_right(const std::string& s, size_t w) { return s + std::string(w > width(s) ? w - width(s) : 0, ' '); }

}  // namespace

std::string overview_text(const HostProfileOverview& ov, const std::string& model) {
  std::string out = "====================== Host Profile Overview =======================\n";
  if (!model.empty()) out += "  Model: " + model + "\n";
  out += "  ";
  for (int i = 0; i < 56; ++i) out += "\xE2\x94\x80";  // ─
  out += "\n";
  for (const OverviewRow& r : rows_of(ov)) {
    out += "  " + pad_right(r.label, 26) + " " + pad_left(format_duration(r.ns), 14);
    if (r.share) {
      char pct[32];
      std::snprintf(pct, sizeof pct, "  (%.2f%%)", ov.percent(r.ns));
      out += pct;
    }
    out += "\n";
  }
  return out;
}

nlohmann::json overview_json(const HostProfileOverview& ov, const std::string& model) {
  nlohmann::json j = {{"model", model}};
  for (const OverviewRow& r : rows_of(ov)) {
    nlohmann::json row = {{"time_us", static_cast<double>(r.ns) / 1000.0}, {"text", format_duration(r.ns)}};
    if (r.share) row["percent"] = ov.percent(r.ns);
    j[r.key] = row;
  }
  return j;
}

// ---- Chrome / Perfetto trace -------------------------------------------------

namespace {

constexpr int kDevicePid = 1, kHostPid = 2;

struct Track {
  int pid, tid;
  std::string name;
  bool operator<(const Track& o) const { return std::tie(pid, tid) < std::tie(o.pid, o.tid); }
};

Track device_track(const DeviceTask& t) {
  switch (t.engine) {
    case DeviceEngine::kDmaIn: return {kDevicePid, 1, "DMA In"};
    case DeviceEngine::kDmaOut: return {kDevicePid, 2, "DMA Out"};
    case DeviceEngine::kCdma: return {kDevicePid, 3, "CDMA"};
    case DeviceEngine::kSlice: return {kDevicePid, 10 + t.slice, "Slice " + std::to_string(t.slice)};
    case DeviceEngine::kCss: break;
  }
  return {kDevicePid, 20, "CSS"};
}

const char* engine_cat(DeviceEngine e) {
  switch (e) {
    case DeviceEngine::kDmaIn: return "dma_in";
    case DeviceEngine::kDmaOut: return "dma_out";
    case DeviceEngine::kCdma: return "cdma";
    case DeviceEngine::kSlice: return "slice";
    case DeviceEngine::kCss: break;
  }
  return "css";
}

const char* host_cat(const std::string& type) {
  switch (host_kind(type)) {
    case HostKind::kHost: return "host";
    case HostKind::kHostCopy: return "host_copy";
    case HostKind::kDispatch: break;
  }
  return "dispatch";
}

double micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

nlohmann::json meta(const char* what, int pid, int tid, nlohmann::json args) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

nlohmann::json complete(const std::string& name, const char* cat, const Track& tr, int64_t ts, int64_t dur,
                        nlohmann::json args) {
  return {{"name", name}, {"cat", cat},  {"ph", "X"},   {"ts", micros(ts)},
          {"dur", micros(dur)}, {"pid", tr.pid}, {"tid", tr.tid}, {"args", std::move(args)}};
}

// X events of both files grouped per track, times from `origin`.
std::map<Track, std::vector<nlohmann::json>> x_events(const ProfileData& data, int64_t origin) {
  std::map<Track, std::vector<nlohmann::json>> tracks;
  for (const DeviceTask& t : data.device) {
    const Track tr = device_track(t);
    nlohmann::json args = {{"task", t.task_id}, {"event", t.event}, {"location", t.location}, {"bytes", t.bytes}};
    tracks[tr].push_back(complete(t.location.empty() ? t.event : t.location, engine_cat(t.engine), tr,
                                  t.start_ns - origin, t.dur_ns, std::move(args)));
  }
  std::map<std::string, int> host_tids;  // type -> tid, in name order
  for (const HostSpan& s : data.host) host_tids[s.type] = 0;
  int next = 1;
  for (auto& [type, tid] : host_tids) tid = next++;
  for (const HostSpan& s : data.host) {
    const Track tr{kHostPid, host_tids[s.type], "Host: " + s.type};
    nlohmann::json args = {{"dispatch", s.dispatch_name}, {"invocation", s.invocation_id}, {"action", s.action_id}};
    tracks[tr].push_back(complete(s.dispatch_name.empty() ? s.type : s.dispatch_name, host_cat(s.type), tr,
                                  s.start_ns - origin, s.end_ns - s.start_ns, std::move(args)));
  }
  return tracks;
}

}  // namespace

nlohmann::json trace_json(const ProfileData& data, const std::string& model, std::optional<int64_t> wall_time_ns) {
  const int64_t origin = span_of(data).first;
  auto tracks = x_events(data, origin);
  nlohmann::json events = nlohmann::json::array();
  const std::string suffix = model.empty() ? "" : " " + model;
  events.push_back(meta("process_name", kDevicePid, 0, {{"name", "NPU" + suffix + " (compile-time trace)"}}));
  events.push_back(meta("process_name", kHostPid, 0, {{"name", "Host" + suffix + " (runtime profile)"}}));
  for (const auto& [tr, list] : tracks) {
    events.push_back(meta("thread_name", tr.pid, tr.tid, {{"name", tr.name}}));
    events.push_back(meta("thread_sort_index", tr.pid, tr.tid, {{"sort_index", tr.tid}}));
  }
  for (auto& [tr, list] : tracks) {
    std::stable_sort(list.begin(), list.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
      return a["ts"].get<double>() < b["ts"].get<double>();
    });
    for (auto& e : list) events.push_back(std::move(e));
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"model", model}, {"overview", overview_json(compute_overview(data, wall_time_ns), model)}}}};
}

}  // namespace torq::pipeline
