// The probe's reports (issue 34): probe.csv, one line per point and
// executor with its measurement, its features and whether the derived
// profile explains it (read back to re-learn without re-running); and the
// envelope per executor and op as Markdown and as a self-contained HTML page.
#pragma once

#include <string>
#include <vector>

#include "pipeline/probe/envelope_learn.h"
#include "pipeline/probe/probe_point.h"

namespace torq::pipeline::probe {

// probe.csv (RFC 4180): one line per (point, executor), an invalid point one
// line without executor. Columns: point_id, op, dtype, params, seed,
// executor, status, error_class, error_message, runtime_ms, host_ms,
// infrastructure, invalid, feature_op, feature_dtype, input_shape, max_rank,
// group_kind, kernel, strides, dilations (lists x-joined: 1x16x14x14),
// explained (1/0; empty when the point was not learned, or no profile of
// that executor is given) and predicted_key (the key of the executor's
// derived profile that refuses the point; "" accepted).
std::string probe_csv(const std::vector<ProbeRow>& rows, const std::vector<DerivedProfile>& profiles = {});

// Reads probe_csv's text back: lines of one point id merge their outcomes.
// Throws PipelineError "file:line: message" on malformed input.
std::vector<ProbeRow> read_probe_csv(const std::string& text, const std::string& filename);

// The envelopes as Markdown: per executor its totals, per op and data type
// group the sentence, explained fraction, status counts by the rule's key
// parameter and the residuals.
std::string envelope_md(const std::vector<DerivedProfile>& profiles);
// The same as a self-contained HTML page.
std::string envelope_html(const std::vector<DerivedProfile>& profiles);

}  // namespace torq::pipeline::probe
