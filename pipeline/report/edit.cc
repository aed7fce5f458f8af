// `torq-gen-config edit`: layer patterns, executor and tolerance edits.
#include "pipeline/report/edit.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include "pipeline/base/yaml_strict.h"
#include "pipeline/plan/recommend.h"
#include "pipeline/report/view.h"

namespace torq::pipeline {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> select(const ModelReport& r, const std::function<bool(const std::string&)>& keep) {
  std::vector<std::string> out;
  for (const LayerReport& l : r.layers)
    if (keep(l.info.id)) out.push_back(l.info.id);
  return out;
}

void check_tolerance(const std::optional<double>& v, const char* flag) {
  if (v && !(std::isfinite(*v) && *v >= 0))
    throw PipelineError(std::string(flag) + " must be a non-negative number, got " + std::to_string(*v));
}

// The seed's name of a layer, "<optype>_<index>" (lower case).
std::string seed_name_of(const ModelReport& r, const std::string& id) {
  for (const LayerReport& l : r.layers)
    if (l.info.id == id) return lower(l.info.op_type) + "_" + std::to_string(l.info.index);
  return "";
}

}  // namespace

std::string no_layer_message(const ModelReport& r, const std::string& pattern) {
  std::vector<std::string> ids;
  for (const LayerReport& l : r.layers) ids.push_back(l.info.id);
  std::string near;
  for (const auto& c : engine::closest(pattern, ids, 5)) near += (near.empty() ? "" : ", ") + c;
  return "no layer matches '" + pattern + "'" + (near.empty() ? "" : "; closest layer ids: " + near);
}

std::vector<std::string> match_layers(const ModelReport& r, const std::string& pattern) {
  if (pattern.empty()) return {};
  const std::string p = lower(pattern);
  if (p == "all") return select(r, [](const std::string&) { return true; });
  using Rule = std::function<bool(const std::string&)>;
  const Rule rules[] = {
      [&](const std::string& id) { return id == pattern; },
      [&](const std::string& id) { return lower(id) == p; },
      [&](const std::string& id) { return lower(id).find(p) != std::string::npos; },
      [&](const std::string& id) { return seed_name_of(r, id) == p; },
      [&](const std::string& id) { return ::fnmatch(pattern.c_str(), id.c_str(), FNM_CASEFOLD) == 0; },
  };
  for (const Rule& rule : rules) {
    std::vector<std::string> ids = select(r, rule);
    if (!ids.empty()) return ids;
  }
  return {};
}

std::vector<std::string> apply_edit(ModelReport& r, const EditRequest& req, std::vector<std::string>* notes) {
  if (!req.executor && !req.release && !req.tol_avg && !req.tol_max)
    throw PipelineError("nothing to edit: give --executor, --tolerance-avg or --tolerance-max");
  check_tolerance(req.tol_avg, "--tolerance-avg");
  check_tolerance(req.tol_max, "--tolerance-max");
  const std::vector<std::string> ids = match_layers(r, req.pattern);
  if (ids.empty()) throw PipelineError(no_layer_message(r, req.pattern));
  auto selected = [&](const LayerReport& l) { return std::find(ids.begin(), ids.end(), l.info.id) != ids.end(); };
  // Pinning an executor that failed on a layer needs --force (checked for
  // every layer before any is changed).
  if (req.executor && *req.executor && !req.force) {
    std::string failed;
    size_t n = 0;
    for (const LayerReport& l : r.layers) {
      if (!selected(l)) continue;
      auto it = l.results.find(**req.executor);
      if (it == l.results.end() || it->second.status != Status::kError) continue;
      if (n++ < 5)
        failed += std::string(failed.empty() ? "" : "; ") + l.info.id + " (" + it->second.error_class + ": " +
                  it->second.error_message.substr(0, 120) + ")";
    }
    if (n > 0)
      throw PipelineError("--executor " + std::string(executor_name(**req.executor)) + ": its result is an error on " +
                          std::to_string(n) + " of the layers: " + failed + (n > 5 ? "; ..." : "") +
                          ". Pin it anyway with --force");
  }
  for (LayerReport& l : r.layers) {
    if (!selected(l)) continue;
    if (req.release) {
      l.pinned = false;
      l.recommended = recommend(l, false);
    }
    if (req.executor) {
      l.recommended = *req.executor;
      l.pinned = req.executor->has_value();
      if (notes && *req.executor && !l.results.count(**req.executor))
        notes->push_back(l.info.id + ": " + executor_name(**req.executor) + " was never tested on this layer");
    }
    if (req.tol_avg || req.tol_max) {
      Tolerance t = l.tolerance.value_or(r.default_tolerance);
      if (req.tol_avg) t.fp_avg_tol = *req.tol_avg;
      if (req.tol_max) t.fp_max_tol = *req.tol_max;
      l.tolerance = t;
    }
  }
  return ids;
}

std::string render_list(const ModelReport& r, const std::string& filter) {
  if (r.layers.empty()) return "No layers found in config.\n";
  const std::string q = lower(filter);
  std::vector<const LayerReport*> rows;
  for (const LayerReport& l : r.layers)
    if (q.empty() || lower(l.info.id).find(q) != std::string::npos) rows.push_back(&l);
  if (rows.empty()) {
    std::string out = "No layers match '" + filter + "'.\nAvailable layers: ";
    for (size_t i = 0; i < r.layers.size() && i < 10; ++i) out += (i ? ", " : "") + r.layers[i].info.id;
    if (r.layers.size() > 10) out += "...";
    return out + "\n";
  }
  std::string out = render_layer_list(rows);
  out += "\nTotal: " + std::to_string(rows.size()) + " layer(s)";
  if (!q.empty()) out += " (filtered from " + std::to_string(r.layers.size()) + ")";
  return out + "\n";
}

}  // namespace torq::pipeline
