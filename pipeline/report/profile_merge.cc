#include "pipeline/report/profile_merge.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "pipeline/report/atomic_file.h"

namespace torq::pipeline {

namespace {

int64_t end_of(const ProfileData& d) {
  int64_t end = 0;
  for (const auto& t : d.device) end = std::max(end, t.start_ns + t.dur_ns);
  for (const auto& h : d.host) end = std::max(end, h.end_ns);
  return end;
}

std::string us(int64_t ns) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f", static_cast<double>(ns) / 1000.0);
  return b;
}

std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void write_file(const std::string& path, const std::string& text) { write_file_atomic(path, text); }

}  // namespace

ProfileData merge_layer_profiles(const std::vector<ExecResult::Profile>& layers, const std::string& label) {
  ProfileData all;
  int64_t offset = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string what = label + " layer " + std::to_string(i);
    ProfileData one;
    if (!layers[i].device_csv.empty()) one.device = parse_device_trace_csv(layers[i].device_csv, what + " device trace");
    if (!layers[i].host_csv.empty()) one.host = parse_host_profile_csv(layers[i].host_csv, what + " host profile");
    for (auto& t : one.device) {
      t.start_ns += offset;
      all.device.push_back(std::move(t));
    }
    // The real runtime stamps its events with absolute steady-clock
    // microseconds: each layer's host profile starts at its first event
    // (the sim's starts at 0 already), beside its device trace.
    int64_t host_origin = 0;
    if (!one.host.empty()) {
      host_origin = one.host.front().start_ns;
      for (const auto& h : one.host) host_origin = std::min(host_origin, h.start_ns);
    }
    for (auto& h : one.host) {
      h.start_ns += offset - host_origin;
      h.end_ns += offset - host_origin;
      all.host.push_back(std::move(h));
    }
    offset = std::max(offset, end_of(all));
  }
  return all;
}

nlohmann::json export_profile(const ProfileData& data, const std::string& dir, const std::string& name,
                              std::string* overview_text_out) {
  std::string dev = std::string(kDeviceTraceCsvHeader) + "\n";
  // Rows as the compiler writes them: no spaces, the location unquoted.
  for (const auto& t : data.device)
    dev += quoted(t.task_id) + "," + us(t.dur_ns) + "," + us(t.start_ns) + "," + quoted(t.event) + "," + t.location +
           "," + std::to_string(t.bytes) + "\n";
  std::string host = std::string(kHostProfileCsvHeader) + "\n";
  for (const auto& h : data.host) {
    const std::string head = quoted(h.dispatch_name) + "," + std::to_string(h.invocation_id) + "," +
                             std::to_string(h.action_id) + ",";
    host += head + us(h.start_ns) + "," + h.type + "_BEGIN\n";
    host += head + us(h.end_ns) + "," + h.type + "_END\n";
  }
  const HostProfileOverview ov = compute_overview(data);
  const std::string text = overview_text(ov, name);
  write_file(dir + "/" + name + ".device_trace.csv", dev);
  write_file(dir + "/" + name + ".host_profile.csv", host);
  write_file(dir + "/" + name + ".trace.json", trace_json(data, name).dump(1));
  write_file(dir + "/" + name + ".profile_overview.txt", text);
  if (overview_text_out) *overview_text_out = text;
  return overview_json(ov, name);
}

}  // namespace torq::pipeline
