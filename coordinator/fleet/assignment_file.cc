#include "coordinator/fleet/assignment_file.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "pipeline/core/json_limits.h"
#include "pipeline/model/mlir.h"
#include "pipeline/report/report.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;
using json = nlohmann::ordered_json;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw PipelineError(path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json parse_json(const std::string& path) {
  try {
    const std::string text = read_text(path);
    check_json_depth(text, path);
    return json::parse(text);
  } catch (const json::exception& e) {
    throw PipelineError(path + ": not JSON: " + e.what());
  }
}

// From the report (source of truth): by layer id; layers it lacks: the
// compiler decides. Regenerates the compiler JSON.
}  // namespace

AssignmentFile assignment_from_report(const std::string& rpath, const std::string& cpath, const std::vector<LayerInfo>& layers) {
  AssignmentFile p;
  p.source = rpath;
  p.from_report = true;
  p.report = parse_json(rpath);
  const ModelReport rep = report_from_json(p.report.dump(), rpath);
  p.rule.tolerance = rep.default_tolerance;
  read_relaxed_tolerance(p.report, rpath, &p.rule);
  std::map<std::string, const LayerReport*> by_id;
  for (const auto& l : rep.layers) by_id[l.info.id] = &l;
  size_t matched = 0;
  for (const auto& info : layers) {
    auto it = by_id.find(info.id);
    const LayerReport* l = it == by_id.end() ? nullptr : it->second;
    matched += l != nullptr;
    p.assignment.push_back(l ? l->recommended : std::nullopt);
    const bool ok = l && l->recommended && l->results.count(*l->recommended) &&
                    l->results.at(*l->recommended).status == Status::kSuccess;
    p.passed_alone.push_back(ok ? 1 : 0);
  }
  if (matched == 0 && !rep.layers.empty())
    throw PipelineError(rpath + ": none of its " + std::to_string(rep.layers.size()) +
                        " layer ids is a layer of this model (is it the report of another model?)");
  if (!cpath.empty()) write_json_atomic(cpath, compiler_json(rep));
  return p;
}

// From a compiler JSON alone, used as it is: op_assignments by "line:col"
// of the model's torch-mlir import (the one discover wrote, else emitted).
AssignmentFile assignment_from_compiler(const std::string& cpath, const std::string& mlir_path, const onnx::ModelProto& proto,
                        const std::vector<LayerInfo>& layers) {
  AssignmentFile p;
  p.source = cpath;
  const json c = parse_json(cpath);
  if (!c.is_object() || !c.contains("op_assignments") || !c["op_assignments"].is_object())
    throw PipelineError(cpath + ": not a compiler JSON (no \"op_assignments\" object)");
  read_relaxed_tolerance(c, cpath, &p.rule);
  const std::string mlir = !mlir_path.empty() && fs::exists(mlir_path) ? read_text(mlir_path) : emit_torch_mlir(proto);
  const MlirMapping mm = map_layer_locations(mlir, proto);
  for (size_t i = 0; i < layers.size(); ++i) {
    std::optional<Executor> e;
    const std::string loc = i < mm.locations.size() ? mm.locations[i] : "";
    if (!loc.empty() && c["op_assignments"].contains(loc)) {
      const json& a = c["op_assignments"][loc];
      const std::string name = a.is_object() && a.contains("executor") && a["executor"].is_string()
                                   ? a["executor"].get<std::string>() : "";
      if (name != "null" && !name.empty()) {
        e = executor_from_name(name);
        if (!e) throw PipelineError(cpath + ": op_assignments." + loc + ".executor: unknown executor '" + name + "'");
      }
    }
    p.assignment.push_back(e);
    p.passed_alone.push_back(0);  // no per-layer results: no bisect
  }
  return p;
}

AssignmentFile assignment_from_file(const std::string& path, const onnx::ModelProto& proto,
                                    const std::vector<LayerInfo>& layers) {
  const json j = parse_json(path);
  if (j.is_object() && j.contains("ops")) return assignment_from_report(path, "", layers);
  return assignment_from_compiler(path, "", proto, layers);
}

}  // namespace torq::coordinator
