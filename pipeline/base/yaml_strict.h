// Strict YAML reading helpers: every error carries "file:line:col", unknown
// and duplicate keys are errors, with a "did you mean" hint. A file holds one
// YAML document: a second one ('---') is refused where it starts, never
// ignored. Numbers are finite (nan and inf are refused); a setting with a
// range reads through integer_in / number_in, whose error names the range.
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
  // A finite number ("nan", "inf" refused).
  double number(const YAML::Node& n, const std::string& what) const;
  int64_t integer(const YAML::Node& n, const std::string& what) const;
  // An integer in [lo, hi]; otherwise "what must be an integer in [lo, hi], got V".
  int64_t integer_in(const YAML::Node& n, const std::string& what, int64_t lo, int64_t hi) const;
  // A finite number in [lo, hi] (with `lo_open`, in (lo, hi]); hi infinite:
  // no upper bound. Otherwise "what must be a number in [lo, hi], got 'V'".
  double number_in(const YAML::Node& n, const std::string& what, double lo, double hi, bool lo_open = false) const;
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

// Parses text into a node; a syntax error becomes "file:line:col: message",
// and so does a second document in the text (at its '---').
YAML::Node yaml_parse(const std::string& text, const std::string& filename);

}  // namespace torq::base

// The engine and everything built on it name these torq::engine::...
namespace torq::engine {
using namespace ::torq::base;  // NOLINT(google-build-using-namespace)
}  // namespace torq::engine
