// Helpers of the matrix process tests: files, commands, summary.json and
// JUnit read back by an independent parser (Python's ElementTree).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/fleet/fleet_harness.h"

namespace torq::fleet_test {

inline void write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path);
  f << text;
}

inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(slurp(path)); }

// Runs a command to completion; returns {exit code, output}.
inline std::pair<int, std::string> run(const std::vector<std::string>& args, const std::string& log,
                                       int timeout_ms = 300000) {
  std::filesystem::remove(log);
  Proc p(args, log);
  auto code = p.wait(timeout_ms);
  return {code ? *code : -1, p.output()};
}

inline std::map<std::string, nlohmann::json> tests_by_id(const nlohmann::json& summary) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& t : summary["tests"]) out[t["id"].get<std::string>()] = t;
  return out;
}

// The output of a Python `script` (saved as <name>.py beside `path`) run
// on the file `path`; a failing script fails the test.
inline std::string python_on(const std::string& path, const std::string& name, const std::string& script) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  write(dir + "/" + name + ".py", script);
  auto [code, out] = run({"/usr/bin/python3", dir + "/" + name + ".py", path}, dir + "/" + name + ".log");
  EXPECT_EQ(code, 0) << out;
  return out;
}

// JUnit read by Python's ElementTree: "<tests> <failures> <skipped>" of the
// suite, then per testcase "name|child tag|outcome property|bringup property".
inline std::string junit_via_python(const std::string& path) {
  return python_on(
      path, "read_junit",
      "import sys, xml.etree.ElementTree as E\n"
      "r = E.parse(sys.argv[1]).getroot()\n"
      "s = r if r.tag == 'testsuite' else r.find('testsuite')\n"
      "print(s.get('tests'), s.get('failures'), s.get('skipped'))\n"
      "for c in s.findall('testcase'):\n"
      "    p = {x.get('name'): x.get('value') for x in c.iter('property')}\n"
      "    kids = [k.tag for k in c if k.tag != 'properties']\n"
      "    print(c.get('name'), ','.join(kids) or '-', p.get('outcome'), p.get('bringup_status'), sep='|')\n");
}

// Per testcase of a JUnit file, read by Python's ElementTree with its `tags`
// property read by ast.literal_eval (as tt-xla's dashboards read it):
// {"<name>": {"tags": {...}, "since_previous": ..., "error_message": ...}}.
inline nlohmann::json junit_tags_via_python(const std::string& path) {
  return nlohmann::json::parse(python_on(
      path, "read_tags",
      "import sys, json, ast, xml.etree.ElementTree as E\n"
      "out = {}\n"
      "for c in E.parse(sys.argv[1]).getroot().iter('testcase'):\n"
      "    p = {x.get('name'): x.get('value') for x in c.iter('property')}\n"
      "    out[c.get('name')] = {'tags': ast.literal_eval(p['tags']), 'since_previous': p.get('since_previous'),\n"
      "                         'error_message': p.get('error_message')}\n"
      "print(json.dumps(out))\n"));
}

// The rows of a CSV file as read by Python's csv module: [{"column": "value", ...}].
inline nlohmann::json csv_via_python(const std::string& path) {
  return nlohmann::json::parse(python_on(path, "read_csv",
                                         "import sys, json, csv\n"
                                         "print(json.dumps(list(csv.DictReader(open(sys.argv[1], newline='')))))\n"));
}

}  // namespace torq::fleet_test
