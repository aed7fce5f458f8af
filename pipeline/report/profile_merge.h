// The profiles of a run made of several layer runs (an assigned full-model
// run, a subgraph): each layer's compile-time trace and runtime host
// profile CSVs, laid end to end in time, as one profile of the whole run;
// and the files exported next to a report (DESIGN §5, issue 10 Profiles).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/report/profile_trace.h"
#include "pipeline/core/types.h"

namespace torq::pipeline {

// Parses every layer's CSVs (`label` names them in errors: "<label> layer
// N") and shifts each layer to start where the previous one ended.
// Throws PipelineError naming the layer and line of a malformed CSV.
ProfileData merge_layer_profiles(const std::vector<ExecResult::Profile>& layers, const std::string& label);

// Writes <dir>/<name>.device_trace.csv and <name>.host_profile.csv (the
// merged CSVs, re-emitted), <name>.trace.json (Chrome / Perfetto) and
// <name>.profile_overview.txt; returns the overview's JSON. Throws
// PipelineError when a file cannot be written.
nlohmann::json export_profile(const ProfileData& data, const std::string& dir, const std::string& name,
                              std::string* overview_text_out);

}  // namespace torq::pipeline
