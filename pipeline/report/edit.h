// `torq-gen-config edit`: selecting layers by pattern and changing their
// recommended executor or tolerance in a ModelReport (the caller writes the
// report back with write_report_files, which also regenerates the compiler
// JSON). No I/O here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace torq::pipeline {

// The ids of the layers of `r` that `pattern` selects, in layer order.
// Rules, tried in this order; the first rule that selects anything wins:
//   1. "ALL" (any case): every layer;
//   2. exact id;
//   3. case-insensitive exact id;
//   4. case-insensitive substring of the id;
//   5. the seed's `<OpType>_<index>` (e.g. "Conv_0": the layer of that op
//      type whose _node_index is the index), as `-k` accepts it;
//   6. case-insensitive fnmatch glob (`*`, `?`, `[...]`), e.g. "Conv_*".
// So an exact id beats the longer ids that contain it. Empty result when
// nothing matches (or the pattern is empty).
std::vector<std::string> match_layers(const ModelReport& r, const std::string& pattern);

struct EditRequest {
  std::string pattern;
  // Unset: keep the recommendation. Set to nullopt: JSON null, i.e. no
  // recommendation (the next --skip-mode discover re-tests the layer and the
  // compiler JSON leaves the op unassigned).
  std::optional<std::optional<Executor>> executor;
  // `--executor auto`: release the layers' pins; the recommendation is the
  // results' again (priority order).
  bool release = false;
  // Pin an executor whose result on a layer is an error anyway.
  bool force = false;
  // New fp_avg_tol / fp_max_tol for the matched layers' tolerance override.
  std::optional<double> tol_avg, tol_max;
};

// Applies `req` to every layer `req.pattern` selects and returns their ids
// (layer order). A tolerance edit sets LayerReport::tolerance, taking the
// value not being edited from the layer's current effective tolerance (its
// override, else the model default), so it takes effect on the next
// discover. `--executor E` pins the layers on E (LayerReport::pinned: later
// discovers keep it); null unpins and clears. Throws PipelineError, leaving
// `r` unchanged, when nothing matches ("no layer matches 'X'; closest layer
// ids: ..."), when the request edits nothing, when a tolerance is negative
// or not finite, or when E's result on a layer is an error and !force.
// `notes` (if given) gets a line per layer whose E was never tested.
std::vector<std::string> apply_edit(ModelReport& r, const EditRequest& req, std::vector<std::string>* notes = nullptr);

// "no layer matches 'X'; closest layer ids: a, b, c" (up to five).
std::string no_layer_message(const ModelReport& r, const std::string& pattern);

// `edit --list [FILTER]`: the per-layer status table of the layers whose id
// contains `filter` (case-insensitive; empty = all) and a closing
// "Total: N layer(s)" line ("(filtered from M)" with a filter). When nothing
// matches: "No layers match 'X'." and the first ten ids.
std::string render_list(const ModelReport& r, const std::string& filter);

}  // namespace torq::pipeline
