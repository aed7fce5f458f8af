// What a probe writes from its rows (torq-gen-config probe, and the
// coordinator's probe mode): the envelope learned per executor and the
// files of its directory. Shared by probe, probe learn (from probe.csv),
// probe diff and the matrix's probe mode.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/core/types.h"
#include "pipeline/probe/envelope_learn.h"
#include "pipeline/probe/probe_point.h"
#include "pipeline/targets/target_profile.h"

namespace torq::coordinator {

// Each executor's base profile: its file in `files` (a targets map, as
// discover --targets reads it), else the built-in configs/targets one.
std::map<pipeline::Executor, targets::TargetProfile> base_profiles(const std::map<pipeline::Executor, std::string>& files,
                                                                   const std::vector<pipeline::Executor>& executors,
                                                                   const targets::OpCatalog& catalog);
// The files base_profiles reads: `files`' entry, else the built-in one.
std::map<pipeline::Executor, std::string> base_profile_files(const std::map<pipeline::Executor, std::string>& files,
                                                             const std::vector<pipeline::Executor>& executors);
// The base profiles a probe of DIR recorded (DIR/base/<executor>.yaml), as
// a targets map; empty when it recorded none.
std::map<pipeline::Executor, std::string> recorded_base(const std::string& dir);

struct ProbeSummary {
  size_t points = 0, invalid = 0, infrastructure = 0, missing = 0;  // missing: a point without every outcome
  std::vector<pipeline::probe::DerivedProfile> profiles;
  // Per executor: of the learnable outcomes, how many the base profile
  // predicts (runs or fails): how far the profile given is from the
  // measurement (on a board: the simulator's error).
  std::map<pipeline::Executor, std::pair<size_t, size_t>> base_agreement;  // agreed, compared
  bool complete = true;  // every valid point has an outcome on every executor
};

// Learns each executor's envelope from `rows` and writes DIR/probe.csv,
// envelope.md, envelope.html, profiles/<executor>.yaml, targets.yaml and
// a copy of each base profile read from `base_files` (DIR/base/, which
// probe learn and probe diff take by default), each through a temporary
// file and a rename; logs what each profile explains. Throws
// PipelineError when a derived profile does not parse.
ProbeSummary write_probe_outputs(const std::string& dir, const std::vector<pipeline::probe::ProbeRow>& rows,
                                 const std::vector<pipeline::Executor>& executors,
                                 const std::map<pipeline::Executor, targets::TargetProfile>& base,
                                 const std::map<pipeline::Executor, std::string>& base_files,
                                 const targets::OpCatalog& catalog, const std::function<void(const std::string&)>& log);
// The rows of a probe directory's probe.csv (or of a probe.csv path).
std::vector<pipeline::probe::ProbeRow> read_probe_dir(const std::string& dir_or_csv);
// The executors with an outcome in `rows`, in priority order.
std::vector<pipeline::Executor> executors_of(const std::vector<pipeline::probe::ProbeRow>& rows);

}  // namespace torq::coordinator
