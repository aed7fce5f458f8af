// stream_unit_report (unit_run.h): a unit's report written as the store is
// scanned, one layer at a time.
#include <fstream>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "coordinator/fleet/unit_run.h"
#include "pipeline/model/mlir.h"
#include "pipeline/plan/recommend.h"
#include "pipeline/report/atomic_file.h"
#include "pipeline/report/report_stream.h"

namespace torq::coordinator {

using namespace ::torq::pipeline;  // NOLINT(google-build-using-namespace)

namespace {

// Each layer's MLIR location in the torch-mlir import we emit (written to
// export_dir when given), without a LayerReport per layer.
std::vector<std::string> layer_locations(const RunUnit& u, const std::string& export_dir, const LogFn& log) {
  const std::string mlir = emit_torch_mlir(u.model->proto());
  if (!export_dir.empty()) {
    const std::string path = export_dir + "/" + u.model->name() + ".torch.mlir";
    write_file_atomic(path, mlir);
  }
  MlirMapping mm = map_layer_locations(mlir, u.model->proto());
  for (const auto& p : mm.problems) log(u.label + " MLIR: " + p);
  return std::move(mm.locations);  // layers beyond them keep their own (as set_layer_locations)
}

// Whether no two layers share an id (a report keeps one op per id, which
// only the whole report can merge as report_to_json does).
bool unique_ids(const std::vector<LayerInfo>& layers) {
  std::unordered_set<std::string_view> seen;
  seen.reserve(layers.size());
  for (const auto& l : layers)
    if (!seen.insert(l.id).second) return false;
  return true;
}

}  // namespace

ReportSummary stream_unit_report(const RunUnit& u, const Store& store, const std::string& run, const Tolerance& tol,
                                 const std::string& export_dir, const LogFn& log) {
  if (u.range || u.fixed_assignment || !unique_ids(u.model->layers())) {
    ModelReport rep = unit_report(u, store, run, tol, export_dir, log);
    if (!export_dir.empty()) write_report_files(rep, export_dir);
    return summarize(rep);
  }
  const std::vector<LayerInfo>& infos = u.model->layers();
  std::vector<std::string> locations = layer_locations(u, export_dir, log);
  // Dedup copies take their source's results (read once per source).
  std::unordered_map<int, int> source_of;
  std::map<int, std::vector<ExecResult>> source_results;
  for (const auto& [dup, src] : u.planner->dedup_of()) {
    source_of[dup] = src;
    if (!source_results.count(src)) source_results[src] = store.layer_results(run, u.key(), src);
  }
  ModelReport head;
  head.model_name = u.model->name();
  head.default_tolerance = tol;
  ReportStreamWriter writer(head, export_dir);
  size_t next = 0;
  // Layer `i` with `results` (moved from), its dedup copies and recommendation, to the writer.
  auto emit = [&](size_t i, std::vector<ExecResult>* results) {
    LayerReport l;
    l.info = infos[i];
    if (i < locations.size()) l.info.mlir_location = std::move(locations[i]);
    if (results)
      for (auto& r : *results) l.results[r.executor] = std::move(r);
    if (auto s = source_of.find(static_cast<int>(l.info.index)); s != source_of.end()) {
      l.dedup_of = infos[static_cast<size_t>(s->second)].id;
      for (ExecResult r : source_results[s->second]) {
        r.dedup_of = l.dedup_of;
        l.results[r.executor] = std::move(r);
      }
    }
    l.recommended = recommend(l, u.recommend_by_timing);
    writer.add(l);
  };
  store.for_each_layer_results(run, u.key(), [&](int layer, std::vector<ExecResult> results) {
    if (layer < 0 || static_cast<size_t>(layer) >= infos.size()) return;  // not a layer of this model
    for (; next < static_cast<size_t>(layer); ++next) emit(next, nullptr);
    emit(next++, &results);
  });
  for (; next < infos.size(); ++next) emit(next, nullptr);
  return writer.finish();
}

}  // namespace torq::coordinator
