// Per-test config files (matrix.h, load_configs): strict YAML into
// ConfigEntry values, in file order. A file's top level holds `test_config`
// and/or `placeholders`, each a map of test ID (or, in test_config, glob) →
// fields. Unknown keys, bad enum values, wrong types and out-of-range
// numbers are errors at their location; so is a test ID given twice, in one
// file or across files ("b.yaml:3:3: duplicate test ID 'x' (first at
// a.yaml:5:3)"). target_overrides values are resolved here: each is the
// entry's fields with the override's fields on top.
#include <limits>
#include <map>
#include <set>

#include "pipeline/matrix/matrix.h"
#include "pipeline/matrix/matrix_internal.h"
#include "pipeline/base/error.h"
#include "pipeline/base/yaml_strict.h"

namespace torq::pipeline::matrix {
namespace {

using engine::YamlReader;

const std::set<std::string> kEntryFields = {
    "status",        "bringup_status", "required_pcc",      "assert_pcc",       "assert_allclose", "allclose_rtol",
    "allclose_atol", "markers",        "supported_targets", "target_overrides", "reason"};
const std::set<std::string> kPlaceholderFields = {"reason", "markers"};

class ConfigReader {
 public:
  explicit ConfigReader(const std::string& file) : r_(file) {}

  // Appends the file's entries to `out`; `first_at` maps every test ID seen
  // so far (over all files) to its location.
  void read(const YAML::Node& root, std::vector<ConfigEntry>& out, std::map<std::string, std::string>& first_at) {
    if (root.IsNull()) return;  // an empty file
    r_.expect_map(root, {"test_config", "placeholders"}, "test config file");
    for (const auto& section : root) {
      const bool placeholder = section.first.Scalar() == "placeholders";
      const YAML::Node& entries = section.second;
      if (entries.IsNull()) continue;
      if (!entries.IsMap()) r_.fail(entries, section.first.Scalar() + " must be a mapping of test IDs");
      for (const auto& kv : entries) {
        if (!kv.first.IsScalar()) r_.fail(kv.first, "a test ID must be a string");
        const std::string key = kv.first.Scalar();
        if (key.empty()) r_.fail(kv.first, "a test ID must not be empty");
        const std::string here = detail::location(r_.file(), kv.first.Mark());
        auto [it, fresh] = first_at.emplace(key, here);
        if (!fresh) r_.fail(kv.first, "duplicate test ID '" + key + "' (first at " + it->second + ")");
        if (placeholder && detail::is_glob(key))
          r_.fail(kv.first, "placeholder '" + key + "' must be a test ID, not a glob");
        out.push_back(entry(kv.first, kv.second, placeholder));
      }
    }
  }

 private:
  ConfigEntry entry(const YAML::Node& key, const YAML::Node& value, bool placeholder) const {
    ConfigEntry e;
    e.key = key.Scalar();
    e.file = r_.file();
    e.line = key.Mark().line + 1;
    e.col = key.Mark().column + 1;
    e.placeholder = placeholder;
    e.base.key = e.key;
    e.base.source = detail::location(e.file, key.Mark());
    if (value.IsNull()) return e;
    const std::string what = (placeholder ? "placeholder '" : "test '") + e.key + "'";
    r_.expect_map(value, placeholder ? kPlaceholderFields : kEntryFields, what);
    apply(value, e.base);
    if (const YAML::Node overrides = value["target_overrides"]) {
      r_.expect_map(overrides, {}, what + " target_overrides");
      for (const auto& kv : overrides) {
        const std::string target = kv.first.Scalar();
        const std::string target_what = what + " target_overrides '" + target + "'";
        TestConfig c = e.base;
        if (kv.second.IsMap())
          for (const auto& field : kv.second)
            if (field.first.IsScalar() && field.first.Scalar() == "target_overrides")
              r_.fail(field.first, target_what + ": target_overrides cannot be nested");
        if (!kv.second.IsNull()) {
          std::set<std::string> fields = kEntryFields;
          fields.erase("target_overrides");
          r_.expect_map(kv.second, fields, target_what);
          apply(kv.second, c);
        }
        e.target_overrides[target] = c;
        e.override_sources[target] = detail::location(e.file, kv.first.Mark());
      }
    }
    return e;
  }

  double pcc(const YAML::Node& n) const { return r_.number_in(n, "required_pcc", -1, 1); }

  double tolerance(const YAML::Node& n, const std::string& what) const {
    return r_.number_in(n, what, 0, std::numeric_limits<double>::infinity());
  }

  std::vector<std::string> names(const YAML::Node& n, const std::string& what) const {
    std::vector<std::string> out;
    for (const YAML::Node& item : r_.seq(n, what)) {
      const std::string name = r_.str(item, what + " entry");
      const std::string why = detail::bad_name_reason(name);
      if (!why.empty()) r_.fail(item, what + " entry '" + name + "' " + why);
      for (const std::string& seen : out)
        if (seen == name) r_.fail(item, "duplicate " + what + " entry '" + name + "'");
      out.push_back(name);
    }
    return out;
  }

  // Sets the fields `n` gives (all but target_overrides) on `c`.
  void apply(const YAML::Node& n, TestConfig& c) const {
    for (const auto& kv : n) {
      const std::string field = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (field == "status")
        c.status = *detail::test_status_from_name(r_.choice(v, detail::test_status_names(), "status"));
      else if (field == "bringup_status")
        c.bringup = *detail::bringup_from_name(r_.choice(v, detail::bringup_names(), "bringup_status"));
      else if (field == "required_pcc")
        c.required_pcc = pcc(v);
      else if (field == "assert_pcc")
        c.assert_pcc = r_.boolean(v, "assert_pcc");
      else if (field == "assert_allclose")
        c.assert_allclose = r_.boolean(v, "assert_allclose");
      else if (field == "allclose_rtol")
        c.allclose_rtol = tolerance(v, "allclose_rtol");
      else if (field == "allclose_atol")
        c.allclose_atol = tolerance(v, "allclose_atol");
      else if (field == "markers")
        c.markers = names(v, "markers");
      else if (field == "supported_targets")
        c.supported_targets = names(v, "supported_targets");
      else if (field == "reason")
        c.reason = r_.str(v, "reason");
    }
  }

  YamlReader r_;
};

}  // namespace

ConfigSet load_configs(const std::vector<std::string>& files) {
  ConfigSet set;
  std::map<std::string, std::string> first_at;
  for (const std::string& file : files) {
    const std::string text = detail::read_text(file);
    try {
      ConfigReader(file).read(engine::yaml_parse(text, file), set.entries, first_at);
    } catch (const engine::EngineError& e) {
      throw PipelineError(e.what());
    }
  }
  return set;
}

}  // namespace torq::pipeline::matrix
