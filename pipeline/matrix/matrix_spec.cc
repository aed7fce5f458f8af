// Matrix spec parsing (matrix.h, parse_spec / load_spec): strict YAML into a
// typed Spec. Relative paths resolve against the spec's directory; model
// globs expand now with glob(3) (each glob's matches sorted, entries kept in
// list order, identical path+name pairs deduplicated); a glob matching no
// file, a missing profile or test_config file, a duplicate name, a bad enum
// or type, a number out of its range, an unknown key, a second YAML document
// or an invalid preset expression is a PipelineError "file:line:col:
// message". A target's profiles and the probe spec are parsed too (their
// errors carry their own file:line:col).
#include <algorithm>
#include <cmath>
#include <glob.h>

#include <filesystem>
#include <limits>
#include <set>

#include "pipeline/base/file_bytes.h"
#include "pipeline/matrix/matrix.h"
#include "pipeline/matrix/matrix_internal.h"
#include "pipeline/base/error.h"
#include "pipeline/base/yaml_strict.h"
#include "pipeline/probe/probe_catalog.h"
#include "pipeline/probe/probe_spec.h"

namespace torq::pipeline::matrix {
namespace {

namespace fs = std::filesystem;
using engine::YamlReader;

constexpr double kInf = std::numeric_limits<double>::infinity();
// A variant's batch: the model's inputs are this many times larger.
constexpr int64_t kMaxBatch = 4096;
// Timing runs of one job: each is a full run of the compiled layer.
constexpr int64_t kMaxTimingRuns = 10000;

// As ImportedModel names models: the file stem; "model.onnx" files (one
// model per directory, as in ../shared/models) take their directory's name.
std::string default_model_name(const std::string& file) {
  const fs::path p(file);
  const std::string stem = p.stem().string();
  if (stem == "model" && p.has_parent_path() && !p.parent_path().filename().empty())
    return p.parent_path().filename().string();
  return stem;
}

class SpecParser {
 public:
  SpecParser(const std::string& path) : r_(path), dir_(fs::absolute(path).parent_path()) {}

  Spec parse(const YAML::Node& root) {
    Spec s;
    s.path = fs::absolute(r_.file()).lexically_normal().string();
    if (!root.IsDefined() || root.IsNull()) r_.fail(root, "spec is empty: it needs at least 'models'");
    r_.expect_map(root, {"models", "variants", "executors", "targets", "modes", "test_config", "presets", "options",
                         "probe"},
                  "spec");
    if (root["probe"] && root["models"])
      r_.fail(root["probe"], "a spec with 'probe' runs a probe, not models: put the models in a spec of their own");
    if (!root["models"] && !root["probe"]) r_.fail(root, "spec: missing required key 'models' (or 'probe')");
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (key == "models")
        s.models = models(v);
      else if (key == "variants")
        s.variants = variants(v);
      else if (key == "executors")
        s.executors = executors(v);
      else if (key == "targets")
        s.targets = targets(v);
      else if (key == "modes")
        s.modes = modes(v);
      else if (key == "test_config")
        s.config_files = config_files(v);
      else if (key == "presets")
        s.presets = presets(v);
      else if (key == "options")
        s.options = options(v);
      else if (key == "probe")
        s.probe = probe(v);
    }
    if (!root["variants"]) s.variants = {Variant{}};
    if (!root["executors"]) s.executors.assign(std::begin(kExecutorPriority), std::end(kExecutorPriority));
    if (!root["targets"]) s.targets = {Target{}};
    if (!root["modes"]) s.modes = {Mode::kDiscover};
    return s;
  }

 private:
  // A path relative to the spec's directory, made absolute and normal.
  std::string resolve(const std::string& p) const {
    const fs::path path(p);
    return (path.is_absolute() ? path : dir_ / path).lexically_normal().string();
  }

  void check_name(const YAML::Node& at, const std::string& name, const std::string& what) const {
    const std::string why = detail::bad_name_reason(name);
    if (!why.empty()) r_.fail(at, what + " '" + name + "' " + why);
  }

  std::vector<YAML::Node> nonempty_seq(const YAML::Node& n, const std::string& what) const {
    std::vector<YAML::Node> items = r_.seq(n, what);
    if (items.empty()) r_.fail(n, what + " must not be empty");
    return items;
  }

  // The files a model path or glob names, sorted; an error when none.
  std::vector<std::string> expand(const YAML::Node& at, const std::string& pattern) const {
    std::string full = pattern;
    if (!fs::path(pattern).is_absolute()) {
      // Escape glob characters of the spec's directory: only the pattern globs.
      std::string prefix;
      for (const char c : dir_.string()) {
        if (c == '*' || c == '?' || c == '[' || c == '\\') prefix += '\\';
        prefix += c;
      }
      full = prefix + "/" + pattern;
    }
    glob_t g{};
    const int rc = ::glob(full.c_str(), 0, nullptr, &g);
    std::vector<std::string> out;
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(fs::path(g.gl_pathv[i]).lexically_normal().string());
    ::globfree(&g);
    if (rc == GLOB_NOMATCH || (rc == 0 && out.empty())) {
      if (detail::is_glob(pattern)) r_.fail(at, "model glob '" + pattern + "' matches no file");
      r_.fail(at, "model file '" + pattern + "' not found (looked for " + resolve(pattern) + ")");
    }
    if (rc != 0)
      r_.fail(at, "model glob '" + pattern + "' could not be expanded (glob error " + std::to_string(rc) + ")");
    // Refused here by its kind, never opened later: a FIFO would block the
    // coordinator's preparation (and its exit) until something wrote to it.
    for (const std::string& file : out)
      if (const std::string why = base::not_a_regular_file(file); !why.empty())
        r_.fail(at, "model file '" + file + "' " + why);
    return out;
  }

  std::vector<ModelEntry> models(const YAML::Node& n) const {
    std::vector<ModelEntry> out;
    std::map<std::string, std::string> name_at;  // name → location of its entry
    for (const YAML::Node& item : r_.seq(n, "models")) {
      std::string name, config;
      std::vector<SubgraphRef> subgraphs;
      if (item.IsMap()) {
        r_.expect_map(item, {"path", "name", "config", "subgraphs"}, "model entry");
        if (!item["path"]) r_.fail(item, "model entry: missing required key 'path'");
        if (item["name"]) {
          name = r_.str(item["name"], "model name");
          check_name(item["name"], name, "model name");
        }
        if (item["config"]) config = config_file(item["config"]);
        if (item["subgraphs"]) subgraphs = subgraph_list(item["subgraphs"]);
      }
      // Not assigned after construction: YAML::Node assignment writes through.
      const YAML::Node path_node = item.IsMap() ? item["path"] : item;
      const std::string pattern = r_.str(path_node, "model path");
      if (pattern.empty()) r_.fail(path_node, "model path must not be empty");
      for (const std::string& file : expand(path_node, pattern)) {
        ModelEntry m{name.empty() ? default_model_name(file) : name, file, config, subgraphs};
        if (name.empty()) check_name(path_node, m.name, "model name (the file stem of " + file + ")");
        bool same = false;
        for (const ModelEntry& e : out) same = same || (e.name == m.name && e.path == m.path);
        if (same) continue;
        const std::string here = detail::location(r_.file(), path_node.Mark());
        auto [it, fresh] = name_at.emplace(m.name, here);
        if (!fresh)
          r_.fail(path_node,
                  "duplicate model name '" + m.name + "' (first at " + it->second + "); give one of them a 'name'");
        out.push_back(std::move(m));
      }
    }
    return out;
  }

  // A run config (report or compiler JSON) relative to the spec; it must exist.
  std::string config_file(const YAML::Node& n) const {
    const std::string rel = r_.str(n, "model config");
    fs::path p(rel);
    if (p.is_relative()) p = fs::path(r_.file()).parent_path() / p;
    p = fs::absolute(p).lexically_normal();
    if (!fs::is_regular_file(p)) r_.fail(n, "model config '" + rel + "': no such file (" + p.string() + ")");
    return p.string();
  }

  // [{from: A, to: B}, ...]: layer ids, output names or indices.
  std::vector<SubgraphRef> subgraph_list(const YAML::Node& n) const {
    std::vector<SubgraphRef> out;
    for (const YAML::Node& item : r_.seq(n, "subgraphs")) {
      r_.expect_map(item, {"from", "to"}, "subgraph");
      if (!item["from"] || !item["to"]) r_.fail(item, "subgraph: needs both 'from' and 'to'");
      SubgraphRef ref{r_.str(item["from"], "subgraph from"), r_.str(item["to"], "subgraph to")};
      if (ref.from.empty() || ref.to.empty()) r_.fail(item, "subgraph: 'from' and 'to' must not be empty");
      out.push_back(ref);
    }
    return out;
  }

  Variant variant(const YAML::Node& item) const {
    Variant v;
    if (!item.IsMap()) {
      v.name = r_.choice(item, {"fp32", "bf16", "bf16-rne", "int8"}, "variant");
      v.bf16 = v.name == "bf16" || v.name == "bf16-rne";
      v.bf16_rne = v.name == "bf16-rne";
      v.int8 = v.name == "int8";
      return v;
    }
    r_.expect_map(item, {"name", "dtype", "rounding", "per_channel", "batch", "inputs", "seed"}, "variant");
    const std::string dtype = item["dtype"] ? r_.choice(item["dtype"], {"fp32", "bf16", "int8"}, "dtype") : "fp32";
    v.bf16 = dtype == "bf16";
    v.int8 = dtype == "int8";
    if (item["per_channel"]) {
      v.per_channel = r_.boolean(item["per_channel"], "per_channel");
      if (!v.int8) r_.fail(item["per_channel"], "per_channel needs dtype: int8 (it is a weight-quantization option)");
    }
    if (item["rounding"]) {
      v.bf16_rne = r_.choice(item["rounding"], {"truncate", "rne"}, "rounding") == "rne";
      if (!v.bf16) r_.fail(item["rounding"], "rounding needs dtype: bf16 (it is the bf16 conversion's rounding)");
    }
    v.name = v.per_channel ? "int8-pc" : v.bf16_rne ? "bf16-rne" : dtype;
    if (item["name"]) {
      v.name = r_.str(item["name"], "variant name");
      check_name(item["name"], v.name, "variant name");
    }
    if (item["batch"]) v.batch = static_cast<int>(r_.integer_in(item["batch"], "batch", 1, kMaxBatch));
    if (item["inputs"]) v.random_inputs = r_.choice(item["inputs"], {"activations", "random"}, "inputs") == "random";
    if (item["seed"])
      v.seed = static_cast<uint64_t>(r_.integer_in(item["seed"], "seed", 0, std::numeric_limits<int64_t>::max()));
    return v;
  }

  std::vector<Variant> variants(const YAML::Node& n) const {
    std::vector<Variant> out;
    std::map<std::string, std::string> name_at;
    for (const YAML::Node& item : nonempty_seq(n, "variants")) {
      Variant v = variant(item);
      auto [it, fresh] = name_at.emplace(v.name, detail::location(r_.file(), item.Mark()));
      if (!fresh) r_.fail(item, "duplicate variant name '" + v.name + "' (first at " + it->second + ")");
      out.push_back(std::move(v));
    }
    return out;
  }

  std::vector<Executor> executors(const YAML::Node& n) const {
    std::vector<Executor> out;
    for (const YAML::Node& item : nonempty_seq(n, "executors")) {
      const Executor e = *executor_from_name(r_.choice(item, {"nss", "css", "host"}, "executor"));
      for (Executor seen : out)
        if (seen == e) r_.fail(item, std::string("duplicate executor '") + executor_name(e) + "'");
      out.push_back(e);
    }
    return out;
  }

  std::vector<Target> targets(const YAML::Node& n) const {
    r_.expect_map(n, {}, "targets");
    if (n.size() == 0) r_.fail(n, "targets must not be empty");
    std::vector<Target> out;
    for (const auto& kv : n) {
      Target t;
      t.name = kv.first.Scalar();
      check_name(kv.first, t.name, "target name");
      const YAML::Node& v = kv.second;
      if (!v.IsNull()) {
        const std::string what = "target '" + t.name + "'";
        r_.expect_map(v, {"board", "profiles", "requires", "toolchain"}, what);
        if (v["requires"]) t.requires_tags = tag_list(v["requires"], what);
        if (v["board"] && v["profiles"])
          r_.fail(v["profiles"], what + " is either a board class (board) or a sim profile set (profiles), not both");
        if (v["toolchain"] && (v["board"] || v["profiles"]))
          r_.fail(v["toolchain"], what + ": a toolchain target takes neither board nor profiles");
        if (v["toolchain"]) {
          const std::string file = r_.str(v["toolchain"], "toolchain file");
          t.toolchain = resolve(file);
          if (!fs::is_regular_file(t.toolchain))
            r_.fail(v["toolchain"], "toolchain file '" + file + "' not found (looked for " + t.toolchain + ")");
        }
        if (v["board"]) {
          t.board = r_.str(v["board"], "board");
          if (t.board.empty()) r_.fail(v["board"], "board must not be empty");
        }
        if (v["profiles"]) {
          const YAML::Node& p = v["profiles"];
          r_.expect_map(p, {"nss", "css", "host"}, what + " profiles");
          for (const auto& pkv : p) {
            const std::string file = r_.str(pkv.second, "profile path");
            const std::string abs = resolve(file);
            if (!fs::is_regular_file(abs))
              r_.fail(pkv.second, "profile file '" + file + "' not found (looked for " + abs + ")");
            // Read now, so a bad value stops the spec at its file:line:col
            // (not every job of the target); the op names are the engine's
            // to judge, on the worker.
            targets::TargetProfile::load(abs, probe::AnyOpCatalog());
            t.profiles[*executor_from_name(pkv.first.Scalar())] = abs;
          }
        }
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  // requires: [sl2610, ...]: device tags, sorted and unique.
  std::vector<std::string> tag_list(const YAML::Node& n, const std::string& what) const {
    std::vector<std::string> tags;
    for (const YAML::Node& item : r_.seq(n, what + " requires")) {
      const std::string t = r_.str(item, "tag");
      if (t.empty() || t.find(',') != std::string::npos || t.find(' ') != std::string::npos)
        r_.fail(item, "tag '" + t + "' must be non-empty, without ',' or spaces");
      tags.push_back(t);
    }
    std::sort(tags.begin(), tags.end());
    tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
    return tags;
  }

  std::vector<Mode> modes(const YAML::Node& n) const {
    std::vector<Mode> out;
    for (const YAML::Node& item : nonempty_seq(n, "modes")) {
      const Mode m = *detail::mode_from_name(r_.choice(item, detail::mode_names(), "mode"));
      for (Mode seen : out)
        if (seen == m) r_.fail(item, std::string("duplicate mode '") + mode_name(m) + "'");
      out.push_back(m);
    }
    return out;
  }

  std::vector<std::string> config_files(const YAML::Node& n) const {
    std::vector<std::string> out;
    for (const YAML::Node& item : r_.seq(n, "test_config")) {
      const std::string file = r_.str(item, "test_config file");
      const std::string abs = resolve(file);
      if (!fs::is_regular_file(abs))
        r_.fail(item, "test_config file '" + file + "' not found (looked for " + abs + ")");
      for (const std::string& seen : out)
        if (seen == abs) r_.fail(item, "test_config file '" + file + "' is listed twice");
      out.push_back(abs);
    }
    return out;
  }

  std::map<std::string, Preset> presets(const YAML::Node& n) const {
    r_.expect_map(n, {}, "presets");
    std::map<std::string, Preset> out;
    for (const auto& kv : n) {
      const std::string name = kv.first.Scalar();
      const std::string what = "preset '" + name + "'";
      r_.expect_map(kv.second, {"k", "m"}, what);
      Preset p;
      for (const auto& [field, flag, into] : {std::tuple{"k", "-k", &p.k}, std::tuple{"m", "-m", &p.m}}) {
        if (!kv.second[field]) continue;
        *into = r_.str(kv.second[field], what + " " + field);
        try {
          Expr::parse(*into, flag);
        } catch (const PipelineError& e) {
          r_.fail(kv.second[field], what + ": " + e.what());
        }
      }
      out[name] = p;
    }
    return out;
  }


  // probe: {spec: FILE, min_explained: 0.99}; the probe spec is parsed now,
  // so its errors carry their own file:line:col before any job runs.
  ProbeSection probe(const YAML::Node& n) const {
    r_.expect_map(n, {"spec", "min_explained"}, "probe");
    if (!n["spec"]) r_.fail(n, "probe lacks 'spec' (a probe spec file, e.g. configs/probe/default.yaml)");
    ProbeSection p;
    p.spec = resolve(r_.str(n["spec"], "probe.spec"));
    if (!fs::exists(p.spec)) r_.fail(n["spec"], "probe spec '" + p.spec + "' does not exist");
    probe::load_probe_spec(p.spec);
    if (n["min_explained"]) p.min_explained = r_.number_in(n["min_explained"], "probe.min_explained", 0, 1);
    return p;
  }

  SpecOptions options(const YAML::Node& n) const {
    r_.expect_map(n, {"dedup", "skip_mode", "timing_runs", "job_timeout_ms", "missing_tags", "missing_tags_wait_s",
                      "collect_profile", "pcc_drift", "time_drift", "time_floor_ms", "compare_with"},
                  "options");
    SpecOptions o;
    if (n["compare_with"])
      o.compare_with_original = r_.choice(n["compare_with"], {"fp32_original", "converted"}, "compare_with") == "fp32_original";
    // A PCC lies in [-1, 1]: a drift is at most 2. A time drift is relative.
    if (n["pcc_drift"]) o.pcc_drift = r_.number_in(n["pcc_drift"], "pcc_drift", 0, 2);
    if (n["time_drift"]) o.time_drift = r_.number_in(n["time_drift"], "time_drift", 0, kInf);
    if (n["time_floor_ms"]) o.time_floor_ms = r_.number_in(n["time_floor_ms"], "time_floor_ms", 0, kInf);
    if (n["collect_profile"]) o.collect_profile = r_.boolean(n["collect_profile"], "collect_profile");
    if (n["missing_tags"]) o.missing_tags_fail = r_.choice(n["missing_tags"], {"wait", "fail"}, "missing_tags") == "fail";
    // The wait is kept in milliseconds in an int.
    if (n["missing_tags_wait_s"])
      o.missing_tags_wait_s = static_cast<uint32_t>(
          r_.integer_in(n["missing_tags_wait_s"], "missing_tags_wait_s", 1, std::numeric_limits<int>::max() / 1000));
    if (n["dedup"]) o.dedup = r_.boolean(n["dedup"], "dedup");
    if (n["skip_mode"]) o.skip_mode = r_.boolean(n["skip_mode"], "skip_mode");
    if (n["timing_runs"])
      o.timing_runs = static_cast<uint32_t>(r_.integer_in(n["timing_runs"], "timing_runs", 1, kMaxTimingRuns));
    if (n["job_timeout_ms"])
      o.job_timeout_ms = static_cast<uint32_t>(
          r_.integer_in(n["job_timeout_ms"], "job_timeout_ms", 1, std::numeric_limits<uint32_t>::max()));
    return o;
  }

  YamlReader r_;
  fs::path dir_;
};

}  // namespace

Spec parse_spec(const std::string& text, const std::string& path) {
  try {
    return SpecParser(path).parse(engine::yaml_parse(text, path));
  } catch (const engine::EngineError& e) {
    throw PipelineError(e.what());
  }
}

Spec load_spec(const std::string& path) { return parse_spec(detail::read_text(path), path); }

}  // namespace torq::pipeline::matrix
