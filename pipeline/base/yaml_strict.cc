#include "pipeline/base/yaml_strict.h"

#include <cstdint>

#include <algorithm>
#include <cmath>
#include <sstream>

#include <yaml-cpp/eventhandler.h>

#include "pipeline/base/error.h"

namespace torq::base {

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> closest(const std::string& word, const std::vector<std::string>& candidates, size_t n) {
  std::vector<std::pair<size_t, size_t>> ranked;  // (distance, index)
  for (size_t i = 0; i < candidates.size(); ++i) {
    const bool contains = candidates[i].find(word) != std::string::npos;
    ranked.emplace_back(contains ? 0 : edit_distance(word, candidates[i]), i);
  }
  std::stable_sort(ranked.begin(), ranked.end());
  std::vector<std::string> out;
  for (size_t k = 0; k < ranked.size() && k < n; ++k) out.push_back(candidates[ranked[k].second]);
  return out;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

void YamlReader::fail(const YAML::Mark& m, const std::string& msg) const {
  throw EngineError(ErrorKind::kInvalidInput, file_ + ":" + std::to_string(m.line + 1) + ":" +
                                                  std::to_string(m.column + 1) + ": " + msg);
}

void YamlReader::fail(const YAML::Node& at, const std::string& msg) const { fail(at.Mark(), msg); }

void YamlReader::expect_map(const YAML::Node& n, const std::set<std::string>& allowed,
                            const std::string& what) const {
  if (!n.IsMap()) fail(n, what + " must be a mapping");
  std::set<std::string> seen;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) fail(kv.first, what + ": keys must be scalars");
    const std::string key = kv.first.Scalar();
    if (!seen.insert(key).second) fail(kv.first, "duplicate key '" + key + "' in " + what);
    if (!allowed.empty() && !allowed.count(key)) {
      std::vector<std::string> names(allowed.begin(), allowed.end());
      std::string hint = did_you_mean(key, names);
      std::string list;
      for (const auto& a : names) list += (list.empty() ? "" : ", ") + a;
      fail(kv.first, "unknown key '" + key + "' in " + what +
                         (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                         "; allowed: " + list);
    }
  }
}

namespace {

// The offset of the first byte of `s` that is not well-formed UTF-8
// (overlong forms, surrogates and code points past U+10FFFF included), or
// npos.
size_t bad_utf8_at(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return i;
    if (i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return i;
    i += len;
  }
  return std::string::npos;
}

}  // namespace

std::string YamlReader::str(const YAML::Node& n, const std::string& what) const {
  if (!n.IsScalar()) fail(n, what + " must be a string");
  // Every string may reach JSON (summary.json, the report), which holds
  // UTF-8 only: refused here rather than by the run's last write.
  if (const size_t at = bad_utf8_at(n.Scalar()); at != std::string::npos)
    fail(n, what + " is not valid UTF-8 (byte " + std::to_string(at) + " of the string)");
  return n.Scalar();
}

double YamlReader::number(const YAML::Node& n, const std::string& what) const {
  if (!n.IsScalar()) fail(n, what + " must be a number");
  try {
    size_t pos = 0;
    const double v = std::stod(n.Scalar(), &pos);
    if (pos != n.Scalar().size()) throw std::invalid_argument("trailing");
    if (!std::isfinite(v)) fail(n, what + " must be a finite number, got '" + n.Scalar() + "'");
    return v;
  } catch (const std::logic_error&) {  // invalid_argument, out_of_range
    fail(n, what + " must be a number, got '" + n.Scalar() + "'");
  }
}

namespace {

std::string show(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

int64_t YamlReader::integer_in(const YAML::Node& n, const std::string& what, int64_t lo, int64_t hi) const {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!n.IsScalar()) fail(n, what + " must be an integer in " + range);
  int64_t v = 0;
  try {
    size_t pos = 0;
    v = std::stoll(n.Scalar(), &pos);
    if (pos != n.Scalar().size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    fail(n, what + " must be an integer in " + range + ", got '" + n.Scalar() + "'");
  }
  if (v < lo || v > hi) fail(n, what + " must be an integer in " + range + ", got " + n.Scalar());
  return v;
}

double YamlReader::number_in(const YAML::Node& n, const std::string& what, double lo, double hi, bool lo_open) const {
  const std::string range = std::isinf(hi) ? std::string(lo_open ? "> " : ">= ") + show(lo)
                                           : (lo_open ? "(" : "[") + show(lo) + ", " + show(hi) + "]";
  const std::string want = std::isinf(hi) ? " must be a finite number " + range : " must be a number in " + range;
  if (!n.IsScalar()) fail(n, what + want);
  double v = 0;
  try {
    size_t pos = 0;
    v = std::stod(n.Scalar(), &pos);
    if (pos != n.Scalar().size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    fail(n, what + want + ", got '" + n.Scalar() + "'");
  }
  if (!std::isfinite(v) || v < lo || (lo_open && v == lo) || v > hi) fail(n, what + want + ", got '" + n.Scalar() + "'");
  return v;
}

int64_t YamlReader::integer(const YAML::Node& n, const std::string& what) const {
  if (!n.IsScalar()) fail(n, what + " must be an integer");
  try {
    size_t pos = 0;
    long long v = std::stoll(n.Scalar(), &pos);
    if (pos != n.Scalar().size()) throw std::invalid_argument("trailing");
    return v;
  } catch (const std::exception&) {
    fail(n, what + " must be an integer, got '" + n.Scalar() + "'");
  }
}

bool YamlReader::boolean(const YAML::Node& n, const std::string& what) const {
  const std::string s = str(n, what);
  if (s == "true" || s == "True" || s == "yes") return true;
  if (s == "false" || s == "False" || s == "no") return false;
  fail(n, what + " must be true or false, got '" + s + "'");
}

std::string YamlReader::choice(const YAML::Node& n, const std::vector<std::string>& choices,
                               const std::string& what) const {
  const std::string s = str(n, what);
  if (std::find(choices.begin(), choices.end(), s) != choices.end()) return s;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  std::string hint = did_you_mean(s, choices);
  fail(n, "bad value '" + s + "' for " + what +
              (hint.empty() ? "" : " (did you mean '" + hint + "'?)") + "; expected one of: " + list);
}

std::vector<YAML::Node> YamlReader::seq(const YAML::Node& n, const std::string& what) const {
  if (!n.IsSequence()) fail(n, what + " must be a list");
  std::vector<YAML::Node> out;
  for (const auto& e : n) out.push_back(e);
  return out;
}

namespace {

// Where each document of a YAML stream starts (its '---' when it has one).
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& m) override { starts.push_back(m); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

YAML::Node yaml_parse(const std::string& text, const std::string& filename) {
  try {
    // YAML::Load reads the first document and drops the rest: a second one
    // (a pasted file, a stray '---') is refused where it starts.
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts docs;
    if (parser.HandleNextDocument(docs) && parser.HandleNextDocument(docs) && docs.starts.size() > 1)
      YamlReader(filename).fail(docs.starts[1], "a second YAML document starts here; this file holds one document "
                                                "(remove the '---' and what follows, or merge it into the first)");
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw EngineError(ErrorKind::kInvalidInput, filename + ":" + std::to_string(e.mark.line + 1) +
                                                    ":" + std::to_string(e.mark.column + 1) +
                                                    ": YAML syntax error: " + e.msg);
  }
}

}  // namespace torq::base
