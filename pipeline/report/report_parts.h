// The pieces report_to_json and compiler_json are made of, shared with the
// streamed writer (report_stream.h) so that both write the same bytes.
// Internal to pipeline/report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/core/types.h"
#include "pipeline/report/report.h"

namespace torq::pipeline::report_parts {

// One op of the report's `ops` object.
nlohmann::ordered_json layer_json(const LayerReport& l);
// Its entry in discovery_report.critical_failures.
nlohmann::ordered_json critical_failure_json(const LayerReport& l);
// discovery_report.summary.
nlohmann::ordered_json summary_json(const ReportSummary& s);
// The report's keys before `ops`: version, model_name, variant, default_tolerance.
nlohmann::ordered_json report_head(const ModelReport& r);
// The keys after `ops`: discovery_report, has_critical_failures,
// final_report_text, then the kept extras.
void report_tail(nlohmann::ordered_json& j, const ReportSummary& s, nlohmann::ordered_json critical,
                 std::string final_text, const ExtraFields& extra);
// The compiler JSON's keys: model_name and an empty op_assignments; its tail
// (the report's kept full-model tolerance).
nlohmann::ordered_json compiler_head(const std::string& model_name);
void compiler_tail(nlohmann::ordered_json& j, const ExtraFields& report_extra);
// Whether the layer has an op assignment: a recommendation and a "line:col" location.
bool is_assignable(const LayerReport& l);

}  // namespace torq::pipeline::report_parts
