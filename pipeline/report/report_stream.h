// The report JSON and compiler JSON of one model written one layer at a
// time (issue 32): a model of 333,334 layers has a 750 MB report, which
// report_to_json would first build as a document of tens of millions of
// JSON nodes. The bytes are those of write_report_files() for the same
// ModelReport (tested): the same parts (report_parts.h) in the same order.
// Held while writing: the critical failures, one status-table row per layer
// (for final_report_text) and the compiler assignments.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/core/types.h"
#include "pipeline/report/atomic_file.h"
#include "pipeline/report/report.h"
#include "pipeline/report/view.h"

namespace torq::pipeline {

class ReportStreamWriter {
 public:
  // `head`: the report without layers (model_name, variant,
  // default_tolerance, extra). With an empty output_dir nothing is written
  // and only the summary is kept; else the files go to output_dir (created
  // when missing) when finish() succeeds.
  ReportStreamWriter(const ModelReport& head, const std::string& output_dir);

  // The next layer, in report order: ascending _node_index, layers without
  // one last (std::logic_error otherwise). Layer ids must be unique (a
  // report of repeated ids keeps one op per id: write it whole instead).
  void add(const LayerReport& l);

  // Completes and publishes both files; returns the summary.
  ReportSummary finish();

 private:
  void write_op(const LayerReport& l);
  ModelReport head_;
  std::optional<AtomicFile> report_;
  std::string compiler_path_;
  ReportSummary summary_;
  nlohmann::ordered_json critical_ = nlohmann::ordered_json::array();
  std::vector<std::string> critical_nodes_;
  std::vector<StatusRow> rows_;
  // (location, executor) in layer order; a location seen twice keeps its
  // first place and its last executor, as compiler_json (sorted out in finish()).
  std::vector<std::pair<std::string, Executor>> assignments_;
  int64_t last_index_ = -1;
  bool unindexed_ = false;  // a layer without _node_index came: only such layers may follow
  size_t ops_ = 0;
};

}  // namespace torq::pipeline
