// Strict parsing of the minimal fleet spec (see fleet_spec.h).
#include "coordinator/fleet_spec.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "worker/engine/error.h"
#include "worker/engine/yaml_strict.h"

namespace torq::coordinator {

using pipeline::Executor;
using pipeline::PipelineError;

FleetSpec parse_fleet_spec(const std::string& text, const std::string& path) {
  FleetSpec spec;
  try {
    engine::YamlReader y(path);
    const YAML::Node root = engine::yaml_parse(text, path);
    if (!root || root.IsNull()) throw PipelineError(path + ": empty spec (expected a mapping with `models`)");
    y.expect_map(root, {"models", "executors", "target", "options"}, "the spec");
    if (!root["models"]) y.fail(root, "the spec has no `models` list");
    const std::filesystem::path base = std::filesystem::path(path).parent_path();
    for (const auto& m : y.seq(root["models"], "models")) {
      const std::string p = y.str(m, "a model path");
      if (p.empty()) y.fail(m, "empty model path");
      spec.models.push_back(std::filesystem::path(p).is_absolute() ? p : (base / p).string());
    }
    if (spec.models.empty()) y.fail(root["models"], "`models` is empty");
    if (root["executors"]) {
      spec.executors.clear();
      std::set<Executor> seen;
      for (const auto& e : y.seq(root["executors"], "executors")) {
        const std::string name = y.choice(e, {"nss", "css", "host"}, "an executor");
        const Executor ex = *pipeline::executor_from_name(name);
        if (!seen.insert(ex).second) y.fail(e, "executor '" + name + "' listed twice");
        spec.executors.push_back(ex);
      }
      if (spec.executors.empty()) y.fail(root["executors"], "`executors` is empty");
    }
    if (root["target"]) {
      spec.target = y.str(root["target"], "target");
      if (spec.target.empty()) y.fail(root["target"], "empty target");
    }
    if (const YAML::Node o = root["options"]) {
      y.expect_map(o, {"auto_convert_bf16", "dedup", "skip_mode", "timing_runs"}, "options");
      if (o["auto_convert_bf16"]) spec.auto_convert_bf16 = y.boolean(o["auto_convert_bf16"], "auto_convert_bf16");
      if (o["dedup"]) spec.dedup = y.boolean(o["dedup"], "dedup");
      if (o["skip_mode"]) spec.skip_mode = y.boolean(o["skip_mode"], "skip_mode");
      if (o["timing_runs"]) {
        const int64_t n = y.integer(o["timing_runs"], "timing_runs");
        if (n < 1 || n > 1000) y.fail(o["timing_runs"], "timing_runs must be in 1..1000, got " + std::to_string(n));
        spec.timing_runs = static_cast<uint32_t>(n);
      }
    }
  } catch (const engine::EngineError& e) {
    throw PipelineError(e.what());
  }
  return spec;
}

FleetSpec load_fleet_spec(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw PipelineError(path + ": cannot open spec");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_fleet_spec(ss.str(), path);
}

}  // namespace torq::coordinator
