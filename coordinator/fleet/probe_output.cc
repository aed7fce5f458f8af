#include "coordinator/fleet/probe_output.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "coordinator/fleet/fmt.h"
#include "pipeline/base/file_bytes.h"
#include "pipeline/probe/envelope_predict.h"
#include "pipeline/probe/envelope_report.h"
#include "pipeline/probe/probe_diff.h"
#include "pipeline/report/atomic_file.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;  // NOLINT(google-build-using-namespace)
using probe::DerivedProfile;
using probe::ProbeRow;

std::map<Executor, targets::TargetProfile> base_profiles(const std::map<Executor, std::string>& map,
                                                         const std::vector<Executor>& executors,
                                                         const targets::OpCatalog& catalog) {
  std::map<Executor, targets::TargetProfile> out;
  for (Executor e : executors) {
    auto it = map.find(e);
    out.emplace(e, it != map.end() ? targets::TargetProfile::load(it->second, catalog)
                                   : targets::TargetProfile::resolve(executor_name(e), catalog));
  }
  return out;
}

std::map<Executor, std::string> base_profile_files(const std::map<Executor, std::string>& files,
                                                   const std::vector<Executor>& executors) {
  std::map<Executor, std::string> out;
  for (Executor e : executors) {
    auto it = files.find(e);
    out[e] = it != files.end() ? it->second
                               : targets::TargetProfile::targets_dir() + "/" + executor_name(e) + ".yaml";
  }
  return out;
}

std::map<Executor, std::string> recorded_base(const std::string& dir) {
  std::map<Executor, std::string> out;
  for (Executor e : kExecutorPriority) {
    const std::string path = dir + "/base/" + executor_name(e) + ".yaml";
    if (fs::exists(path)) out[e] = path;
  }
  return out;
}

namespace {

std::string read_text(const std::string& path) {
  std::optional<std::string> bytes = base::read_file_bytes(path);
  if (!bytes) throw PipelineError(path + ": cannot open");
  return std::move(*bytes);
}

// Counts of the rows: points, invalid ones, infrastructure failures and
// points lacking an outcome on some executor.
void count_rows(const std::vector<ProbeRow>& rows, const std::vector<Executor>& executors, ProbeSummary& s) {
  s.points = rows.size();
  for (const auto& r : rows) {
    if (!r.invalid.empty()) {
      ++s.invalid;
      continue;
    }
    std::set<Executor> seen;
    for (const auto& o : r.outcomes) {
      seen.insert(o.executor);
      s.infrastructure += o.infrastructure;
    }
    for (Executor e : executors) s.missing += !seen.count(e);
  }
  s.complete = s.missing == 0;
}

// Of the outcomes on `e` that a profile may be judged by (a valid point, no
// infrastructure failure), how many `p` predicts: (agreed, compared).
std::pair<size_t, size_t> agreement(const targets::TargetProfile& p, Executor e, const std::vector<ProbeRow>& rows) {
  size_t agreed = 0, compared = 0;
  for (const auto& r : rows) {
    if (!r.invalid.empty()) continue;
    for (const auto& o : r.outcomes) {
      if (o.executor != e || o.infrastructure) continue;
      ++compared;
      agreed += probe::refusing_key(p, r.features).empty() == o.runs();
    }
  }
  return {agreed, compared};
}

std::string percent(size_t a, size_t b) { return fmt(b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 100.0, 2) + "%"; }

}  // namespace

std::vector<Executor> executors_of(const std::vector<ProbeRow>& rows) {
  std::set<Executor> seen;
  for (const auto& r : rows)
    for (const auto& o : r.outcomes) seen.insert(o.executor);
  std::vector<Executor> out;
  for (Executor e : kExecutorPriority)
    if (seen.count(e)) out.push_back(e);
  return out;
}

std::vector<ProbeRow> read_probe_dir(const std::string& dir_or_csv) {
  const std::string path = fs::is_directory(dir_or_csv) ? dir_or_csv + "/probe.csv" : dir_or_csv;
  return probe::read_probe_csv(read_text(path), path);
}

ProbeSummary write_probe_outputs(const std::string& dir, const std::vector<ProbeRow>& rows,
                                 const std::vector<Executor>& executors,
                                 const std::map<Executor, targets::TargetProfile>& base,
                                 const std::map<Executor, std::string>& base_files,
                                 const targets::OpCatalog& catalog, const std::function<void(const std::string&)>& log) {
  ProbeSummary s;
  count_rows(rows, executors, s);
  // A probe killed mid-write left <file>.tmp.<pid> in these: removed here.
  prepare_output_dir(dir);
  prepare_output_dir(dir + "/profiles");
  prepare_output_dir(dir + "/base");
  for (const auto& [e, path] : base_files)
    if (fs::absolute(path) != fs::absolute(dir + "/base/" + executor_name(e) + ".yaml"))
      write_file_atomic(dir + "/base/" + executor_name(e) + ".yaml", read_text(path));
  std::string targets_yaml = "# The derived profiles of this probe: torq-gen-config discover --targets " + dir +
                             "/targets.yaml\n";
  for (Executor e : executors) {
    const targets::TargetProfile* b = base.count(e) ? &base.at(e) : nullptr;
    DerivedProfile d = probe::learn_profile(executor_name(e), rows, b, catalog);
    const std::string rel = std::string("profiles/") + executor_name(e) + ".yaml";
    write_file_atomic(dir + "/" + rel, d.yaml);
    targets_yaml += std::string(executor_name(e)) + ": " + rel + "\n";
    log("envelope " + std::string(executor_name(e)) + ": " + std::to_string(d.explained) + "/" +
        std::to_string(d.points) + " points explained (" + percent(static_cast<size_t>(d.explained), static_cast<size_t>(d.points)) + "), " +
        std::to_string(d.points - d.explained) + " residual(s); profile " + dir + "/" + rel);
    if (b) {
      const auto [agreed, compared] = agreement(*b, e, rows);
      s.base_agreement[e] = {agreed, compared};
      log("base profile " + b->name() + " predicts " + std::to_string(agreed) + "/" + std::to_string(compared) +
          " measured " + executor_name(e) + " statuses (" + percent(agreed, compared) + ")");
    }
    s.profiles.push_back(std::move(d));
  }
  write_file_atomic(dir + "/targets.yaml", targets_yaml);
  write_file_atomic(dir + "/probe.csv", probe::probe_csv(rows, s.profiles));
  write_file_atomic(dir + "/envelope.md", probe::envelope_md(s.profiles));
  write_file_atomic(dir + "/envelope.html", probe::envelope_html(s.profiles));
  log("probe: " + std::to_string(s.points) + " points (" + std::to_string(s.invalid) + " invalid), " +
      std::to_string(s.infrastructure) + " infrastructure failure(s) not learned from" +
      (s.missing ? ", " + std::to_string(s.missing) + " outcome(s) missing (stopped early: run again to resume)" : ""));
  log("wrote " + dir + "/probe.csv, envelope.md, envelope.html, targets.yaml");
  return s;
}

}  // namespace torq::coordinator
