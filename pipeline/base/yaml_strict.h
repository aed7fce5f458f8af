// Strict YAML reading helpers: every error carries "file:line:col", unknown
// and duplicate keys are errors, with a "did you mean" hint.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace torq::base {

class YamlReader {
 public:
  explicit YamlReader(std::string filename) : file_(std::move(filename)) {}

  // Throws EngineError(kInvalidInput) "file:line:col: msg".
  [[noreturn]] void fail(const YAML::Node& at, const std::string& msg) const;
  [[noreturn]] void fail(const YAML::Mark& at, const std::string& msg) const;
  // Requires a map whose keys are all in `allowed` and unique.
  void expect_map(const YAML::Node& n, const std::set<std::string>& allowed,
                  const std::string& what) const;
  std::string str(const YAML::Node& n, const std::string& what) const;
  double number(const YAML::Node& n, const std::string& what) const;
  int64_t integer(const YAML::Node& n, const std::string& what) const;
  bool boolean(const YAML::Node& n, const std::string& what) const;
  // One of `choices`; otherwise an error listing them (with a hint).
  std::string choice(const YAML::Node& n, const std::vector<std::string>& choices,
                     const std::string& what) const;
  std::vector<YAML::Node> seq(const YAML::Node& n, const std::string& what) const;
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// The closest of `candidates` to `word` within a small edit distance, or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);
// Up to `n` of `candidates`, closest to `word` first (edit distance; a
// candidate containing `word` counts as close).
std::vector<std::string> closest(const std::string& word, const std::vector<std::string>& candidates, size_t n);

// Parses text into a node; a syntax error becomes "file:line:col: message".
YAML::Node yaml_parse(const std::string& text, const std::string& filename);

}  // namespace torq::base

// The engine and everything built on it name these torq::engine::...
namespace torq::engine {
using namespace ::torq::base;  // NOLINT(google-build-using-namespace)
}  // namespace torq::engine
