// JSON form of the run history's records (run_history.h). Unknown figures
// (-1, NaN) are written as null and read back as -1; a record missing a
// required field or holding a wrong type is a PipelineError.
#include <cmath>

#include "pipeline/run_history.h"

namespace torq::pipeline::history {

namespace {

using nlohmann::json;

json num(double v) { return std::isfinite(v) && v != -1 ? json(v) : json(nullptr); }

double num_of(const json& j, const char* k, double unknown = -1) {
  if (!j.contains(k) || j[k].is_null()) return unknown;
  if (!j[k].is_number()) throw PipelineError(std::string("field '") + k + "' is not a number");
  return j[k].get<double>();
}

std::string str_of(const json& j, const char* k) {
  if (!j.contains(k) || j[k].is_null()) return "";
  if (!j[k].is_string()) throw PipelineError(std::string("field '") + k + "' is not a string");
  return j[k].get<std::string>();
}

Executor executor_of(const std::string& name) {
  const auto e = executor_from_name(name);
  if (!e) throw PipelineError("unknown executor '" + name + "'");
  return *e;
}

json layer_json(const LayerRecord& l) {
  json ex = json::object();
  for (const auto& [e, r] : l.executors) {
    json x = {{"status", status_name(r.status)}, {"pcc", num(r.pcc)}, {"ms", num(r.ms)}};
    if (!r.error.empty()) x["error"] = r.error;
    ex[executor_name(e)] = x;
  }
  return {{"id", l.id},
          {"op", l.op},
          {"recommended", l.recommended ? json(executor_name(*l.recommended)) : json(nullptr)},
          {"executors", ex}};
}

LayerRecord layer_of(const json& j) {
  LayerRecord l;
  l.id = str_of(j, "id");
  l.op = str_of(j, "op");
  if (const std::string rec = str_of(j, "recommended"); !rec.empty()) l.recommended = executor_of(rec);
  if (j.contains("executors") && j["executors"].is_object())
    for (const auto& [name, x] : j["executors"].items()) {
      ExecRecord r;
      const auto s = status_from_name(str_of(x, "status"));
      if (!s) throw PipelineError("layer " + l.id + ": bad status of " + name);
      r.status = *s;
      r.error = str_of(x, "error");
      r.pcc = num_of(x, "pcc");
      r.ms = num_of(x, "ms");
      l.executors[executor_of(name)] = r;
    }
  return l;
}

}  // namespace

json to_json(const TestRecord& t) {
  json layers = json::array();
  for (const auto& l : t.layers) layers.push_back(layer_json(l));
  return {{"id", t.id},
          {"model", t.model},
          {"variant", t.variant},
          {"target", t.target},
          {"mode", t.mode},
          {"outcome", t.outcome},
          {"bringup", t.bringup},
          {"status", t.status},
          {"message", t.message},
          {"failed_step", t.failed_step},
          {"ran", t.ran},
          {"pcc", num(t.pcc)},
          {"required_pcc", t.required_pcc},
          {"device_ms", num(t.device_ms)},
          {"wall_s", t.wall_s},
          {"layers", layers}};
}

TestRecord test_from_json(const json& j) {
  if (!j.is_object() || str_of(j, "id").empty()) throw PipelineError("a test record without an id");
  TestRecord t;
  t.id = str_of(j, "id");
  t.model = str_of(j, "model");
  t.variant = str_of(j, "variant");
  t.target = str_of(j, "target");
  t.mode = str_of(j, "mode");
  t.outcome = str_of(j, "outcome");
  t.bringup = str_of(j, "bringup");
  t.status = str_of(j, "status");
  t.message = str_of(j, "message");
  t.failed_step = str_of(j, "failed_step");
  t.ran = j.value("ran", false);
  t.pcc = num_of(j, "pcc");
  t.required_pcc = num_of(j, "required_pcc", 0.99);
  t.device_ms = num_of(j, "device_ms");
  t.wall_s = num_of(j, "wall_s", 0);
  if (j.contains("layers") && j["layers"].is_array())
    for (const auto& l : j["layers"]) t.layers.push_back(layer_of(l));
  return t;
}

json to_json(const RunRecord& r) {
  return {{"seq", r.seq},
          {"spec", r.spec},
          {"run_id", r.run_id},
          {"started_utc", r.started_utc},
          {"finished_utc", r.finished_utc},
          {"k", r.k},
          {"m", r.m},
          {"preset", r.preset},
          {"last_failed", r.last_failed},
          {"counts", r.counts},
          {"tests", r.test_ids}};
}

RunRecord run_from_json(const json& j) {
  if (!j.is_object() || !j.contains("seq") || !j["seq"].is_number_integer())
    throw PipelineError("a run record without a seq");
  RunRecord r;
  r.seq = j["seq"].get<int>();
  r.spec = str_of(j, "spec");
  r.run_id = str_of(j, "run_id");
  r.started_utc = str_of(j, "started_utc");
  r.finished_utc = str_of(j, "finished_utc");
  r.k = str_of(j, "k");
  r.m = str_of(j, "m");
  r.preset = str_of(j, "preset");
  r.last_failed = j.value("last_failed", false);
  if (j.contains("counts") && j["counts"].is_object())
    for (const auto& [o, n] : j["counts"].items()) r.counts[o] = n.get<int>();
  if (j.contains("tests") && j["tests"].is_array())
    for (const auto& id : j["tests"]) r.test_ids.push_back(id.get<std::string>());
  return r;
}

}  // namespace torq::pipeline::history
