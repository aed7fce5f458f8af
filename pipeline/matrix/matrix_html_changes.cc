// What changed since the previous run, as report.html shows it
// (matrix_internal.h): each test's since_previous text (run_diff.h
// since_text) read back into a kind, which highlights its row, and the
// summary of changes at the top of the report.
#include <string>
#include <vector>

#include "pipeline/matrix/matrix_internal.h"

namespace torq::pipeline::matrix::detail {

namespace {

struct Kind {
  Change change;
  const char* name;   // class change-<name>
  const char* badge;  // the row's badge
  const char* one;    // "1 new failure"
  const char* many;   // "2 new failures"
};

// In the order of the summary: what needs a look first.
constexpr Kind kKinds[] = {
    {Change::kNewFailure, "new-failure", "regression", "new failure", "new failures"},
    {Change::kFixed, "fixed", "fixed", "fixed test", "fixed tests"},
    {Change::kOutcome, "outcome", "outcome", "other outcome change", "other outcome changes"},
    {Change::kDrift, "drift", "changed", "test with drift or changed layers", "tests with drift or changed layers"},
    {Change::kNewTest, "new-test", "new", "new test", "new tests"},
};

const Kind* kind_of(Change c) {
  for (const Kind& k : kKinds)
    if (k.change == c) return &k;
  return nullptr;
}

}  // namespace

// since_text's first part names the outcome change ("new failure", "fixed",
// "a -> b", "new test", "still failing", "unchanged" when it gives way to
// the rest); drift and layer changes follow after "; ".
Change change_of(const std::string& since) {
  const size_t sep = since.find("; ");
  const std::string first = since.substr(0, sep);
  if (first == "new failure") return Change::kNewFailure;
  if (first == "fixed") return Change::kFixed;
  if (first == "new test") return Change::kNewTest;
  if (first.find(" -> ") != std::string::npos) return Change::kOutcome;
  const bool more = sep != std::string::npos;  // a drift or changed layers
  if (first == "still failing") return more ? Change::kDrift : Change::kNone;
  if (since.empty() || first == "unchanged" || first == "no previous run") return Change::kNone;
  return Change::kDrift;  // "pcc drift ...", "time drift ...", "2 layers changed"
}

const char* change_name(Change c) {
  const Kind* k = kind_of(c);
  return k ? k->name : "";
}

const char* change_badge(Change c) {
  const Kind* k = kind_of(c);
  return k ? k->badge : "";
}

std::string changes_html(const std::vector<TestResult>& results) {
  std::string items;
  for (const Kind& k : kKinds) {
    std::string links;
    size_t n = 0;
    for (const TestResult& r : results) {
      if (change_of(r.since_previous) != k.change) continue;
      const std::string& id = test_of(r).id;
      links += std::string(n++ ? ", " : "") + "<a href=\"#" + html_escape(url_fragment(element_id("test-", id))) +
               "\">" + html_escape(id) + "</a>";
    }
    if (n == 0) continue;
    items += std::string("<li class=\"change-") + k.name + "\" data-change=\"" + k.name + "\" data-count=\"" +
             std::to_string(n) + "\"><span class=\"change-badge\">" + k.badge + "</span> <b>" + std::to_string(n) +
             " " + (n == 1 ? k.one : k.many) + "</b>: " + links + "</li>\n";
  }
  if (items.empty()) return "";
  return "<section id=\"changes\">\n<h2>Changes since the previous run</h2>\n<ul>\n" + items + "</ul>\n</section>\n";
}

}  // namespace torq::pipeline::matrix::detail
