// Machine-readable reports of a matrix run: JUnit XML for CI and the JSON
// summary (matrix_report.h). Pure text generation.
#include <cmath>
#include <cstdio>
#include <string>

#include "pipeline/matrix/matrix_internal.h"
#include "pipeline/matrix/matrix_report.h"

namespace torq::pipeline::matrix {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      case '\t': out += "&#9;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += "\xEF\xBF\xBD";
        else
          out += c;
    }
  }
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A metric for a property: "-" when unknown (negative or not finite).
std::string metric(double v) {
  if (!std::isfinite(v) || v < 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string property(const std::string& name, const std::string& value) {
  return "      <property name=\"" + xml_escape(name) + "\" value=\"" + xml_escape(value) + "\"/>\n";
}

// The text of a failure: the message, then the run's own error line and
// failed step when they add something.
std::string failure_text(const TestResult& r) {
  std::string text = r.message;
  if (!r.run.message.empty() && r.run.message != r.message) text += (text.empty() ? "" : "\n") + r.run.message;
  if (!r.run.failed_step.empty()) text += (text.empty() ? "" : "\n") + std::string("failed step: ") + r.run.failed_step;
  return text;
}

std::string testcase_xml(const TestResult& r, const RunInfo& info) {
  const TestCase& t = detail::test_of(r);
  std::string x = "  <testcase classname=\"" + xml_escape(detail::model_name(t)) + "\" name=\"" + xml_escape(t.id) +
                  "\" time=\"" + fixed(r.run.wall_s, 3) + "\">\n";
  x += "    <properties>\n";
  x += property("outcome", outcome_name(r.outcome));
  x += property("bringup_status", bringup_name(r.bringup));
  x += property("status", test_status_name(t.config.status));
  x += property("pcc", metric(r.run.pcc));
  if (r.run.e2e) {  // a converted variant: both comparisons, and which one was judged
    x += property("pcc_against", r.run.judged_against);
    x += property("e2e_pcc", metric(r.run.e2e_pcc));
    x += property("e2e_max_abs", metric(r.run.e2e_max_abs));
    x += property("e2e_max_rel", metric(r.run.e2e_max_rel));
    if (!r.run.e2e_error.empty()) x += property("e2e_error", r.run.e2e_error);
    x += property("converted_pcc", metric(r.run.converted_pcc));
  }
  x += property("required_pcc", metric(t.config.required_pcc));
  x += property("layers", std::to_string(r.run.layers));
  x += property("critical_failures", std::to_string(r.run.critical_failures));
  x += property("executor_distribution", detail::distribution_text(r.run.executor_distribution, ","));
  x += property("wall_time", fixed(r.run.wall_s, 3));
  x += property("reason", r.message.empty() ? t.config.reason : r.message);
  if (!r.since_previous.empty()) x += property("since_previous", r.since_previous);
  x += property("tags", junit_tags(r));
  const bool failing =
      r.outcome == Outcome::kFailed || r.outcome == Outcome::kXfailed || r.outcome == Outcome::kSkipped;
  if (failing && !r.message.empty()) x += property("error_message", r.message);
  x += "    </properties>\n";
  const std::string message = xml_escape(r.message);
  switch (r.outcome) {
    case Outcome::kFailed:
      x += "    <failure message=\"" + message + "\" type=\"" +
           xml_escape(r.run.failed_step.empty() ? "failed" : r.run.failed_step) + "\">" + xml_escape(failure_text(r)) +
           "</failure>\n";
      break;
    case Outcome::kXpassed:
      if (info.strict_xfail)
        x += "    <failure message=\"" + message + "\" type=\"xpass\">" + xml_escape(failure_text(r)) + "</failure>\n";
      break;
    case Outcome::kSkipped:
      x += "    <skipped message=\"" + message + "\"/>\n";
      break;
    case Outcome::kXfailed:
      x += "    <skipped message=\"" + xml_escape("xfail: " + r.message) + "\" type=\"xfail\"/>\n";
      break;
    case Outcome::kPassed:
      break;
  }
  x += "  </testcase>\n";
  return x;
}

nlohmann::json number_or_null(double v) {
  if (!std::isfinite(v) || v < 0) return nullptr;
  return v;
}

}  // namespace

std::string board_line(const RunInfo::Board& b) {
  return b.worker + " " + b.health + " (target " + b.target + (b.tags.empty() ? "" : ", tags " + b.tags) + ")" +
         (b.reason.empty() ? "" : ": " + b.reason) + (b.since.empty() ? "" : " since " + b.since);
}

std::string junit_xml(const std::vector<TestResult>& results, const RunInfo& info) {
  size_t failures = 0, skipped = 0;
  for (const TestResult& r : results) {
    if (r.outcome == Outcome::kFailed || (r.outcome == Outcome::kXpassed && info.strict_xfail)) ++failures;
    if (r.outcome == Outcome::kSkipped || r.outcome == Outcome::kXfailed) ++skipped;
  }
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += "<testsuite name=\"torq-matrix\" tests=\"" + std::to_string(results.size()) + "\" failures=\"" +
       std::to_string(failures) + "\" errors=\"0\" skipped=\"" + std::to_string(skipped) + "\" time=\"" +
       fixed(info.wall_s, 3) + "\"";
  if (!info.started_utc.empty()) x += " timestamp=\"" + xml_escape(info.started_utc) + "\"";
  x += ">\n  <properties>\n";
  auto run_property = [&x](const std::string& name, const std::string& value) {
    x += "    <property name=\"" + xml_escape(name) + "\" value=\"" + xml_escape(value) + "\"/>\n";
  };
  run_property("spec", info.spec);
  run_property("run_id", info.run_id);
  run_property("k", info.k);
  run_property("m", info.m);
  run_property("preset", info.preset);
  run_property("strict_xfail", info.strict_xfail ? "true" : "false");
  run_property("jobs", std::to_string(info.jobs));
  run_property("fleet_jobs", std::to_string(info.fleet_jobs));
  run_property("cache_hits", std::to_string(info.cache_hits));
  run_property("jobs_per_s", fixed(info.jobs_per_s, 2));
  run_property("deselected", std::to_string(info.deselected));
  for (const auto& b : info.boards) run_property("board." + b.worker, board_line(b));
  x += "  </properties>\n";
  for (const TestResult& r : results) x += testcase_xml(r, info);
  x += "</testsuite>\n";
  return x;
}

nlohmann::json summary_json(const std::vector<TestResult>& results, const RunInfo& info) {
  nlohmann::json counts;
  for (const Outcome o : {Outcome::kPassed, Outcome::kFailed, Outcome::kSkipped, Outcome::kXfailed, Outcome::kXpassed})
    counts[outcome_name(o)] = 0;
  int exit_code = 0;
  nlohmann::json tests = nlohmann::json::array();
  for (const TestResult& r : results) {
    const TestCase& t = detail::test_of(r);
    counts[outcome_name(r.outcome)] = counts[outcome_name(r.outcome)].get<int>() + 1;
    if (unexpected(r)) exit_code = 1;
    nlohmann::json dist = nlohmann::json::object();
    for (const auto& [name, n] : r.run.executor_distribution) dist[name] = n;
    tests.push_back({{"id", t.id},
                     {"model", detail::model_name(t)},
                     {"variant", t.variant.name},
                     {"target", t.target.name},
                     {"mode", mode_name(t.mode)},
                     {"outcome", outcome_name(r.outcome)},
                     {"bringup_status", bringup_name(r.bringup)},
                     {"status", test_status_name(t.config.status)},
                     {"message", r.message},
                     {"ran", r.run.ran},
                     {"failed_step", r.run.failed_step},
                     {"pcc", number_or_null(r.run.pcc)},
                     {"max_abs", number_or_null(r.run.max_abs)},
                     {"max_rel", number_or_null(r.run.max_rel)},
                     {"full_model", r.run.full_model},
                     {"pcc_against", r.run.judged_against.empty() ? nlohmann::json(nullptr)
                                                                  : nlohmann::json(r.run.judged_against)},
                     {"end_to_end", !r.run.e2e ? nlohmann::json(nullptr)
                                               : nlohmann::json{{"against", kAgainstOriginal},
                                                                {"pcc", number_or_null(r.run.e2e_pcc)},
                                                                {"max_abs", number_or_null(r.run.e2e_max_abs)},
                                                                {"max_rel", number_or_null(r.run.e2e_max_rel)},
                                                                {"error", r.run.e2e_error}}},
                     {"converted", !r.run.e2e ? nlohmann::json(nullptr)
                                              : nlohmann::json{{"against", kAgainstConverted},
                                                               {"pcc", number_or_null(r.run.converted_pcc)},
                                                               {"max_abs", number_or_null(r.run.converted_max_abs)},
                                                               {"max_rel", number_or_null(r.run.converted_max_rel)}}},
                     {"first_failing_range", r.run.failing_range},
                     {"required_pcc", t.config.required_pcc},
                     {"layers", r.run.layers},
                     {"critical_failures", r.run.critical_failures},
                     {"executor_distribution", dist},
                     {"wall_s", r.run.wall_s},
                     {"device_ms", number_or_null(r.run.device_ms)},
                     {"since_previous", r.since_previous},
                     {"report", r.run.report_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.run.report_file)}});
  }
  nlohmann::json run = {{"spec", info.spec},
                        {"run_id", info.run_id},
                        {"started_utc", info.started_utc},
                        {"wall_s", info.wall_s},
                        {"jobs", info.jobs},
                        {"fleet_jobs", info.fleet_jobs},
                        {"cache_hits", info.cache_hits},
                        {"jobs_per_s", info.jobs_per_s},
                        {"k", info.k},
                        {"m", info.m},
                        {"preset", info.preset},
                        {"strict_xfail", info.strict_xfail},
                        {"selected", results.size()},
                        {"deselected", info.deselected}};
  nlohmann::json boards = nlohmann::json::array();
  for (const auto& b : info.boards)
    boards.push_back({{"worker", b.worker}, {"target", b.target}, {"tags", b.tags}, {"health", b.health},
                      {"reason", b.reason}, {"since", b.since}});
  run["boards"] = boards;
  return {{"run", run}, {"counts", counts}, {"exit_code", exit_code}, {"tests", tests}};
}

}  // namespace torq::pipeline::matrix
