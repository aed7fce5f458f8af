// JSON form of the run history's records (run_history.h). Unknown figures
// (-1, NaN) are written as null and read back as -1; a record missing a
// required field or holding a wrong type is a PipelineError.
#include <cmath>
#include <utility>
#include <vector>

#include "pipeline/store/run_history.h"

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

// The string fields of the records, by JSON key.
template <class Record>
using Strings = std::vector<std::pair<const char*, std::string Record::*>>;

const Strings<TestRecord>& test_strings() {
  static const Strings<TestRecord> f = {{"id", &TestRecord::id},           {"model", &TestRecord::model},
                                        {"variant", &TestRecord::variant}, {"target", &TestRecord::target},
                                        {"mode", &TestRecord::mode},       {"outcome", &TestRecord::outcome},
                                        {"bringup", &TestRecord::bringup}, {"status", &TestRecord::status},
                                        {"message", &TestRecord::message}, {"failed_step", &TestRecord::failed_step}};
  return f;
}

const Strings<RunRecord>& run_strings() {
  static const Strings<RunRecord> f = {{"spec", &RunRecord::spec},
                                       {"run_id", &RunRecord::run_id},
                                       {"started_utc", &RunRecord::started_utc},
                                       {"finished_utc", &RunRecord::finished_utc},
                                       {"k", &RunRecord::k},
                                       {"m", &RunRecord::m},
                                       {"preset", &RunRecord::preset}};
  return f;
}

template <class Record>
void write_strings(const Record& r, const Strings<Record>& fields, json* j) {
  for (const auto& [key, member] : fields) (*j)[key] = r.*member;
}

template <class Record>
void read_strings(const json& j, const Strings<Record>& fields, Record* r) {
  for (const auto& [key, member] : fields) r->*member = str_of(j, key);
}

}  // namespace

json to_json(const TestRecord& t) {
  json layers = json::array();
  for (const auto& l : t.layers) layers.push_back(layer_json(l));
  json j = json::object();
  write_strings(t, test_strings(), &j);
  j["ran"] = t.ran;
  j["pcc"] = num(t.pcc);
  j["required_pcc"] = t.required_pcc;
  j["device_ms"] = num(t.device_ms);
  j["wall_s"] = t.wall_s;
  j["layers"] = layers;
  return j;
}

TestRecord test_from_json(const json& j) {
  if (!j.is_object() || str_of(j, "id").empty()) throw PipelineError("a test record without an id");
  TestRecord t;
  read_strings(j, test_strings(), &t);
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
  json j = {{"seq", r.seq},       {"last_failed", r.last_failed},      {"counts", r.counts},
            {"tests", r.test_ids}, {"nss_coverage", num(r.nss_coverage)}};
  write_strings(r, run_strings(), &j);
  return j;
}

RunRecord run_from_json(const json& j) {
  if (!j.is_object() || !j.contains("seq") || !j["seq"].is_number_integer())
    throw PipelineError("a run record without a seq");
  RunRecord r;
  r.seq = j["seq"].get<int>();
  read_strings(j, run_strings(), &r);
  r.last_failed = j.value("last_failed", false);
  r.nss_coverage = num_of(j, "nss_coverage");
  if (j.contains("counts") && j["counts"].is_object())
    for (const auto& [o, n] : j["counts"].items()) r.counts[o] = n.get<int>();
  if (j.contains("tests") && j["tests"].is_array())
    for (const auto& id : j["tests"]) r.test_ids.push_back(id.get<std::string>());
  return r;
}

}  // namespace torq::pipeline::history
