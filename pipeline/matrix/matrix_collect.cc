// Test collection (matrix.h, collect): the cartesian product model × variant
// × target × mode of a spec, each test with its resolved config, then the
// placeholders. Resolution: an exact ID entry beats any glob; two globs
// matching a test with no exact entry is an error naming both; the entry's
// target_overrides for the test's target replace its base fields. A test
// whose resolved status is EXCLUDE_MODEL is left out (its entry still counts
// as matching). Errors (PipelineError): a test_config key matching no
// collected test (with a did-you-mean of the nearest ID), a placeholder that
// is a collected test, target_overrides or supported_targets naming a target
// the spec lacks, and two tests with the same ID.
#include <cctype>
#include <fnmatch.h>

#include <map>
#include <set>

#include "pipeline/matrix/matrix.h"
#include "pipeline/matrix/matrix_internal.h"
#include "pipeline/base/yaml_strict.h"

namespace torq::pipeline::matrix {
namespace {

std::string source_of(const ConfigEntry& e) {
  return e.file + ":" + std::to_string(e.line) + ":" + std::to_string(e.col);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string hint(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string best = engine::did_you_mean(word, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

// Every target an entry names (target_overrides, supported_targets) exists.
void check_targets(const ConfigEntry& e, const std::vector<std::string>& targets) {
  auto known = [&targets](const std::string& t) {
    for (const std::string& k : targets)
      if (k == t) return true;
    return false;
  };
  auto check_supported = [&](const TestConfig& c, const std::string& at) {
    for (const std::string& t : c.supported_targets)
      if (!known(t))
        throw PipelineError(at + ": '" + e.key + "': supported_targets names unknown target '" + t + "'" +
                            hint(t, targets) + "; spec targets: " + join(targets));
  };
  check_supported(e.base, source_of(e));
  for (const auto& [target, at] : e.override_sources) {
    if (!known(target))
      throw PipelineError(at + ": '" + e.key + "': target_overrides names unknown target '" + target + "'" +
                          hint(target, targets) + "; spec targets: " + join(targets));
    check_supported(e.target_overrides.at(target), at);
  }
}

// A placeholder's mode, target and variant, read back from its ID's
// suffixes where they name the spec's (defaults otherwise).
void fill_parts(TestCase& t, const Spec& spec) {
  std::string rest = t.id;
  auto strip = [&rest](const std::string& part) {
    const std::string suffix = "-" + part;
    if (rest.size() <= suffix.size() || rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) != 0)
      return false;
    rest.resize(rest.size() - suffix.size());
    return true;
  };
  bool ok = false;
  for (Mode m : {Mode::kDiscover, Mode::kRun, Mode::kSubgraph})
    if (!ok && strip(mode_name(m))) {
      t.mode = m;
      ok = true;
    }
  if (!ok) return;
  ok = false;
  for (const Target& target : spec.targets)
    if (!ok && strip(target.name)) {
      t.target = target;
      ok = true;
    }
  if (!ok) return;
  for (const Variant& v : spec.variants)
    if (strip(v.name)) {
      t.variant = v;
      return;
    }
}

// A subgraph end as an ID part: characters other than letters, digits,
// '_' and '.' become '_' (IDs split on '-').
std::string id_part(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') ? c : '_';
  return out;
}

// The modes a model is tested in: each spec mode, mode subgraph once per
// range the model lists (none when it lists none).
std::vector<std::pair<Mode, std::optional<SubgraphRef>>> test_modes(const Spec& spec, const ModelEntry& model) {
  std::vector<std::pair<Mode, std::optional<SubgraphRef>>> out;
  for (Mode m : spec.modes) {
    if (m != Mode::kSubgraph) {
      out.emplace_back(m, std::nullopt);
      continue;
    }
    for (const SubgraphRef& r : model.subgraphs) out.emplace_back(m, r);
  }
  return out;
}

}  // namespace

std::vector<TestCase> collect(const Spec& spec, const ConfigSet& configs) {
  std::vector<std::string> target_names;
  for (const Target& t : spec.targets) target_names.push_back(t.name);

  std::map<std::string, const ConfigEntry*> exact;
  std::vector<const ConfigEntry*> globs;
  for (const ConfigEntry& e : configs.entries) {
    if (e.placeholder) continue;
    check_targets(e, target_names);
    if (detail::is_glob(e.key))
      globs.push_back(&e);
    else
      exact[e.key] = &e;
  }

  std::vector<TestCase> out;
  std::vector<std::string> ids;                // every generated ID, excluded ones too
  std::map<std::string, std::string> made_by;  // ID → its parts, for duplicate IDs
  std::set<const ConfigEntry*> matched;
  for (const ModelEntry& model : spec.models)
    for (const Variant& variant : spec.variants)
      for (const Target& target : spec.targets)
        for (const auto& [mode, subgraph] : test_modes(spec, model)) {
          TestCase t;
          t.id = model.name + "-" + variant.name + "-" + target.name + "-" + mode_name(mode) +
                 (subgraph ? "-" + id_part(subgraph->from) + "-" + id_part(subgraph->to) : "");
          t.model = &model;
          t.variant = variant;
          t.target = target;
          t.mode = mode;
          t.subgraph = subgraph;
          const std::string parts = "model '" + model.name + "', variant '" + variant.name + "', target '" +
                                    target.name + "', mode '" + mode_name(mode) + "'" +
                                    (subgraph ? " " + subgraph->from + ".." + subgraph->to : "");
          auto [it, fresh] = made_by.emplace(t.id, parts);
          if (!fresh)
            throw PipelineError(spec.path + ": test ID '" + t.id + "' is made twice: by " + it->second + " and by " +
                                parts + "; rename a model or variant");
          ids.push_back(t.id);

          const ConfigEntry* entry = nullptr;
          if (auto x = exact.find(t.id); x != exact.end()) entry = x->second;
          const ConfigEntry* by_glob = nullptr;
          for (const ConfigEntry* g : globs) {
            if (::fnmatch(g->key.c_str(), t.id.c_str(), 0) != 0) continue;
            matched.insert(g);
            if (by_glob != nullptr && entry == nullptr)
              throw PipelineError(source_of(*g) + ": glob '" + g->key + "' and glob '" + by_glob->key + "' (at " +
                                  source_of(*by_glob) + ") both match test '" + t.id +
                                  "'; add an exact entry or narrow a glob");
            if (by_glob == nullptr) by_glob = g;
          }
          if (entry == nullptr) entry = by_glob;
          if (entry != nullptr) {
            matched.insert(entry);
            auto o = entry->target_overrides.find(target.name);
            t.config = o != entry->target_overrides.end() ? o->second : entry->base;
          }
          if (t.config.status == TestStatus::kExcludeModel) continue;
          out.push_back(std::move(t));
        }

  for (const ConfigEntry& e : configs.entries)
    if (!e.placeholder && !matched.count(&e))
      throw PipelineError(source_of(e) + ": test_config key '" + e.key + "' matches no collected test" +
                          hint(e.key, ids));

  for (const ConfigEntry& e : configs.entries) {
    if (!e.placeholder) continue;
    if (made_by.count(e.key))
      throw PipelineError(source_of(e) + ": placeholder '" + e.key +
                          "' is a collected test; move its entry to test_config");
    TestCase t;
    t.id = e.key;
    t.placeholder = true;
    t.config = e.base;
    fill_parts(t, spec);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace torq::pipeline::matrix
