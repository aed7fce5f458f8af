#include "coordinator/fleet/assignment_file.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
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

namespace {

// The compiler JSON, parsed with every object's keys unique (nlohmann keeps
// the last of two equal keys: a location given twice would lose one).
json parse_compiler_json(const std::string& path) {
  const std::string text = read_text(path);
  check_json_depth(text, path);
  std::vector<std::set<std::string>> keys;  // of each object being read
  std::string duplicate;
  auto unique_keys = [&](int /*depth*/, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) keys.emplace_back();
    else if (ev == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (ev == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
             duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json j;
  try {
    j = json::parse(text, unique_keys);
  } catch (const json::exception& e) {
    throw PipelineError(path + ": not JSON: " + e.what());
  }
  if (!duplicate.empty()) throw PipelineError(path + ": key \"" + duplicate + "\" is given twice");
  return j;
}

// "<line>:<col>", both positive decimal integers without sign or leading zero.
bool is_line_col(const std::string& k) {
  const size_t colon = k.find(':');
  if (colon == std::string::npos) return false;
  auto positive = [](const std::string& s) {
    if (s.empty() || s.size() > 9 || s[0] == '0') return false;
    for (const char c : s)
      if (c < '0' || c > '9') return false;
    return true;
  };
  return positive(k.substr(0, colon)) && positive(k.substr(colon + 1));
}

// Whether a compiler JSON's model_name `named` is the model `running`: its
// name, or the model it was cut or quantized from (the real tool names a
// `<m>_quant` model's files after it but writes model_name "<m>").
bool names_model(const std::string& named, const std::string& running) {
  if (named == running) return true;
  for (const char* derived : {"_quant", "_subgraph_"})
    if (running.rfind(named + derived, 0) == 0) return true;
  return false;
}

std::string shown(const json& v) {
  const std::string d = v.dump();
  return d.size() > 60 ? d.substr(0, 57) + "..." : d;
}

}  // namespace

// From a compiler JSON alone, used as it is: op_assignments by "line:col"
// of the model's torch-mlir import (the one discover wrote, else emitted).
// Every key and value is checked, not only those of the model's layers.
AssignmentFile assignment_from_compiler(const std::string& cpath, const std::string& mlir_path, const onnx::ModelProto& proto,
                                        const std::string& model_name, const std::vector<LayerInfo>& layers) {
  AssignmentFile p;
  p.source = cpath;
  const json c = parse_compiler_json(cpath);
  if (!c.is_object() || !c.contains("op_assignments") || !c["op_assignments"].is_object())
    throw PipelineError(cpath + ": not a compiler JSON (no \"op_assignments\" object)");
  if (!c.contains("model_name") || !c["model_name"].is_string())
    throw PipelineError(cpath + ": model_name: expected the name of the model being run, \"" + model_name + "\", got " +
                        (c.contains("model_name") ? shown(c["model_name"]) : "none"));
  if (!names_model(c["model_name"].get<std::string>(), model_name))
    throw PipelineError(cpath + ": model_name: \"" + c["model_name"].get<std::string>() +
                        "\" is not the model being run, \"" + model_name + "\" (is it the compiler JSON of another model?)");
  read_relaxed_tolerance(c, cpath, &p.rule);
  const bool own_mlir = !mlir_path.empty() && fs::exists(mlir_path);
  const std::string mlir = own_mlir ? read_text(mlir_path) : emit_torch_mlir(proto);
  const std::string import_name = own_mlir ? mlir_path : "the torch-mlir import of " + model_name;
  const MlirMapping mm = map_layer_locations(mlir, proto);
  std::map<std::string, size_t> layer_at;  // "line:col" → layer index
  for (size_t i = 0; i < layers.size() && i < mm.locations.size(); ++i)
    if (!mm.locations[i].empty()) layer_at.emplace(mm.locations[i], i);
  std::map<std::string, std::string> op_at;  // "line:col" → op type, of every operator
  for (const MlirOperator& op : mlir_operators(mlir, false))
    op_at.emplace(std::to_string(op.line) + ":" + std::to_string(op.col), op.type);
  const std::string example = layer_at.empty() ? "" : " (e.g. \"" + layer_at.begin()->first + "\")";

  std::vector<std::optional<Executor>> by_layer(layers.size());
  for (const auto& [loc, a] : c["op_assignments"].items()) {
    const std::string key = cpath + ": op_assignments key \"" + loc + "\"";
    if (!is_line_col(loc))
      throw PipelineError(key + ": expected \"<line>:<col>\" with positive integers, the location of an op of " +
                          import_name + example);
    const auto layer = layer_at.find(loc);
    if (layer == layer_at.end()) {
      const auto op = op_at.find(loc);
      throw PipelineError(key + (op == op_at.end()
                                     ? ": no op of " + import_name + " is at this line:col"
                                     : ": the " + op->second + " operator there is not a layer and takes no executor") +
                          "; expected the location of one of its " + std::to_string(layer_at.size()) + " layers" +
                          example);
    }
    const std::string at = cpath + ": op_assignments.\"" + loc + "\"";
    if (!a.is_object() || !a.contains("executor"))
      throw PipelineError(at + ": expected {\"executor\": \"nss\" | \"css\" | \"host\" | null}, got " + shown(a));
    const json& e = a["executor"];
    // null, and the string "null" the seed's `edit --executor null` wrote: no assignment.
    if (e.is_null() || (e.is_string() && e.get<std::string>() == "null")) continue;
    const std::optional<Executor> ex = e.is_string() ? executor_from_name(e.get<std::string>()) : std::nullopt;
    if (!ex)
      throw PipelineError(at + ".executor: " + shown(e) +
                          " is not an executor; expected \"nss\", \"css\", \"host\" or null (the compiler decides)");
    by_layer[layer->second] = ex;
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    p.assignment.push_back(by_layer[i]);
    p.passed_alone.push_back(0);  // no per-layer results: no bisect
  }
  return p;
}

AssignmentFile assignment_from_file(const std::string& path, const onnx::ModelProto& proto,
                                    const std::string& model_name, const std::vector<LayerInfo>& layers) {
  const json j = parse_json(path);
  if (j.is_object() && j.contains("ops")) return assignment_from_report(path, "", layers);
  return assignment_from_compiler(path, "", proto, model_name, layers);
}

}  // namespace torq::coordinator
