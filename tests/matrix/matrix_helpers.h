// Helpers of the matrix process tests: files, commands, summary.json and
// JUnit read back by an independent parser (Python's ElementTree).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
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

// JUnit read by Python's ElementTree: "<tests> <failures> <skipped>" of the
// suite, then per testcase "name|child tag|outcome property|bringup property".
inline std::string junit_via_python(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  write(dir + "/read_junit.py",
        "import sys, xml.etree.ElementTree as E\n"
        "r = E.parse(sys.argv[1]).getroot()\n"
        "s = r if r.tag == 'testsuite' else r.find('testsuite')\n"
        "print(s.get('tests'), s.get('failures'), s.get('skipped'))\n"
        "for c in s.findall('testcase'):\n"
        "    p = {x.get('name'): x.get('value') for x in c.iter('property')}\n"
        "    kids = [k.tag for k in c if k.tag != 'properties']\n"
        "    print(c.get('name'), ','.join(kids) or '-', p.get('outcome'), p.get('bringup_status'), sep='|')\n");
  auto [code, out] = run({"/usr/bin/python3", dir + "/read_junit.py", path}, dir + "/junit-read.log");
  EXPECT_EQ(code, 0) << out;
  return out;
}

}  // namespace torq::fleet_test
