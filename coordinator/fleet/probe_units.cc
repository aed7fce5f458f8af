#include "coordinator/fleet/probe_units.h"

#include "coordinator/fleet/local_fleet.h"
#include "pipeline/model/model_import.h"
#include "pipeline/probe/probe_model.h"

namespace torq::coordinator {

using namespace pipeline;  // NOLINT(google-build-using-namespace)
using pipeline::probe::ProbePoint;
using pipeline::probe::ProbeRow;

bool infrastructure_class(const std::string& c) {
  return c == "crash" || c == "timeout" || c == "invalid_job" || c == "fetch" || c == "target" || c == "reference" ||
         c == "board" || c.rfind("infra", 0) == 0;
}

bool infrastructure_error(const ExecResult& r) {
  if (r.status != Status::kError) return false;
  if (infrastructure_class(r.error_class)) return true;
  // A tool step that timed out or was killed keeps its step's class
  // (compile) on the toolchain backend; a job that could not be staged is a
  // runtime error of the worker's disk: neither says the op is refused.
  for (const char* m : {" timed out after ", " killed by ", "cannot stage the job", "cannot create a scratch"})
    if (r.error_message.find(m) != std::string::npos) return true;
  return false;
}

namespace {

// The point's model imported (into the cache unless `cache_dir` is empty:
// a second import of a model already there), or why it cannot be.
std::unique_ptr<ImportedModel> import_point(const ProbePoint& p, const std::string& bytes,
                                            const std::string& cache_dir, std::string* invalid) {
  ImportOptions io;
  io.convert_bf16 = p.dtype == "bf16";
  if (!cache_dir.empty()) io.copy_to = cache_import_path(cache_dir);
  try {
    auto m = ImportedModel::from_bytes(bytes, p.id, io);
    if (!cache_dir.empty()) adopt_cache_file(cache_dir, m->hash());
    return m;
  } catch (const std::exception& e) {
    if (!cache_dir.empty()) adopt_cache_file(cache_dir, "");
    *invalid = std::string("the import refuses it: ") + e.what();
    return nullptr;
  }
}

}  // namespace

namespace {

// One unit per (point, executor), its results under "<point id>.<executor>".
RunUnit point_unit(const ProbePoint& p, std::unique_ptr<ImportedModel> model, const PlanOptions& plan, Executor e) {
  RunUnit u;
  u.label = p.id;
  u.model = std::move(model);
  u.plan = plan;
  u.plan.executors = {e};
  u.plan.case_prefix = p.id;
  u.plan.job_template.seed = p.seed;
  u.plan.job_template.result_key = p.id + "." + executor_name(e);
  u.drop_weights_after_planning = true;
  return u;
}

struct Built {
  size_t row;
  std::string bytes;
  std::unique_ptr<ImportedModel> model;
};

// The units of a block of built points, executor by executor: the jobs
// served one after the other are of different models, so the lanes of a
// worker (which load and run a model's reference once, the others waiting)
// work on different models at once.
void add_block(std::vector<Built>& block, const PlanOptions& plan, ProbeUnits& pu) {
  for (size_t k = 0; k < plan.executors.size(); ++k)
    for (auto& b : block) {
      const ProbePoint& p = pu.rows[b.row].point;
      std::string invalid;
      auto model = k == 0 ? std::move(b.model) : import_point(p, b.bytes, "", &invalid);
      if (!model) throw PipelineError(p.id + ": a second import failed: " + invalid);
      pu.units.push_back(point_unit(p, std::move(model), plan, plan.executors[k]));
      pu.row_of_unit.push_back(b.row);
    }
  block.clear();
}

}  // namespace

ProbeUnits make_probe_units(const std::vector<ProbePoint>& points, const PlanOptions& plan,
                            const std::string& cache_dir, const LogFn& log) {
  constexpr size_t kBlock = 2;
  ProbeUnits pu;
  pu.rows.reserve(points.size());
  std::vector<Built> block;
  for (const auto& p : points) {
    ProbeRow row;
    row.point = p;
    probe::BuiltPoint b = probe::build_point(p);
    row.features = b.features;
    row.invalid = b.invalid;
    std::unique_ptr<ImportedModel> model;
    if (row.invalid.empty()) model = import_point(p, b.bytes, cache_dir, &row.invalid);
    pu.rows.push_back(std::move(row));
    if (pu.rows.size() % 500 == 0)
      log("probe: built " + std::to_string(pu.rows.size()) + "/" + std::to_string(points.size()) + " points");
    if (!model) continue;
    block.push_back({pu.rows.size() - 1, std::move(b.bytes), std::move(model)});
    if (block.size() == kBlock) add_block(block, plan, pu);
  }
  add_block(block, plan, pu);
  return pu;
}

void read_probe_outcomes(ProbeUnits& pu, const Store& store, const std::string& run) {
  for (size_t i : pu.row_of_unit) pu.rows[i].outcomes.clear();
  for (size_t i = 0; i < pu.units.size(); ++i) {
    ProbeRow& row = pu.rows[pu.row_of_unit[i]];
    const ModelReport rep = unit_layers_report(pu.units[i], store, run, pu.units[i].plan.job_template.tolerance);
    // The point's layer: its op's (an int8 point's Q/DQ belong to it).
    const LayerReport* layer = nullptr;
    for (const auto& l : rep.layers)
      if (l.info.op_type == row.point.op) layer = &l;
    if (!layer || !row.invalid.empty()) continue;
    // The host's fp32 reference failing says the point is no valid model,
    // nothing of any executor: the point is invalid, never learned from.
    bool reference_failed = !layer->results.empty();
    for (const auto& [e, r] : layer->results) reference_failed = reference_failed && r.error_class == "reference";
    if (reference_failed) {
      row.invalid = "the reference (host fp32) fails: " + layer->results.begin()->second.error_message;
      continue;
    }
    for (const auto& [e, r] : layer->results) {
      probe::ProbeOutcome o;
      o.executor = e;
      o.status = r.status;
      o.error_class = r.error_class;
      o.error_message = r.error_message;
      o.runtime_ms = r.runtime_ms;
      o.host_ms = r.host_ms;
      o.infrastructure = infrastructure_error(r);
      row.outcomes.push_back(o);
    }
  }
}

}  // namespace torq::coordinator
