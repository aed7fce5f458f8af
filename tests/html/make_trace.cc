// torq_trace_sample: writes the profiles of a fixed four-layer model on the
// nss target into a directory for tests/html/check_trace.sh: the two CSVs
// from the sim's cost model (trace.csv, runtime.csv), the Chrome / Perfetto
// trace JSON made from them after parsing them back (trace.json), the Host
// Profile Overview (overview.txt), a page that loads trace.json in the
// browser and writes a summary into its DOM (trace.html), and the summary
// lines that page must show (expected.txt), counted here in C++.
//
// Usage: torq_trace_sample <output-dir>   (exit 0, or 2 with a message)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pipeline/report/profile_trace.h"
#include "worker/engine/profile.h"
#include "worker/engine/profile_csv.h"

namespace tp = torq::pipeline;
namespace te = torq::engine;

namespace {

std::vector<te::LayerProfileInput> layers() {
  std::vector<te::LayerProfileInput> out(4);
  const char* names[] = {"conv1", "relu1", "pool<&>", "fc"};
  const char* ops[] = {"Conv", "Relu", "MaxPool", "Gemm"};
  const uint64_t in[] = {150528 + 18816, 401408, 401408, 1024000};
  const uint64_t outb[] = {401408, 401408, 100352, 2000};
  const uint64_t macs[] = {118013952, 0, 0, 512000};
  const uint64_t elems[] = {200704, 200704, 50176, 1000};
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].name = names[i];
    out[i].op_type = ops[i];
    out[i].input_bytes = in[i];
    out[i].output_bytes = outb[i];
    out[i].cost.macs = macs[i];
    out[i].cost.elements = elems[i];
  }
  return out;
}

void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f) throw std::runtime_error(p.string() + ": cannot write");
}

// The page: loads trace.json synchronously (file:// with
// --allow-file-access-from-files), checks it and prints what it found.
const char* kPage = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>torq trace check</title></head>
<body><pre id="summary">not run</pre>
<script>
(function () {
  const out = [];
  try {
    const xhr = new XMLHttpRequest();
    xhr.open('GET', 'trace.json', false);
    xhr.send();
    const trace = JSON.parse(xhr.responseText);
    if (trace.displayTimeUnit !== 'ms') throw new Error('displayTimeUnit ' + trace.displayTimeUnit);
    const names = {}, last = {}, counts = {};
    let x = 0;
    for (const e of trace.traceEvents) {
      const key = e.pid + '/' + e.tid;
      if (e.ph === 'M' && e.name === 'thread_name') { names[key] = e.args.name; continue; }
      if (e.ph !== 'X') continue;
      for (const f of ['name', 'cat']) if (typeof e[f] !== 'string') throw new Error('X without ' + f);
      if (!(e.ts >= 0) || !(e.dur >= 0)) throw new Error('bad ts/dur on ' + e.name);
      if (!(key in names)) throw new Error('unnamed track ' + key);
      if (key in last && last[key] > e.ts) throw new Error('unordered track ' + names[key]);
      last[key] = e.ts;
      counts[names[key]] = (counts[names[key]] || 0) + 1;
      ++x;
    }
    out.push('x_events=' + x);
    for (const n of Object.keys(counts).sort()) out.push('track ' + n + '=' + counts[n]);
    out.push('idle_us=' + trace.otherData.overview.IDLE.time_us.toFixed(3));
    out.push('status=ok');
  } catch (err) {
    out.push('status=error ' + err.message);
  }
  document.getElementById('summary').textContent = out.join('\n');
})();
</script></body></html>
)";

std::string expected_summary(const nlohmann::json& trace) {
  std::map<std::pair<int, int>, std::string> names;
  std::map<std::string, int> counts;
  int x = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::pair<int, int> key{e["pid"].get<int>(), e["tid"].get<int>()};
    if (e["ph"] == "M" && e["name"] == "thread_name") names[key] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "X") ++counts[names[key]], ++x;
  }
  std::string s = "x_events=" + std::to_string(x) + "\n";
  for (const auto& [n, c] : counts) s += "track " + n + "=" + std::to_string(c) + "\n";
  char idle[64];
  std::snprintf(idle, sizeof idle, "%.3f", trace["otherData"]["overview"]["IDLE"]["time_us"].get<double>());
  return s + "idle_us=" + idle + "\nstatus=ok\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: torq_trace_sample <output-dir>\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const auto nss = te::ExecutorProfile::resolve("nss");
    const auto csvs = te::make_profile_csvs(layers(), nss.cost(), te::TraceExecutor::kNss);
    write(dir / "trace.csv", csvs.device_trace);
    write(dir / "runtime.csv", csvs.host_profile);
    tp::ProfileData data{tp::load_device_trace_csv((dir / "trace.csv").string()),
                         tp::load_host_profile_csv((dir / "runtime.csv").string())};
    const nlohmann::json trace = tp::trace_json(data, "sample", std::nullopt);
    write(dir / "trace.json", trace.dump(1));
    write(dir / "overview.txt", tp::overview_text(tp::compute_overview(data), "sample"));
    write(dir / "trace.html", kPage);
    write(dir / "expected.txt", expected_summary(trace));
  } catch (const std::exception& e) {
    std::cerr << "torq_trace_sample: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
