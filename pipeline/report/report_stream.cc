// ReportStreamWriter: the report's text around `ops` comes from dumping the
// same document report_to_json makes with a marker in place of `ops`, so
// that only the ops are written by hand, each as nlohmann dumps it, indented
// to its depth.
#include "pipeline/report/report_stream.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "pipeline/plan/recommend.h"
#include "pipeline/report/report_parts.h"

namespace torq::pipeline {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* kMarker = "\x01torq-streamed-ops\x01";

std::string dump(const ojson& j) { return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }

// `text` (a value dumped at depth 0) as it reads at `depth` levels of 2
// spaces: every line after the first indented by 2 * depth.
std::string at_depth(const std::string& text, int depth) {
  const std::string nl = "\n" + std::string(static_cast<size_t>(2 * depth), ' ');
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (char c : text) {
    if (c == '\n') out += nl;
    else out += c;
  }
  return out;
}

// The document's text before and after the marker that stands for `key`'s value.
std::pair<std::string, std::string> split_at_marker(const ojson& doc) {
  const std::string text = dump(doc);
  const std::string m = ojson(kMarker).dump();
  const size_t at = text.find(m);
  if (at == std::string::npos) throw std::logic_error("report stream: marker not found");
  return {text.substr(0, at), text.substr(at + m.size())};
}

// An object of entries written one by one, at `depth` (its keys one deeper).
std::string entry(size_t n, const std::string& key, const std::string& value_text, int depth) {
  std::string s = n == 0 ? "{\n" : ",\n";
  s += std::string(static_cast<size_t>(2 * (depth + 1)), ' ') +
       ojson(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ": " +
       at_depth(value_text, depth + 1);
  return s;
}

std::string close_object(size_t n, int depth) {
  return n == 0 ? "{}" : "\n" + std::string(static_cast<size_t>(2 * depth), ' ') + "}";
}

// One entry per location, in the order locations first came, each with the
// executor of its last layer.
std::vector<std::pair<std::string, Executor>> unique_assignments(std::vector<std::pair<std::string, Executor>> all) {
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return all[a].first < all[b].first; });
  std::vector<bool> keep(all.size(), false);
  for (size_t k = 0; k < order.size();) {
    size_t end = k;
    while (end < order.size() && all[order[end]].first == all[order[k]].first) ++end;
    all[order[k]].second = all[order[end - 1]].second;  // first place, last executor
    keep[order[k]] = true;
    k = end;
  }
  std::vector<std::pair<std::string, Executor>> out;
  for (size_t i = 0; i < all.size(); ++i)
    if (keep[i]) out.push_back(std::move(all[i]));
  return out;
}

}  // namespace

ReportStreamWriter::ReportStreamWriter(const ModelReport& head, const std::string& output_dir) : head_(head) {
  head_.layers.clear();
  if (output_dir.empty()) return;
  prepare_output_dir(output_dir);
  compiler_path_ = compiler_path(output_dir, head_.model_name);
  report_.emplace(report_path(output_dir, head_.model_name));
  ojson doc = report_parts::report_head(head_);
  doc["ops"] = kMarker;
  report_->write(split_at_marker(doc).first);
}

void ReportStreamWriter::add(const LayerReport& l) {
  if (l.info.index < 0) {
    unindexed_ = true;
  } else if (unindexed_ || l.info.index < last_index_) {
    throw std::logic_error("report stream: layer " + l.info.id + " out of _node_index order");
  } else {
    last_index_ = l.info.index;
  }
  summarize_layer(summary_, l);
  if (is_critical_failure(l)) {
    critical_.push_back(report_parts::critical_failure_json(l));
    critical_nodes_.push_back(critical_node_text(l));
  }
  rows_.push_back(status_row(l));
  if (report_parts::is_assignable(l)) assignments_.emplace_back(l.info.mlir_location, *l.recommended);
  if (report_) write_op(l);
}

void ReportStreamWriter::write_op(const LayerReport& l) {
  report_->write(entry(ops_++, l.info.id, dump(report_parts::layer_json(l)), 1));
}

ReportSummary ReportStreamWriter::finish() {
  if (!report_) return summary_;
  const std::string final_text = render_final_report(head_.model_name, summary_, critical_nodes_, rows_);
  ojson doc = report_parts::report_head(head_);
  doc["ops"] = kMarker;
  report_parts::report_tail(doc, summary_, std::move(critical_), final_text, head_.extra);
  report_->write(close_object(ops_, 1));
  report_->write(split_at_marker(doc).second);
  report_->write("\n");

  AtomicFile compiler(compiler_path_);
  ojson cdoc = report_parts::compiler_head(head_.model_name);
  cdoc["op_assignments"] = kMarker;
  report_parts::compiler_tail(cdoc, head_.extra);
  auto [before, after] = split_at_marker(cdoc);
  compiler.write(before);
  size_t n = 0;
  for (const auto& [loc, e] : unique_assignments(std::move(assignments_)))
    compiler.write(entry(n++, loc, dump(ojson{{"executor", executor_name(e)}}), 1));
  compiler.write(close_object(n, 1));
  compiler.write(after);
  compiler.write("\n");
  report_->commit();
  compiler.commit();
  return summary_;
}

}  // namespace torq::pipeline
