#include "coordinator/gen_config/repro_command.h"

#include <filesystem>
#include <iostream>

#include <onnx/onnx_pb.h>

#include "pipeline/base/config_dir.h"
#include "pipeline/model/model_import.h"
#include "pipeline/report/report.h"
#include "pipeline/model/subgraph.h"
#include "worker/runner/job_runner.h"
#include "worker/toolchain/repro_bundle.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;

namespace {

// What the report says of `layer` on `e` (the bundle's README).
void describe_result(const LayerReport& layer, Executor e, const ModelReport& report,
                     toolchain::ReproSpec* s) {
  s->tolerance = layer.tolerance.value_or(report.default_tolerance);
  auto it = layer.results.find(e);
  if (it == layer.results.end()) return;
  const ExecResult& r = it->second;
  s->status = status_name(r.status);
  s->tolerance = r.tolerance_used;
  s->toolchain_identity = r.toolchain;
  if (r.status == Status::kError) {
    s->failure_type = r.error_class;
    s->failure_summary = r.error_message;
  } else {
    s->max_abs = r.max_abs;
    s->max_rel = r.max_rel;
  }
}

toolchain::ToolchainConfig steps_of(const ReproOptions& o) {
  // A sim result is reproduced by the stand-in of the tools, whose results
  // equal the sim backend's.
  return toolchain::ToolchainConfig::load(o.backend == "toolchain" ? o.toolchain_file
                                                                   : base::config_dir() + "/toolchains/standin.yaml");
}

}  // namespace

int run_repro(const ReproOptions& o, std::ostream& out, std::ostream& err) {
  try {
    const std::optional<Executor> executor = executor_from_name(o.executor);
    if (!executor) throw PipelineError("--executor '" + o.executor + "': expected nss, css or host");
    require_model_file(o.model);
    ImportOptions io;
    io.convert_bf16 = o.convert_bf16;
    io.rounding = o.rounding;
    const auto model = ImportedModel::from_file(o.model, io);
    const std::string rpath = report_path(o.output_dir, model->name());
    if (!fs::exists(rpath))
      throw PipelineError("no report for " + model->name() + " in " + o.output_dir + " (" + rpath +
                          "); run discover first with the same variant flags");
    const ModelReport report = read_report_file(rpath);
    const uint32_t index = resolve_layer(*model, o.layer, "LAYER");
    if (index >= report.layers.size())
      throw PipelineError(rpath + ": has " + std::to_string(report.layers.size()) + " layers, not layer " +
                          std::to_string(index) + " (made from another model?)");
    const LayerReport& layer = report.layers[index];

    toolchain::ReproSpec s;
    s.model_name = model->name();
    s.layer_id = layer.info.id;
    s.layer_index = static_cast<int>(index);
    s.executor = *executor;
    s.bf16_rne = o.rounding == engine::Rounding::kNearestEven;
    s.variant = o.convert_bf16 ? std::string("bf16, ") + (s.bf16_rne ? "round-to-nearest-even" : "truncation")
                               : o.variant_extra.empty() ? "fp32" : o.variant_extra;
    s.backend = o.backend;
    s.command = o.command;
    s.toolchain = steps_of(o);
    describe_result(layer, *executor, report, &s);
    s.dir = o.out_dir.empty() ? o.output_dir + "/repro/" + layer.info.id + "_" + o.executor : o.out_dir;

    // The layer's sub-model, inputs and reference, as its discover job had them.
    JobSpec job;
    job.id = "repro/" + layer.info.id + "/" + o.executor;
    job.model_hash = model->hash();
    job.first_node = job.last_node = index;
    job.executor = *executor;
    job.tolerance = s.tolerance;
    job.seed = o.seed;
    job.random_inputs = o.random_inputs;
    job.input_lo = o.input_lo;
    job.input_hi = o.input_hi;
    job.bf16_rne = s.bf16_rne;
    runner::JobRunner runner([&](const std::string&) { return model->bytes(); }, "repro", nullptr);
    const runner::JobRunner::LayerCase c = runner.layer_case(job);
    const auto files = toolchain::write_repro_bundle(s, c);
    out << "repro bundle: " << s.dir << " (" << files.size() << " files; " << s.layer_id << " on " << o.executor
        << (s.status.empty() ? ", untested in the report" : ", " + s.status + " in the report") << ")\n"
        << "  run it: sh " << s.dir << "/run.sh   (README.md says what it checks)\n";
    return 0;
  } catch (const std::exception& e) {
    err << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace torq::coordinator
