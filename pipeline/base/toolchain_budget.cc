#include "pipeline/base/toolchain_budget.h"
#include "pipeline/base/file_bytes.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

namespace torq::base {

uint32_t job_budget_ms(double import_s, double compile_s, double run_s, uint32_t runs) {
  const double s = import_s + compile_s + run_s * std::max<uint32_t>(1, runs) + 1;
  return static_cast<uint32_t>(std::min(s * 1000, 4.0e9));
}

uint32_t toolchain_job_budget_ms(const std::string& path, uint32_t runs) {
  if (const std::string why = base::not_a_regular_file(path); !why.empty())
    throw std::runtime_error(path + ": cannot open toolchain file: " + why);
  std::ifstream f(path);
  if (!f) throw std::runtime_error(path + ": cannot open toolchain file");
  std::stringstream ss;
  ss << f.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(ss.str());
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(path + ": not YAML (" + e.what() + ")");
  }
  auto step = [&](const char* key, double fallback) {
    try {
      if (root.IsMap() && root[key] && root[key].IsMap() && root[key]["timeout_s"])
        return root[key]["timeout_s"].as<double>();
    } catch (const YAML::Exception&) {
    }
    return fallback;
  };
  return job_budget_ms(step("import", kImportTimeoutS), step("compile", kCompileTimeoutS), step("run", kRunTimeoutS),
                       runs);
}

}  // namespace torq::base
